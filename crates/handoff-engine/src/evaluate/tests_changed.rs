//! The test and fixture files a task changed, read from the diff against the pre-run snapshot:
//! test files by convention (and Rust files, whose tests live beside the code) with what their
//! diff does to the tests, fixtures by their folder or by a test file naming them. Bounded: at
//! most [`MAX_FILES`] changed files are looked at, and the test files searched for names are
//! capped in count and size.

use std::{
    path::{Path, PathBuf},
    sync::atomic::{AtomicUsize, Ordering},
};

use handoff_completion::{
    checks::TestChange,
    test_files::{is_code, is_fixture, is_fixture_by_place, is_test_file},
    weakened,
};
use handoff_task::Task;

use crate::{snapshot::is_dependency_dir, state::EngineState};

/// Changed files looked at, at most.
const MAX_FILES: usize = 200;
/// Test files read for the names of the files they open, at most.
const MAX_TEST_FILES: usize = 300;
/// Bytes read of one test file.
const MAX_TEST_BYTES: u64 = 256 * 1024;
/// Directory entries looked at while searching for test files, at most.
const MAX_ENTRIES: usize = 50_000;

/// Whether a changed file needs its own diff: a test file, a Rust file, a fixture by place, or a
/// data file a test might read.
fn candidate(path: &str) -> bool {
    is_test_file(path) || path.ends_with(".rs") || is_fixture_by_place(path) || !is_code(path)
}

/// The test and fixture files changed since the run started, with their diffs.
pub(super) async fn test_changes(inner: &EngineState, task: &Task) -> Vec<TestChange> {
    let workdir = Path::new(&task.workdir);
    let changed = inner
        .snapshots
        .changed_since_baseline(&task.id, workdir, {
            // Atomic only to be `Sync`: the predicate is called from one task.
            let seen = AtomicUsize::new(0);
            move |path| candidate(path) && seen.fetch_add(1, Ordering::Relaxed) < MAX_FILES
        })
        .await;
    let changed = match changed {
        Ok(changed) => changed.unwrap_or_default(),
        Err(e) => {
            tracing::warn!(task = %task.id, error = %e, "could not compare the test files");
            return Vec::new();
        }
    };
    let needs_texts = changed
        .iter()
        .any(|(path, _)| !is_test_file(path) && !is_fixture_by_place(path) && !is_code(path));
    let texts = if needs_texts {
        let root = workdir.to_path_buf();
        tokio::task::spawn_blocking(move || test_texts(&root))
            .await
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    changed
        .into_iter()
        .filter_map(|(path, diff)| {
            let findings = weakened::find(&path, &diff);
            let fixture = !is_test_file(&path) && is_fixture(&path, &texts);
            (fixture || !findings.is_empty()).then_some(TestChange {
                path,
                findings,
                fixture,
                diff,
            })
        })
        .collect()
}

/// The text of the test files under `root` (bounded; blocking).
fn test_texts(root: &Path) -> Vec<String> {
    let mut texts = Vec::new();
    let mut pending: Vec<PathBuf> = vec![root.to_path_buf()];
    let mut visited = 0usize;
    while let Some(dir) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            visited += 1;
            if texts.len() >= MAX_TEST_FILES || visited > MAX_ENTRIES {
                return texts;
            }
            let path = entry.path();
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let name = entry.file_name();
            if kind.is_dir() && !is_dependency_dir(name.as_encoded_bytes()) {
                pending.push(path);
            } else if kind.is_file() {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                if is_test_file(&relative.to_string_lossy()) {
                    texts.extend(read_prefix(&path));
                }
            }
        }
    }
    texts
}

fn read_prefix(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_TEST_BYTES)
        .read_to_end(&mut bytes)
        .ok()?;
    Some(String::from_utf8_lossy(&bytes).into_owned())
}

//! Files a task wrote under paths the directory's `.gitignore` hides (`build/report.txt` in a
//! repository ignoring `build/`): they are what the task produced too. Git lists the ignored
//! entries (whole ignored folders as one entry); each folder is walked here, skipping the
//! dependency and cache folders that would flood the evaluator (`node_modules`, `target`,
//! `__pycache__`, virtualenvs …). A file counts when it was written or changed after the
//! baseline was complete (its mtime or ctime, by the kernel's clock like the baseline's own mark), up to [`MAX_FILES`] files per snapshot; past that,
//! one line says how many more were not compared. Ignored files that were there before the run
//! are not in the baseline, so one the task changed shows as a new file.

use std::{
    ffi::OsStr,
    os::unix::{ffi::OsStrExt, fs::MetadataExt},
    path::Path,
};

/// Changed files under ignored paths taken into one snapshot, at most.
pub(super) const MAX_FILES: usize = 1000;
/// Directory entries looked at under ignored paths, at most.
const MAX_ENTRIES: usize = 50_000;
/// Folders of dependencies, build caches and tool state: never what a task was asked to make.
const SKIPPED: &[&str] = &[
    ".git",
    "node_modules",
    "bower_components",
    "target",
    "__pycache__",
    ".venv",
    "venv",
    ".tox",
    ".nox",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".gradle",
    ".cache",
    ".next",
    ".nuxt",
    ".parcel-cache",
    ".turbo",
    ".eggs",
];

/// The changed files under ignored paths, and how many more were past the limits.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Ignored {
    pub files: Vec<Vec<u8>>,
    pub more: usize,
}

/// Whether a folder named `name` holds dependencies, build caches or tool state.
pub(crate) fn skipped(name: &[u8]) -> bool {
    SKIPPED.iter().any(|s| s.as_bytes() == name) || name.ends_with(b".egg-info")
}

/// Among git's ignored `entries` (paths under `workdir`; a folder ends in `/`), the files
/// changed after `since_ns` (unix ns). Blocking: it walks the folders.
pub(super) fn changed(workdir: &Path, entries: &[Vec<u8>], since_ns: i128) -> Ignored {
    let mut found = Ignored::default();
    let mut pending: Vec<Vec<u8>> = entries
        .iter()
        .filter(|e| {
            let trimmed = e.strip_suffix(b"/").unwrap_or(e);
            let name = trimmed.rsplit(|b| *b == b'/').next().unwrap_or(trimmed);
            !skipped(name)
        })
        .map(|e| e.strip_suffix(b"/").unwrap_or(e).to_vec())
        .collect();
    pending.sort_unstable();
    pending.reverse();
    let mut visited = 0usize;
    while let Some(path) = pending.pop() {
        visited += 1;
        if visited > MAX_ENTRIES {
            found.more += 1 + pending.len();
            break;
        }
        let full = workdir.join(OsStr::from_bytes(&path));
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.is_dir() {
            let Ok(children) = std::fs::read_dir(&full) else {
                continue;
            };
            let mut names: Vec<Vec<u8>> = children
                .flatten()
                .map(|c| c.file_name().as_bytes().to_vec())
                .filter(|n| !skipped(n))
                .collect();
            names.sort_unstable();
            pending.extend(names.into_iter().rev().map(|n| join(&path, &n)));
        } else if meta.is_file() && changed_at(&meta) > since_ns {
            if found.files.len() < MAX_FILES {
                found.files.push(path);
            } else {
                found.more += 1;
            }
        }
    }
    found
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = dir.to_vec();
    path.push(b'/');
    path.extend_from_slice(name);
    path
}

/// The later of a file's modification and status-change times (a copy that keeps the old
/// mtime still changes the ctime).
pub(super) fn changed_at(meta: &std::fs::Metadata) -> i128 {
    let mtime = i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec());
    let ctime = i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec());
    mtime.max(ctime)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_under_ignored_folders_count_dependencies_and_files_from_before_do_not() {
        let work = tempfile::tempdir().unwrap();
        let root = work.path();
        for dir in ["build/sub", "node_modules/x", "pkg.egg-info"] {
            std::fs::create_dir_all(root.join(dir)).unwrap();
        }
        std::fs::write(root.join("build/sub/report.txt"), "new").unwrap();
        std::fs::write(root.join("node_modules/x/index.js"), "dep").unwrap();
        std::fs::write(root.join("pkg.egg-info/PKG-INFO"), "meta").unwrap();
        std::fs::write(root.join("debug.log"), "log").unwrap();
        let entries = vec![
            b"build/".to_vec(),
            b"node_modules/".to_vec(),
            b"pkg.egg-info/".to_vec(),
            b"debug.log".to_vec(),
        ];
        let found = changed(root, &entries, -1);
        assert_eq!(
            found.files,
            [b"build/sub/report.txt".to_vec(), b"debug.log".to_vec()]
        );
        // Files from before the baseline do not count.
        let later = changed_at(&std::fs::metadata(root.join("debug.log")).unwrap());
        assert_eq!(changed(root, &entries, later), Ignored::default());
        assert_eq!(found.more, 0);
    }

    #[test]
    fn past_the_file_limit_the_rest_is_counted_not_listed() {
        let work = tempfile::tempdir().unwrap();
        let out = work.path().join("out");
        std::fs::create_dir_all(&out).unwrap();
        for i in 0..MAX_FILES + 5 {
            std::fs::write(out.join(format!("{i:05}.txt")), "x").unwrap();
        }
        let found = changed(work.path(), &[b"out/".to_vec()], -1);
        assert_eq!(found.files.len(), MAX_FILES);
        assert_eq!(found.more, 5);
        assert_eq!(found.files[0], b"out/00000.txt");
    }
}

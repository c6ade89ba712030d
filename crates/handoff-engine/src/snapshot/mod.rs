//! What a task changed, for any executor and any directory: before the run, the task directory
//! is committed into a private git directory under the data dir (the task directory itself is
//! never touched, even when it is a repository of its own); after the run, the difference to
//! that baseline is the task's diff. The baseline lives until the task settles: every cycle of
//! the evaluator, and the final artifact, diff against the state before the first run.
//!
//! Bounded, so a task that writes gigabytes cannot make Handoff copy them or wait on them: a
//! file over the size limit, or past the snapshot's byte budget, is not copied — it is
//! described (size, modification time) and the diff names it on a `# large file …` line when
//! it changed; every snapshot and diff ends within the time limit (a diff also with the task's
//! deadline, and its caller drops it on a cancel), and git is killed when it is dropped. The
//! description of what the baseline left out is kept beside it, on disk, until the task settles.

mod git;
mod ignored;
mod select;
#[cfg(test)]
mod tests;

use std::{
    collections::HashSet,
    future::Future,
    path::{Path, PathBuf},
    time::Duration,
};

use handoff_task::TaskId;
use tokio::time::Instant;

use self::{
    git::{git, git_bytes, names},
    select::Selection,
};
pub(crate) use self::{ignored::skipped as is_dependency_dir, select::SizeLimits};

/// The record of the files the baseline left out, inside the task's git directory.
const LEFT_OUT: &str = "handoff-left-out";
/// Written when the baseline is complete: ignored files changed after its mtime are the task's.
const TAKEN_AT: &str = "handoff-taken-at";

/// Baselines of running tasks, one git directory each.
#[derive(Debug, Clone)]
pub(crate) struct Snapshots {
    root: PathBuf,
    sizes: SizeLimits,
    timeout: Duration,
}

impl Snapshots {
    /// Baselines under `root`, each copying within `sizes` and taking at most `timeout`.
    pub fn new(root: PathBuf, sizes: SizeLimits, timeout: Duration) -> Self {
        Self {
            root,
            sizes,
            timeout,
        }
    }

    fn git_dir(&self, task: &TaskId) -> PathBuf {
        self.root.join(format!("{}.git", task.as_str()))
    }

    /// Records the directory as it is before the run. On failure (or past the time limit) no
    /// baseline is kept, so no diff is made against half of one.
    pub async fn baseline(&self, task: &TaskId, workdir: &Path) -> Result<(), String> {
        let git_dir = self.git_dir(task);
        let _ = tokio::fs::remove_dir_all(&git_dir).await;
        tokio::fs::create_dir_all(&self.root)
            .await
            .map_err(|e| format!("{}: {e}", self.root.display()))?;
        let taken = self
            .bounded(&git_dir, None, self.take_baseline(&git_dir, workdir))
            .await;
        if taken.is_err() {
            let _ = tokio::fs::remove_dir_all(&git_dir).await;
        }
        taken
    }

    async fn take_baseline(&self, git_dir: &Path, workdir: &Path) -> Result<(), String> {
        git(git_dir, workdir, &["init".as_ref(), "-q".as_ref()]).await?;
        let candidates = names(
            &git_bytes(
                git_dir,
                workdir,
                &[
                    "ls-files".as_ref(),
                    "-z".as_ref(),
                    "--others".as_ref(),
                    "--exclude-standard".as_ref(),
                ],
                None,
            )
            .await?,
        );
        let selection = self.choose(workdir, candidates, HashSet::new()).await?;
        let record = git_dir.join(LEFT_OUT);
        tokio::fs::write(&record, select::encode(&selection.skipped))
            .await
            .map_err(|e| format!("{}: {e}", record.display()))?;
        update_index(git_dir, workdir, selection.update).await?;
        git(
            git_dir,
            workdir,
            &[
                "commit".as_ref(),
                "-q".as_ref(),
                "--allow-empty".as_ref(),
                "--no-verify".as_ref(),
                "-m".as_ref(),
                "baseline".as_ref(),
            ],
        )
        .await?;
        // Its own mtime is the mark: the kernel stamps the task's files by the same clock.
        let stamp = git_dir.join(TAKEN_AT);
        tokio::fs::write(&stamp, b"")
            .await
            .map_err(|e| format!("{}: {e}", stamp.display()))
    }

    /// The unified diff from the baseline to the directory now (`None` when nothing changed),
    /// given up at `until` or the time limit, whichever comes first. The baseline is kept:
    /// later cycles are diffed against the same pre-run state.
    pub async fn diff(
        &self,
        task: &TaskId,
        workdir: &Path,
        until: Option<Instant>,
    ) -> Result<Option<String>, String> {
        let git_dir = self.git_dir(task);
        if !git_dir.exists() {
            return Ok(None);
        }
        self.bounded(&git_dir, until, async {
            let left_out = self.stage(&git_dir, workdir).await?;
            let mut diff = git(
                &git_dir,
                workdir,
                &["diff".as_ref(), "--cached".as_ref(), "HEAD".as_ref()],
            )
            .await?;
            for (_, line) in left_out {
                if !diff.is_empty() && !diff.ends_with('\n') {
                    diff.push('\n');
                }
                diff.push_str(&line);
                diff.push('\n');
            }
            Ok(Some(diff).filter(|d| !d.trim().is_empty()))
        })
        .await
    }

    /// Keeps `bytes` beside the baseline under `name` until it is discarded (nothing is kept
    /// when there is no baseline).
    pub async fn keep(&self, task: &TaskId, name: &str, bytes: &[u8]) -> Result<(), String> {
        let git_dir = self.git_dir(task);
        if !git_dir.exists() {
            return Ok(());
        }
        let path = git_dir.join(format!("handoff-kept-{name}"));
        tokio::fs::write(&path, bytes)
            .await
            .map_err(|e| format!("{}: {e}", path.display()))
    }

    /// What [`Snapshots::keep`] kept under `name`, if anything.
    pub async fn kept(&self, task: &TaskId, name: &str) -> Option<Vec<u8>> {
        let path = self.git_dir(task).join(format!("handoff-kept-{name}"));
        tokio::fs::read(path).await.ok()
    }

    /// Forgets a baseline (the task settled, or its run never started).
    pub async fn discard(&self, task: &TaskId) {
        let _ = tokio::fs::remove_dir_all(self.git_dir(task)).await;
    }

    /// The files changed since the baseline that `wanted` selects, each with its own diff
    /// (added, changed, deleted, renamed away; a file not copied has its `# large file` line);
    /// `None` when there is no baseline to compare.
    pub async fn changed_since_baseline(
        &self,
        task: &TaskId,
        workdir: &Path,
        wanted: impl Fn(&str) -> bool,
    ) -> Result<Option<Vec<(String, String)>>, String> {
        let git_dir = self.git_dir(task);
        if !git_dir.exists() {
            return Ok(None);
        }
        self.bounded(&git_dir, None, async {
            let left_out = self.stage(&git_dir, workdir).await?;
            let names = git(
                &git_dir,
                workdir,
                &[
                    "diff".as_ref(),
                    "--cached".as_ref(),
                    "--no-renames".as_ref(),
                    "--name-only".as_ref(),
                    "-z".as_ref(),
                    "HEAD".as_ref(),
                ],
            )
            .await?;
            let mut changed = Vec::new();
            for name in names.split('\0').filter(|n| !n.is_empty() && wanted(n)) {
                let pathspec = format!(":(literal){name}");
                let diff = git(
                    &git_dir,
                    workdir,
                    &[
                        "diff".as_ref(),
                        "--cached".as_ref(),
                        "--no-renames".as_ref(),
                        "HEAD".as_ref(),
                        "--".as_ref(),
                        pathspec.as_ref(),
                    ],
                )
                .await?;
                changed.push((name.to_owned(), diff));
            }
            for (path, line) in left_out {
                let name = String::from_utf8_lossy(&path).into_owned();
                if wanted(&name) {
                    changed.push((name, line));
                }
            }
            Ok(Some(changed))
        })
        .await
    }

    /// Brings the private index up to the directory now, copying within the size limits;
    /// returns the `# large file` lines of what was not copied (now or in the baseline) and
    /// changed.
    async fn stage(
        &self,
        git_dir: &Path,
        workdir: &Path,
    ) -> Result<Vec<(Vec<u8>, String)>, String> {
        // An operation dropped midway (time limit, cancel) leaves git's lock behind; nothing
        // else uses this index.
        clear_lock(git_dir).await;
        let baseline = tokio::fs::read(git_dir.join(LEFT_OUT))
            .await
            .map(|bytes| select::decode(&bytes))
            .unwrap_or_default();
        let list = |which: &'static [&'static str]| async move {
            let mut args: Vec<&std::ffi::OsStr> = vec!["ls-files".as_ref(), "-z".as_ref()];
            args.extend(which.iter().map(|a| std::ffi::OsStr::new(*a)));
            git_bytes(git_dir, workdir, &args, None)
                .await
                .map(|out| names(&out))
        };
        let mut added = list(&["--others", "--exclude-standard"]).await?;
        let hidden = self.ignored_changes(git_dir, workdir).await?;
        added.extend(hidden.files);
        let mut candidates = list(&["--modified", "--deleted"]).await?;
        candidates.extend(added.iter().cloned());
        candidates.sort_unstable();
        candidates.dedup();
        let known: HashSet<Vec<u8>> = baseline.iter().map(|s| s.path.clone()).collect();
        let selection = self.choose(workdir, candidates, known).await?;
        update_index(git_dir, workdir, selection.update).await?;
        let workdir = workdir.to_path_buf();
        let added: HashSet<Vec<u8>> = added.into_iter().collect();
        let mut lines = tokio::task::spawn_blocking(move || {
            select::summary(&workdir, &baseline, &selection.skipped, &added)
        })
        .await
        .map_err(|e| format!("comparing the files not copied: {e}"))?;
        if hidden.more > 0 {
            let line = format!(
                "# {} more files under ignored paths changed and were not compared (past the \
                 limit of {} per snapshot)",
                hidden.more,
                ignored::MAX_FILES
            );
            lines.push((Vec::new(), line));
        }
        Ok(lines)
    }

    /// Files under ignored paths changed since the baseline was taken (none for a baseline
    /// that did not record its time).
    async fn ignored_changes(
        &self,
        git_dir: &Path,
        workdir: &Path,
    ) -> Result<ignored::Ignored, String> {
        let Ok(stamp) = tokio::fs::metadata(git_dir.join(TAKEN_AT)).await else {
            return Ok(ignored::Ignored::default());
        };
        let since = ignored::changed_at(&stamp);
        let args: [&std::ffi::OsStr; 6] = [
            "ls-files".as_ref(),
            "-z".as_ref(),
            "--others".as_ref(),
            "--ignored".as_ref(),
            "--exclude-standard".as_ref(),
            "--directory".as_ref(),
        ];
        let entries = names(&git_bytes(git_dir, workdir, &args, None).await?);
        let workdir = workdir.to_path_buf();
        tokio::task::spawn_blocking(move || ignored::changed(&workdir, &entries, since))
            .await
            .map_err(|e| format!("listing the files under ignored paths: {e}"))
    }

    /// Picks what to copy among `candidates` (stats every one, off the async threads).
    async fn choose(
        &self,
        workdir: &Path,
        candidates: Vec<Vec<u8>>,
        known: HashSet<Vec<u8>>,
    ) -> Result<Selection, String> {
        let workdir = workdir.to_path_buf();
        let sizes = self.sizes;
        tokio::task::spawn_blocking(move || select::select(&workdir, &candidates, sizes, &known))
            .await
            .map_err(|e| format!("choosing the files to copy: {e}"))
    }

    /// Runs `op`, giving it up at `until` or after the time limit, whichever comes first.
    async fn bounded<T>(
        &self,
        git_dir: &Path,
        until: Option<Instant>,
        op: impl Future<Output = Result<T, String>>,
    ) -> Result<T, String> {
        let started = Instant::now();
        let limit = started + self.timeout;
        let until = until.map_or(limit, |until| until.min(limit));
        match tokio::time::timeout_at(until, op).await {
            Ok(result) => result,
            Err(_) => {
                clear_lock(git_dir).await;
                Err(format!(
                    "given up after {:.1}s (tasks.snapshot_timeout_secs or the task's deadline): \
                     the task directory is too large to compare in time",
                    started.elapsed().as_secs_f64()
                ))
            }
        }
    }
}

/// Adds, updates or removes `paths` (NUL-separated) in the private index.
async fn update_index(git_dir: &Path, workdir: &Path, paths: Vec<u8>) -> Result<(), String> {
    if paths.is_empty() {
        return Ok(());
    }
    git_bytes(
        git_dir,
        workdir,
        &[
            "update-index".as_ref(),
            "--add".as_ref(),
            "--remove".as_ref(),
            "-z".as_ref(),
            "--stdin".as_ref(),
        ],
        Some(paths),
    )
    .await
    .map(drop)
}

async fn clear_lock(git_dir: &Path) {
    let _ = tokio::fs::remove_file(git_dir.join("index.lock")).await;
}

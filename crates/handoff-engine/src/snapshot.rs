//! What a task changed, for any executor and any directory: before the run, the task directory
//! is committed into a private git directory under the data dir (the task directory itself is
//! never touched, even when it is a repository of its own); after the run, the difference to
//! that baseline is the task's diff. The baseline lives until the task settles: every cycle of
//! the evaluator, and the final artifact, diff against the state before the first run.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
    process::Stdio,
};

use handoff_task::TaskId;
use tokio::process::Command;

/// Baselines of running tasks, one git directory each.
#[derive(Debug, Clone)]
pub(crate) struct Snapshots {
    root: PathBuf,
}

impl Snapshots {
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    fn git_dir(&self, task: &TaskId) -> PathBuf {
        self.root.join(format!("{}.git", task.as_str()))
    }

    /// Records the directory as it is before the run.
    pub async fn baseline(&self, task: &TaskId, workdir: &Path) -> Result<(), String> {
        let git_dir = self.git_dir(task);
        let _ = tokio::fs::remove_dir_all(&git_dir).await;
        tokio::fs::create_dir_all(&self.root)
            .await
            .map_err(|e| format!("{}: {e}", self.root.display()))?;
        git(&git_dir, workdir, &["init".as_ref(), "-q".as_ref()]).await?;
        git(&git_dir, workdir, &["add".as_ref(), "-A".as_ref()]).await?;
        git(
            &git_dir,
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
        .await
        .map(drop)
    }

    /// The unified diff from the baseline to the directory now (`None` when nothing changed).
    /// The baseline is kept: later cycles are diffed against the same pre-run state.
    pub async fn diff(&self, task: &TaskId, workdir: &Path) -> Result<Option<String>, String> {
        let git_dir = self.git_dir(task);
        if !git_dir.exists() {
            return Ok(None);
        }
        git(&git_dir, workdir, &["add".as_ref(), "-A".as_ref()]).await?;
        let diff = git(
            &git_dir,
            workdir,
            &["diff".as_ref(), "--cached".as_ref(), "HEAD".as_ref()],
        )
        .await?;
        Ok(Some(diff).filter(|d| !d.trim().is_empty()))
    }

    /// Forgets a baseline (the task settled, or its run never started).
    pub async fn discard(&self, task: &TaskId) {
        let _ = tokio::fs::remove_dir_all(self.git_dir(task)).await;
    }

    /// The files changed since the baseline that `wanted` selects, each with its own diff
    /// (added, changed, deleted, renamed away); `None` when there is no baseline to compare.
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
        git(&git_dir, workdir, &["add".as_ref(), "-A".as_ref()]).await?;
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
        Ok(Some(changed))
    }
}

/// Runs git on `workdir` with the private `git_dir`; returns stdout or git's own message.
async fn git(git_dir: &Path, workdir: &Path, args: &[&OsStr]) -> Result<String, String> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .arg("--work-tree")
        .arg(workdir)
        // Our identity and defaults, whatever the user's git config says.
        .args([
            "-c",
            "user.name=handoff",
            "-c",
            "user.email=handoff@localhost",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
            "-c",
            "core.quotepath=false",
        ])
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| format!("could not run git: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "git {}: {}",
            args.first()
                .map_or(String::new(), |a| a.to_string_lossy().into_owned()),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn diff_shows_added_changed_and_removed_files_and_leaves_the_directory_alone() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("keep.txt"), "one\n").unwrap();
        std::fs::write(work.path().join("gone.txt"), "bye\n").unwrap();
        let snapshots = Snapshots::new(data.path().join("snapshots"));
        let task = TaskId::generate().unwrap();
        snapshots.baseline(&task, work.path()).await.unwrap();
        assert!(
            !work.path().join(".git").exists(),
            "the task directory is not touched"
        );

        std::fs::write(work.path().join("keep.txt"), "one\ntwo\n").unwrap();
        std::fs::remove_file(work.path().join("gone.txt")).unwrap();
        std::fs::write(work.path().join("new.txt"), "hello\n").unwrap();
        let diff = snapshots.diff(&task, work.path()).await.unwrap().unwrap();
        assert!(diff.contains("+two"), "{diff}");
        assert!(
            diff.contains("deleted file mode") && diff.contains("-bye"),
            "{diff}"
        );
        assert!(
            diff.contains("new file mode") && diff.contains("+hello"),
            "{diff}"
        );
        snapshots.discard(&task).await;
        assert!(
            !snapshots.git_dir(&task).exists(),
            "the baseline is forgotten"
        );
    }

    #[tokio::test]
    async fn every_diff_is_against_the_pre_run_baseline_until_it_is_discarded() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("old.txt"), "old\n").unwrap();
        let snapshots = Snapshots::new(data.path().join("snapshots"));
        let task = TaskId::generate().unwrap();
        snapshots.baseline(&task, work.path()).await.unwrap();

        std::fs::write(work.path().join("a.txt"), "a\n").unwrap();
        let first = snapshots.diff(&task, work.path()).await.unwrap().unwrap();
        assert!(first.contains("+a"), "{first}");
        assert_eq!(
            snapshots.diff(&task, work.path()).await.unwrap().as_deref(),
            Some(first.as_str()),
            "diffing again sees the same changes"
        );

        std::fs::write(work.path().join("b.txt"), "b\n").unwrap();
        let second = snapshots.diff(&task, work.path()).await.unwrap().unwrap();
        assert!(
            second.contains("a.txt") && second.contains("b.txt"),
            "the second diff covers both cycles: {second}"
        );
        assert!(!second.contains("old.txt"), "{second}");

        snapshots.discard(&task).await;
        assert!(!snapshots.git_dir(&task).exists());
        assert_eq!(snapshots.diff(&task, work.path()).await.unwrap(), None);
    }

    #[tokio::test]
    async fn changes_to_selected_files_are_reported_with_their_own_diff() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        std::fs::write(work.path().join("check.sh"), "exit 1\n").unwrap();
        std::fs::create_dir(work.path().join("tests")).unwrap();
        std::fs::write(work.path().join("tests/test_a.py"), "assert False\n").unwrap();
        std::fs::write(work.path().join("calc.py"), "x = 1\n").unwrap();
        let snapshots = Snapshots::new(data.path().to_path_buf());
        let task = TaskId::generate().unwrap();
        let none = snapshots
            .changed_since_baseline(&task, work.path(), |_| true)
            .await
            .unwrap();
        assert_eq!(none, None, "no baseline, nothing to compare");
        snapshots.baseline(&task, work.path()).await.unwrap();

        std::fs::write(work.path().join("check.sh"), "exit 0\n").unwrap();
        std::fs::remove_file(work.path().join("tests/test_a.py")).unwrap();
        std::fs::write(work.path().join("calc.py"), "x = 2\n").unwrap();
        let protected = |p: &str| p == "check.sh" || p.starts_with("tests/");
        let changed = snapshots
            .changed_since_baseline(&task, work.path(), protected)
            .await
            .unwrap()
            .unwrap();
        let names: Vec<&str> = changed.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["check.sh", "tests/test_a.py"]);
        assert!(changed[0].1.contains("-exit 1") && changed[0].1.contains("+exit 0"));
        assert!(
            changed[1].1.contains("deleted file mode"),
            "{}",
            changed[1].1
        );
        assert!(!changed[0].1.contains("calc.py"));
        assert!(snapshots.git_dir(&task).exists(), "the baseline is kept");
    }

    #[tokio::test]
    async fn nothing_changed_is_no_diff() {
        let data = tempfile::tempdir().unwrap();
        let work = tempfile::tempdir().unwrap();
        let snapshots = Snapshots::new(data.path().to_path_buf());
        let task = TaskId::generate().unwrap();
        snapshots.baseline(&task, work.path()).await.unwrap();
        assert_eq!(snapshots.diff(&task, work.path()).await.unwrap(), None);
    }
}

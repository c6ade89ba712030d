//! What a task changed, for any executor and any directory: before the run, the task directory
//! is committed into a private git directory under the data dir (the task directory itself is
//! never touched, even when it is a repository of its own); after the run, the difference to
//! that baseline is the task's diff.

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

    /// The unified diff from the baseline to the directory now (`None` when nothing changed),
    /// then forgets the baseline.
    pub async fn diff(&self, task: &TaskId, workdir: &Path) -> Result<Option<String>, String> {
        let git_dir = self.git_dir(task);
        if !git_dir.exists() {
            return Ok(None);
        }
        let result = async {
            git(&git_dir, workdir, &["add".as_ref(), "-A".as_ref()]).await?;
            git(
                &git_dir,
                workdir,
                &["diff".as_ref(), "--cached".as_ref(), "HEAD".as_ref()],
            )
            .await
        }
        .await;
        let _ = tokio::fs::remove_dir_all(&git_dir).await;
        result.map(|diff| Some(diff).filter(|d| !d.trim().is_empty()))
    }

    /// Forgets a baseline without diffing.
    pub async fn discard(&self, task: &TaskId) {
        let _ = tokio::fs::remove_dir_all(self.git_dir(task)).await;
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
        assert!(
            !snapshots.git_dir(&task).exists(),
            "the baseline is forgotten"
        );
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

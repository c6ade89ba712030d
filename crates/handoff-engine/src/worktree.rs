//! Task directories as `git worktree`s of a configured repository: each task works on its own
//! checkout (detached at the repository's HEAD) without copying the repository.

use std::path::Path;

use tokio::process::Command;

/// Runs `git -C repo args…`; the error is git's own message.
async fn git(repo: &Path, args: &[&std::ffi::OsStr]) -> Result<(), String> {
    let output = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| format!("could not run git: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).trim().to_owned())
    }
}

/// Creates `dir` as a detached worktree of `repo` at its HEAD.
pub(crate) async fn add(repo: &Path, dir: &Path) -> Result<(), String> {
    git(
        repo,
        &[
            "worktree".as_ref(),
            "add".as_ref(),
            "--detach".as_ref(),
            dir.as_os_str(),
        ],
    )
    .await
    .map_err(|e| format!("git worktree add failed: {e}"))
}

/// Unregisters and deletes the worktree at `dir` (a no-op when it is not one).
pub(crate) async fn remove(repo: &Path, dir: &Path) {
    let removed = git(
        repo,
        &[
            "worktree".as_ref(),
            "remove".as_ref(),
            "--force".as_ref(),
            dir.as_os_str(),
        ],
    )
    .await;
    if let Err(e) = removed {
        tracing::debug!(dir = %dir.display(), error = %e, "not a registered worktree");
        // Whatever is left (a half-created directory) goes; git forgets it on prune.
        let _ = git(repo, &["worktree".as_ref(), "prune".as_ref()]).await;
    }
}

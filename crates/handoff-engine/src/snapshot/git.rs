//! Running git on a task directory with Handoff's private git directory.

use std::{ffi::OsStr, path::Path, process::Stdio};

use tokio::{io::AsyncWriteExt, process::Command};

/// Runs git on `workdir` with the private `git_dir`, feeding `stdin`; returns stdout or git's
/// own message. Dropping the future kills git (a diff abandoned for time or a cancel).
pub(super) async fn git_bytes(
    git_dir: &Path,
    workdir: &Path,
    args: &[&OsStr],
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    let mut child = Command::new("git")
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
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("could not run git: {e}"))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // Fed beside the read: git may answer before it has read everything.
        tokio::spawn(async move {
            let _ = pipe.write_all(&input).await;
        });
    }
    let output = child
        .wait_with_output()
        .await
        .map_err(|e| format!("could not run git: {e}"))?;
    if output.status.success() {
        Ok(output.stdout)
    } else {
        Err(format!(
            "git {}: {}",
            args.first()
                .map_or(String::new(), |a| a.to_string_lossy().into_owned()),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// [`git_bytes`] without input, as text.
pub(super) async fn git(git_dir: &Path, workdir: &Path, args: &[&OsStr]) -> Result<String, String> {
    let out = git_bytes(git_dir, workdir, args, None).await?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The NUL-separated names git printed (`-z`), without a directory's trailing slash (a
/// nested repository is listed as `dir/`).
pub(super) fn names(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| n.strip_suffix(b"/").unwrap_or(n).to_vec())
        .collect()
}

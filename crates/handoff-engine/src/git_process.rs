//! Running git the one way Handoff does: no inherited `GIT_DIR`/`GIT_WORK_TREE`/index, input fed
//! beside the read (git may answer before it has read everything), killed when the caller stops
//! waiting. What git runs on and with which settings is each caller's (`snapshot`, `worktree`).

use std::{ffi::OsStr, path::Path, process::Stdio};

use tokio::{io::AsyncWriteExt, process::Command};

/// Runs `git ARGS` in `cwd` with `env`, feeding `stdin`; stdout, or git's own message after
/// the name of its subcommand (`first`).
pub(crate) async fn run(
    cwd: Option<&Path>,
    args: &[&OsStr],
    env: &[(&str, &str)],
    stdin: Option<Vec<u8>>,
    first: &str,
) -> Result<Vec<u8>, String> {
    let mut command = Command::new("git");
    if let Some(cwd) = cwd {
        command.current_dir(cwd);
    }
    let mut child = command
        .args(args)
        .envs(env.iter().copied())
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
            "git {first}: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

//! Running one hook command: `sh -c` in its own process group, JSON on stdin, stdout and
//! stderr collected (capped), and on timeout the whole group killed.

use std::{path::Path, process::Stdio, time::Duration};

use nix::{sys::signal::Signal, unistd::Pid};
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    process::Command,
};

/// Most bytes kept of a hook's stdout or stderr.
const MAX_CAPTURE: u64 = 1 << 20;

/// How a hook process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProcessEnd {
    /// It exited with this code (a signal counts as -1).
    Exited(i32),
    /// It ran past its timeout and its group was killed.
    TimedOut,
    /// It could not be started.
    SpawnFailed(String),
}

/// What a hook process left.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// How it ended.
    pub end: ProcessEnd,
    /// Its stdout (lossy UTF-8, capped).
    pub stdout: String,
    /// Its stderr (lossy UTF-8, capped).
    pub stderr: String,
}

/// Runs `command` with `sh -c` in `cwd`, writing `stdin` to it.
pub async fn run_command(
    command: &str,
    cwd: &Path,
    stdin: &[u8],
    timeout: Duration,
) -> ProcessOutput {
    let failed = |e: std::io::Error| ProcessOutput {
        end: ProcessEnd::SpawnFailed(e.to_string()),
        stdout: String::new(),
        stderr: String::new(),
    };
    let cwd = if cwd.is_dir() { cwd } else { Path::new("/") };
    let mut child = match Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
    {
        Ok(child) => child,
        Err(e) => return failed(e),
    };
    let group = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .map(Pid::from_raw);
    let input = child.stdin.take();
    let out = child.stdout.take();
    let err = child.stderr.take();
    let payload = stdin.to_vec();
    let io = async move {
        let write = async move {
            if let Some(mut input) = input {
                // A hook that does not read its stdin is not an error.
                let _ = input.write_all(&payload).await;
            }
        };
        let read_out = async move {
            let mut buf = Vec::new();
            if let Some(pipe) = out {
                let _ = pipe.take(MAX_CAPTURE).read_to_end(&mut buf).await;
            }
            String::from_utf8_lossy(&buf).into_owned()
        };
        let read_err = async move {
            let mut buf = Vec::new();
            if let Some(pipe) = err {
                let _ = pipe.take(MAX_CAPTURE).read_to_end(&mut buf).await;
            }
            String::from_utf8_lossy(&buf).into_owned()
        };
        let ((), stdout, stderr) = tokio::join!(write, read_out, read_err);
        (stdout, stderr)
    };
    let run = async {
        let (stdout, stderr) = io.await;
        let status = child.wait().await;
        (status, stdout, stderr)
    };
    match tokio::time::timeout(timeout, run).await {
        Ok((status, stdout, stderr)) => ProcessOutput {
            end: match status {
                Ok(status) => ProcessEnd::Exited(status.code().unwrap_or(-1)),
                Err(e) => ProcessEnd::SpawnFailed(e.to_string()),
            },
            stdout,
            stderr,
        },
        Err(_) => {
            if let Some(group) = group {
                // The hook's children die with it: the whole group goes.
                let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
            }
            ProcessOutput {
                end: ProcessEnd::TimedOut,
                stdout: String::new(),
                stderr: String::new(),
            }
        }
    }
}

//! Verify commands (tests, lint, build) run the way the task's own processes run: in its
//! directory, confined at its executor's isolation level, in their own process group, with a
//! time limit after which the whole group is killed.

use std::{path::Path, process::Stdio, time::Duration};

use nix::{sys::signal::Signal, unistd::Pid};
use tokio::io::AsyncReadExt;

use crate::{
    Isolation, RunnerError,
    command::{Confinement, confined_command},
};

/// Most bytes kept of a check's output (its tail).
const OUTPUT_TAIL: usize = 16 * 1024;

/// How one check ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRun {
    /// The exit code; `None` when it was killed (timeout, signal).
    pub code: Option<i32>,
    /// The tail of its stdout and stderr.
    pub output: String,
}

/// Runs verify commands confined like one executor's processes.
#[derive(Debug, Clone, Default)]
pub struct CheckRunner {
    isolation: Option<Isolation>,
}

impl CheckRunner {
    /// Commands confined by `isolation` (or only in their own process group).
    pub fn new(isolation: Option<Isolation>) -> Self {
        Self { isolation }
    }

    /// Runs `command` with `sh -c` in `workdir` for task `name`, for at most `limit`. Its whole
    /// process group is killed when it ends, when the limit passes, and when this future is
    /// dropped (a cancelled assessment leaves nothing running). Its cgroup is its own
    /// ([`check_name`]): another check of the same task — an instance declared lost that still
    /// assesses it — never removes this one's.
    pub async fn run(
        &self,
        name: &str,
        workdir: &Path,
        command: &str,
        limit: Duration,
    ) -> Result<CheckRun, RunnerError> {
        let argv = ["sh".to_owned(), "-c".to_owned(), command.to_owned()];
        let (mut cmd, confinement) = confined_command(
            self.isolation.as_ref(),
            name,
            &check_name(name),
            workdir,
            &argv,
            &[],
            &[],
        )?;
        cmd.current_dir(workdir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|source| RunnerError::Spawn {
            program: "sh".to_owned(),
            source,
        })?;
        let mut guard = GroupGuard {
            group: child
                .id()
                .and_then(|id| i32::try_from(id).ok())
                .map(Pid::from_raw),
            confinement: Some(confinement),
        };
        let out: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> =
            child.stdout.take().map(|p| Box::new(p) as _);
        let err: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>> =
            child.stderr.take().map(|p| Box::new(p) as _);
        let run = async {
            let (stdout, stderr) = tokio::join!(read_all(out), read_all(err));
            let status = child.wait().await;
            (status, stdout, stderr)
        };
        let outcome = tokio::time::timeout(limit, run).await;
        let killed = outcome.is_err();
        let result = match outcome {
            Ok((status, stdout, stderr)) => {
                let mut text = String::from_utf8_lossy(&stdout).into_owned();
                text.push_str(&String::from_utf8_lossy(&stderr));
                CheckRun {
                    code: status.ok().and_then(|s| s.code()),
                    output: tail(&text),
                }
            }
            Err(_) => CheckRun {
                code: None,
                output: format!("killed after {}s", limit.as_secs()),
            },
        };
        guard.finish(killed).await;
        Ok(result)
    }
}

/// A check's process group and confinement, killed however the check ends — also when the
/// future running it is dropped, where nothing can be awaited.
struct GroupGuard {
    group: Option<Pid>,
    confinement: Option<Confinement>,
}

impl GroupGuard {
    /// Kills what is left of the group (background processes too) and removes the confinement.
    async fn finish(&mut self, killed: bool) {
        self.kill_group();
        if let Some(confinement) = self.confinement.take() {
            if killed {
                confinement.kill().await;
            }
            confinement.remove().await;
        }
    }

    fn kill_group(&mut self) {
        if let Some(group) = self.group.take() {
            let _ = nix::sys::signal::killpg(group, Signal::SIGKILL);
        }
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill_group();
        if let Some(confinement) = self.confinement.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                confinement.kill().await;
                confinement.remove().await;
            });
        }
    }
}

/// A name for one check of task `name`, of no other check: `<name>-v<random>` (a name
/// [`stop_task_leftovers`](crate::stop_task_leftovers) finds as the task's).
fn check_name(name: &str) -> String {
    format!("{name}-v{}", uuid::Uuid::new_v4().simple())
}

async fn read_all(pipe: Option<Box<dyn tokio::io::AsyncRead + Unpin + Send>>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(mut pipe) = pipe {
        let _ = pipe.read_to_end(&mut buf).await;
    }
    buf
}

fn tail(text: &str) -> String {
    if text.len() <= OUTPUT_TAIL {
        return text.to_owned();
    }
    let mut start = text.len() - OUTPUT_TAIL;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn exit_codes_output_and_timeouts() {
        let dir = std::env::temp_dir();
        let runner = CheckRunner::default();
        let ok = runner
            .run("t", &dir, "echo fine", Duration::from_secs(10))
            .await
            .unwrap();
        assert_eq!((ok.code, ok.output.as_str()), (Some(0), "fine\n"));
        let bad = runner
            .run(
                "t",
                &dir,
                "echo broken >&2; exit 3",
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert_eq!((bad.code, bad.output.as_str()), (Some(3), "broken\n"));
        let slow = runner
            .run("t", &dir, "sleep 30 & wait", Duration::from_millis(300))
            .await
            .unwrap();
        assert_eq!(slow.code, None);
        assert!(slow.output.contains("killed"));
    }

    #[tokio::test]
    async fn a_dropped_check_leaves_no_process_behind() {
        let dir = tempfile::tempdir().unwrap();
        let pids = dir.path().join("pids");
        let command = format!(
            "sleep 300 & echo $! > {p}; sleep 300 & echo $! >> {p}; wait",
            p = pids.display()
        );
        let runner = CheckRunner::default();
        let run = runner.run("t", dir.path(), &command, Duration::from_secs(600));
        // Dropped mid-run, as a cancel drops the assessment.
        let dropped = tokio::time::timeout(Duration::from_millis(500), run).await;
        assert!(dropped.is_err(), "the check should still be running");
        let text = std::fs::read_to_string(&pids).unwrap();
        let pids: Vec<i32> = text.lines().map(|l| l.trim().parse().unwrap()).collect();
        assert_eq!(pids.len(), 2, "{text}");
        for pid in pids {
            crate::test_waits::until(&format!("{pid} to end with the drop"), || {
                if crate::process_group_alive(pid) || alive(pid) {
                    Err("alive")
                } else {
                    Ok(())
                }
            })
            .await;
        }
    }

    /// Whether `pid` runs (a zombie awaiting its parent's reaping counts as gone).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z')
        })
    }
}

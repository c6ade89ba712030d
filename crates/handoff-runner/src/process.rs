use std::time::{Duration, Instant};

use nix::{
    errno::Errno,
    sys::signal::{Signal, killpg},
    unistd::Pid,
};

use crate::RunnerError;

/// How long to wait for a SIGKILLed group to disappear; only a process stuck in the kernel
/// (uninterruptible I/O) takes longer.
pub(crate) const GONE_TIMEOUT: Duration = Duration::from_secs(5);

const POLL: Duration = Duration::from_millis(20);

/// Whether any process of group `pgid` still runs; zombies awaiting their reaper count as gone.
pub fn process_group_alive(pgid: i32) -> bool {
    // 0 and 1 would address our own group or init's; neither is ever a run's group.
    if pgid <= 1 {
        return false;
    }
    match killpg(Pid::from_raw(pgid), None) {
        Err(Errno::ESRCH) => false,
        // Zombies keep `killpg` succeeding until their (possibly slow) reaper runs, so look
        // at what each member is doing.
        _ => has_live_member(pgid).unwrap_or(true),
    }
}

/// Whether a process with this pid exists (a zombie counts).
pub(crate) fn pid_alive(pid: i32) -> bool {
    pid > 0 && std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// Polls until group `pgid` is gone; `false` if it outlived `limit`.
pub(crate) async fn wait_group_gone(pgid: i32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !process_group_alive(pgid) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Kills group `pgid` if its leader is still the process recorded with `start_time`.
pub(crate) async fn abandon_group(pgid: i32, start_time: u64) -> Result<(), RunnerError> {
    let leader = if pgid > 1 { read_stat(pgid) } else { None };
    match leader {
        Some(stat) if stat.start_time == start_time => {}
        Some(_) => {
            tracing::info!(
                pgid,
                "not abandoning: the pid now belongs to another process"
            );
            return Ok(());
        }
        None => {
            if process_group_alive(pgid) {
                tracing::warn!(
                    pgid,
                    "not abandoning: the group's leader is gone, so it cannot be verified as ours"
                );
            }
            return Ok(());
        }
    }
    match killpg(Pid::from_raw(pgid), Signal::SIGKILL) {
        Ok(()) | Err(Errno::ESRCH) => {}
        Err(errno) => {
            return Err(RunnerError::Io {
                context: "killing an abandoned process group",
                message: errno.to_string(),
            });
        }
    }
    if wait_group_gone(pgid, GONE_TIMEOUT).await {
        Ok(())
    } else {
        Err(RunnerError::Io {
            context: "killing an abandoned process group",
            message: format!("process group {pgid} is still running after SIGKILL"),
        })
    }
}

/// Clock ticks since boot when `pid` started (field 22 of `/proc/<pid>/stat`).
pub(crate) fn start_time(pid: i32) -> Option<u64> {
    read_stat(pid).map(|stat| stat.start_time)
}

/// Waits for the leader to exit without reaping it: while it is a zombie its pid cannot be
/// reused, so the group can still be killed by id. `false` when that could not be done (the
/// caller then reaps first).
#[cfg(target_os = "linux")]
pub(crate) async fn leader_exit_unreaped(pid: i32) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, waitid};

    let (tx, rx) = tokio::sync::oneshot::channel();
    // waitid blocks, and a dedicated thread (unlike spawn_blocking) never holds up runtime
    // shutdown; kill_on_drop ends the leader then, which ends the thread.
    let spawned = std::thread::Builder::new()
        .name("handoff-waitid".to_owned())
        .stack_size(64 * 1024)
        .spawn(move || {
            let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT;
            let waited = loop {
                match waitid(Id::Pid(Pid::from_raw(pid)), flags) {
                    Err(Errno::EINTR) => continue,
                    result => break result.is_ok(),
                }
            };
            let _ = tx.send(waited);
        });
    match spawned {
        Ok(_) => rx.await.unwrap_or(false),
        Err(e) => {
            tracing::warn!(error = %e, "could not start the exit watcher thread");
            false
        }
    }
}

/// Without `waitid` the caller reaps first.
#[cfg(not(target_os = "linux"))]
pub(crate) async fn leader_exit_unreaped(_pid: i32) -> bool {
    false
}

/// The fields of `/proc/<pid>/stat` we use.
struct Stat {
    state: char,
    pgrp: i32,
    start_time: u64,
}

fn read_stat(pid: i32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(&text)
}

fn parse_stat(text: &str) -> Option<Stat> {
    // The command name (field 2) may contain spaces and parentheses; it ends at the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 of the file.
    Some(Stat {
        state: fields.first()?.chars().next()?,
        pgrp: fields.get(2)?.parse().ok()?,
        start_time: fields.get(19)?.parse().ok()?,
    })
}

fn has_live_member(pgid: i32) -> Option<bool> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let live = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .any(|stat| stat.pgrp == pgid && !matches!(stat.state, 'Z' | 'X'));
    Some(live)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_awkward_command_names() {
        let line =
            "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10";
        let stat = parse_stat(line).unwrap();
        assert_eq!(stat.state, 'S');
        assert_eq!(stat.pgrp, 4242);
        assert_eq!(stat.start_time, 987654);
        assert!(parse_stat("4242 (x) S 1").is_none());
    }

    #[test]
    fn own_start_time_is_readable_and_bogus_groups_are_not_alive() {
        let me = i32::try_from(std::process::id()).unwrap();
        assert!(start_time(me).is_some());
        assert!(!process_group_alive(0));
        assert!(!process_group_alive(1));
        assert!(!process_group_alive(-5));
    }
}

//! Freezing and thawing a run from outside: its cgroup's freezer, else SIGSTOP/SIGCONT to its
//! process group — after checking that the group's id still names the run's group.

use std::{io::Write, path::Path, path::PathBuf};

use nix::{
    errno::Errno,
    sys::signal::{Signal, killpg},
    unistd::Pid,
};

use super::FenceTarget;

/// How a run was frozen, so it is thawed the same way.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Means {
    /// `cgroup.freeze` of this cgroup2 directory.
    CgroupV2(PathBuf),
    /// `freezer.state` of this v1 freezer directory.
    CgroupV1(PathBuf),
    /// SIGSTOP to this process group, whose leader started at this time (when known).
    Group(i32, Option<u64>),
}

impl std::fmt::Display for Means {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Means::CgroupV2(dir) | Means::CgroupV1(dir) => write!(f, "cgroup {}", dir.display()),
            Means::Group(pgid, _) => write!(f, "process group {pgid}"),
        }
    }
}

/// What freezes and thaws runs (the system's, or a recording fake in tests).
pub(crate) trait Actuator {
    /// What identifies the target's process group now: its leader's start time.
    fn identify(&self, target: &FenceTarget) -> Option<u64>;
    /// Freezes the target; `leader` is what [`Actuator::identify`] said when it was guarded.
    fn freeze(&self, target: &FenceTarget, leader: Option<u64>) -> Result<Means, String>;
    /// Undoes a freeze.
    fn thaw(&self, means: &Means) -> Result<(), String>;
}

/// The kernel's freezers and signals.
pub(crate) struct System;

impl Actuator for System {
    fn identify(&self, target: &FenceTarget) -> Option<u64> {
        target.pgid.and_then(start_time)
    }

    fn freeze(&self, target: &FenceTarget, leader: Option<u64>) -> Result<Means, String> {
        let mut failures = Vec::new();
        if let Some(dir) = &target.cgroup {
            match freeze_cgroup(dir) {
                Ok(means) => return Ok(means),
                Err(e) => failures.push(e),
            }
        }
        if let Some(pgid) = target.pgid {
            match signal_group(pgid, leader, Signal::SIGSTOP) {
                Ok(()) => return Ok(Means::Group(pgid, leader)),
                Err(e) => failures.push(e),
            }
        }
        Err(failures.join("; "))
    }

    fn thaw(&self, means: &Means) -> Result<(), String> {
        match means {
            Means::CgroupV2(dir) => write_control(&dir.join("cgroup.freeze"), "0"),
            Means::CgroupV1(dir) => write_control(&dir.join("freezer.state"), "THAWED"),
            Means::Group(pgid, leader) => match signal_group(*pgid, *leader, Signal::SIGCONT) {
                Err(e) if e.ends_with(GONE) => Ok(()),
                other => other,
            },
        }
    }
}

const GONE: &str = "no process is left";

fn freeze_cgroup(dir: &Path) -> Result<Means, String> {
    let v2 = dir.join("cgroup.freeze");
    if v2.exists() {
        write_control(&v2, "1")?;
        return Ok(Means::CgroupV2(dir.to_owned()));
    }
    let v1 = dir.join("freezer.state");
    if v1.exists() {
        write_control(&v1, "FROZEN")?;
        return Ok(Means::CgroupV1(dir.to_owned()));
    }
    Err(format!("{}: no freezer there", dir.display()))
}

/// Writes a control file that must exist: opened without `create`, so a path that is not a
/// cgroup never gains a file.
fn write_control(file: &Path, value: &str) -> Result<(), String> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(file)
        .and_then(|mut f| f.write_all(value.as_bytes()))
        .map_err(|e| format!("writing {value} to {}: {e}", file.display()))
}

fn signal_group(pgid: i32, leader: Option<u64>, signal: Signal) -> Result<(), String> {
    // The group's id is its leader's pid: once the leader is gone and reaped another process
    // may carry it. A leader that is gone cannot be checked, but while any member of the old
    // group lives its id cannot be handed out again, so the signal reaches the run or no one.
    if let (Some(expected), Some(now)) = (leader, start_time(pgid))
        && expected != now
    {
        return Err(format!(
            "process group {pgid}: the id now belongs to another process"
        ));
    }
    match killpg(Pid::from_raw(pgid), signal) {
        Ok(()) => Ok(()),
        Err(Errno::ESRCH) => Err(format!("process group {pgid}: {GONE}")),
        Err(errno) => Err(format!("process group {pgid}: {signal}: {errno}")),
    }
}

/// When process `pid` started (field 22 of `/proc/<pid>/stat`), in clock ticks after boot.
fn start_time(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; it ends at the last ')'.
    let (_, rest) = text.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_path_without_a_freezer_gains_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = freeze_cgroup(dir.path()).unwrap_err();
        assert!(err.contains("no freezer"), "{err}");
        assert!(write_control(&dir.path().join("cgroup.freeze"), "1").is_err());
        assert!(!dir.path().join("cgroup.freeze").exists());
    }

    #[test]
    fn a_recycled_group_id_is_not_signalled() {
        let me = i32::try_from(std::process::id()).unwrap();
        let started = start_time(me).unwrap();
        let err = signal_group(me, Some(started + 1), Signal::SIGCONT).unwrap_err();
        assert!(err.contains("another process"), "{err}");
    }
}

//! Finding what a run left behind when nothing about it was recorded (Handoff was killed
//! between starting a process and saving its pid). Every process Handoff starts carries a
//! marker in its environment that its children inherit — the task id ([`TASK_ID_ENV`]) for
//! runs and verify commands, a random id for the managed OpenCode server — and an isolated run
//! also sits in a cgroup named after the task and that run (`<task id>-r<fence>`, a check's
//! `<task id>-v<random>`; `<task id>` before runs had names of their own). Nothing is kept in
//! memory: the marker is found again by reading `/proc`, the groups by listing the cgroups.

use std::{collections::BTreeSet, time::Duration};

use handoff_isolation::{
    IsolationError,
    cgroups::{CgroupSupport, TaskCgroup},
};
use nix::{
    errno::Errno,
    sys::signal::{Signal, kill, killpg},
    unistd::Pid,
};
use tokio::time::Instant;

use crate::RunnerError;

/// The variable naming the task every process of a run (and its children) belongs to.
pub const TASK_ID_ENV: &str = "HANDOFF_TASK_ID";

/// How long the processes of a run may take to disappear after SIGKILL; only a process stuck
/// in the kernel (uninterruptible I/O) takes longer.
const GONE_LIMIT: Duration = Duration::from_secs(5);

const POLL: Duration = Duration::from_millis(20);

/// Kills every process left of task `task_id`'s runs on this host — every run's cgroup, and
/// every process whose environment names the task — and returns once none is left; returns
/// how many were killed (found by their marker).
pub async fn stop_task_leftovers(task_id: &str) -> Result<usize, RunnerError> {
    let task = task_id.to_owned();
    // First the cgroups: a frozen (paused) run cannot act on SIGKILL until it is thawed.
    let failures = tokio::task::spawn_blocking(move || empty_task_groups(&task))
        .await
        .map_err(|e| RunnerError::Isolation(e.to_string()))?;
    for (group, e) in failures {
        tracing::warn!(task = task_id, group, error = %e, "could not empty a dead run's cgroup");
    }
    kill_marked(&format!("{TASK_ID_ENV}={task_id}")).await
}

/// Kills what is in every cgroup of task `task_id`'s runs and removes them; returns the
/// groups that could not be emptied, with why.
fn empty_task_groups(task_id: &str) -> Vec<(String, IsolationError)> {
    let support = CgroupSupport::detect();
    TaskCgroup::names(&support)
        .into_iter()
        .filter(|name| crate::executor::of_task(task_id, name))
        .filter_map(|name| {
            let group = TaskCgroup::open(&support, &name)?;
            group.remove().err().map(|e| (name, e))
        })
        .collect()
}

/// SIGKILLs every process (other than this one) whose environment holds `entry`
/// (`NAME=value`), and the process groups such processes lead; returns once none is left.
pub(crate) async fn kill_marked(entry: &str) -> Result<usize, RunnerError> {
    let deadline = Instant::now() + GONE_LIMIT;
    let mut killed = BTreeSet::new();
    loop {
        let wanted = entry.to_owned();
        let found = tokio::task::spawn_blocking(move || marked(wanted.as_bytes()))
            .await
            .map_err(|e| RunnerError::Io {
                context: "looking for what a run left behind",
                message: e.to_string(),
            })?;
        if found.is_empty() {
            return Ok(killed.len());
        }
        if Instant::now() >= deadline {
            return Err(RunnerError::Io {
                context: "stopping what a run left behind",
                message: format!("processes {found:?} are still running after SIGKILL"),
            });
        }
        for pid in found {
            // A marked group leader takes its group along, also members that replaced their
            // environment. Its pid cannot name another group while it is alive.
            if leads_own_group(pid)
                && let Err(errno) = killpg(Pid::from_raw(pid), Signal::SIGKILL)
                && errno != Errno::ESRCH
            {
                tracing::debug!(pid, %errno, "killing a leftover process group");
            }
            if let Err(errno) = kill(Pid::from_raw(pid), Signal::SIGKILL)
                && errno != Errno::ESRCH
            {
                tracing::warn!(pid, %errno, "could not kill a leftover process");
            }
            killed.insert(pid);
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The live processes whose environment holds `entry`, except this one. A zombie's
/// environment reads empty, so it never counts.
fn marked(entry: &[u8]) -> Vec<i32> {
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| *pid != me && *pid > 1)
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/environ"))
                .is_ok_and(|env| env.split(|b| *b == 0).any(|var| var == entry))
        })
        .collect()
}

/// Whether `pid` is its own process group's leader.
fn leads_own_group(pid: i32) -> bool {
    nix::unistd::getpgid(Some(Pid::from_raw(pid))).is_ok_and(|group| group.as_raw() == pid)
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::CommandExt;

    use super::*;

    fn alive(pid: u32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, r)| !r.trim().starts_with('Z'))
        })
    }

    #[tokio::test]
    async fn kills_marked_processes_also_outside_their_group_and_nothing_else() {
        let id = format!("task_leftover{}", std::process::id());
        // One marked leader with a child that left the group; one unmarked bystander.
        let mut marked_leader = std::process::Command::new("sh")
            .args(["-c", "setsid sleep 300 & echo $!; wait"])
            .env(TASK_ID_ENV, &id)
            .stdout(std::process::Stdio::piped())
            .process_group(0)
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(marked_leader.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let escaped: u32 = line.trim().parse().unwrap();
        let mut bystander = std::process::Command::new("sleep")
            .arg("300")
            .env(TASK_ID_ENV, "task_someone_else")
            .spawn()
            .unwrap();

        let killed = stop_task_leftovers(&id).await.unwrap();
        assert_eq!(killed, 2);
        assert!(marked_leader.wait().is_ok());
        assert!(!alive(escaped), "the process that left the group survived");
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "a bystander was killed"
        );
        assert_eq!(stop_task_leftovers(&id).await.unwrap(), 0);
        bystander.kill().unwrap();
        bystander.wait().unwrap();
    }

    /// This host's cgroups; the isolation tests need them writable too, so a host without them
    /// fails here rather than passing without a look at the groups.
    fn cgroups() -> CgroupSupport {
        let support = CgroupSupport::detect();
        assert!(
            support.can_freeze(),
            "cgroups must be writable here (a cgroup2 mount or the v1 freezer): {}",
            support.summary()
        );
        support
    }

    /// A group `name` holding one unmarked `sleep`: found by its group only.
    fn sleeper_in(support: &CgroupSupport, name: &str) -> (TaskCgroup, std::process::Child) {
        let group =
            TaskCgroup::create(support, name, &handoff_isolation::Limits::default()).unwrap();
        let sleeper = std::process::Command::new("sleep")
            .arg("300")
            .env_remove(TASK_ID_ENV)
            .spawn()
            .unwrap();
        group.add(i32::try_from(sleeper.id()).unwrap()).unwrap();
        (group, sleeper)
    }

    #[tokio::test]
    async fn every_runs_group_of_the_task_is_emptied_and_no_other_tasks() {
        let support = cgroups();
        let task = handoff_task::TaskId::generate().unwrap();
        let other = handoff_task::TaskId::generate().unwrap();
        let names = [
            crate::executor::run_name(task.as_str(), 7),
            // Named before runs had names of their own.
            task.as_str().to_owned(),
        ];
        let mut runs: Vec<_> = names.iter().map(|n| sleeper_in(&support, n)).collect();
        let (other_group, mut bystander) =
            sleeper_in(&support, &crate::executor::run_name(other.as_str(), 7));

        // Nothing carries the marker: all that was killed was found by its group.
        assert_eq!(stop_task_leftovers(task.as_str()).await.unwrap(), 0);
        for ((_, sleeper), name) in runs.iter_mut().zip(&names) {
            // First the group: a group left with its process in it would make `wait` hang.
            assert!(
                TaskCgroup::open(&support, name).is_none(),
                "group {name} is left"
            );
            assert!(sleeper.wait().is_ok());
        }
        assert!(
            bystander.try_wait().unwrap().is_none(),
            "another task's run was killed"
        );
        assert_eq!(other_group.pids().len(), 1);
        other_group.remove().unwrap();
        assert!(bystander.wait().is_ok());
    }
}

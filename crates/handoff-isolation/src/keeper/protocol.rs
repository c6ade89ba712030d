//! What a server and its keeper say to each other: one JSON object per line — orders on the
//! keeper's stdin, reports on its stdout — and the clock both read deadlines on.

use std::{
    path::{Component, PathBuf},
    time::{Duration, Instant},
};

use nix::time::{ClockId, clock_gettime};
use serde::{Deserialize, Serialize};

use crate::IsolationError;

/// Longest run key, in bytes.
pub const MAX_KEY_LEN: usize = 256;
/// Most runs one keeper guards at once.
pub const MAX_GUARDED: usize = 65_536;
/// Longest order line, in bytes (room for a cgroup path of `PATH_MAX`).
pub const MAX_LINE: usize = 8192;

/// How to freeze one run from outside the server: its cgroup (preferred: it also holds the
/// processes that left the run's process group) and/or its process group.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct FenceTarget {
    /// The run's process group, stopped with SIGSTOP and continued with SIGCONT.
    pub pgid: Option<i32>,
    /// The run's cgroup directory: cgroup2 (`cgroup.freeze`) or a v1 freezer (`freezer.state`).
    pub cgroup: Option<PathBuf>,
}

impl FenceTarget {
    /// Why the keeper could not freeze this target, if it could not.
    pub fn check(&self) -> Result<(), String> {
        if self.pgid.is_none() && self.cgroup.is_none() {
            return Err("a target needs a process group or a cgroup".to_owned());
        }
        // 0, 1 and negative ids would address the keeper's own group, init or every process.
        if let Some(pgid) = self.pgid
            && pgid <= 1
        {
            return Err(format!("process group {pgid} is never a run's"));
        }
        if let Some(dir) = &self.cgroup {
            let plain = dir.is_absolute()
                && dir
                    .components()
                    .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
            if !plain {
                return Err(format!(
                    "cgroup {} is not a plain absolute path",
                    dir.display()
                ));
            }
        }
        Ok(())
    }
}

/// An absolute time on `CLOCK_BOOTTIME`, in milliseconds: one clock for every process of the
/// machine that keeps counting while a process is stopped and while the machine is suspended
/// (unlike [`Instant`], which stops during suspend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FenceDeadline(u64);

impl FenceDeadline {
    /// Now.
    pub fn now() -> Self {
        // A clock that cannot be read makes every deadline made from it lie in the keeper's
        // past: runs freeze rather than risk running twice.
        Self(boottime_millis().unwrap_or(0))
    }

    /// `remaining` from now (rounded down to the millisecond, never later than asked).
    pub fn after(remaining: Duration) -> Self {
        let millis = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
        Self(Self::now().0.saturating_add(millis))
    }

    /// The same moment as `instant` (its remaining time, measured now, from now).
    pub fn at(instant: Instant) -> Self {
        Self::after(instant.saturating_duration_since(Instant::now()))
    }

    /// The deadline `millis` after boot.
    pub fn from_boottime_millis(millis: u64) -> Self {
        Self(millis)
    }

    /// Milliseconds after boot.
    pub fn boottime_millis(self) -> u64 {
        self.0
    }

    /// Time left until the deadline; zero once it passed.
    pub fn remaining(self) -> Duration {
        Duration::from_millis(self.0.saturating_sub(Self::now().0))
    }
}

/// `CLOCK_BOOTTIME` in milliseconds; `None` when it cannot be read.
pub fn boottime_millis() -> Option<u64> {
    let now = clock_gettime(ClockId::CLOCK_BOOTTIME).ok()?;
    let secs = u64::try_from(now.tv_sec()).ok()?;
    let nanos = u64::try_from(now.tv_nsec()).ok()?;
    secs.checked_mul(1000)?.checked_add(nanos / 1_000_000)
}

/// One order to the keeper.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Order {
    /// Guard a run (a known key takes the new target).
    Guard {
        /// The run's key.
        key: String,
        /// How to freeze it.
        target: FenceTarget,
    },
    /// Forget a run without thawing it (the server finished or killed it).
    Release {
        /// The run's key.
        key: String,
    },
    /// Freeze every guarded run once `until` passes, unless a later `arm` comes first.
    Arm {
        /// The deadline.
        until: FenceDeadline,
    },
    /// Thaw one frozen run (refused while the deadline has passed).
    Thaw {
        /// The run's key.
        key: String,
    },
    /// No deadline: freeze nothing until the next `arm`.
    Disarm,
}

impl Order {
    /// The order as one line (without its newline); fails on a path that is not UTF-8.
    pub fn to_line(&self) -> Result<String, IsolationError> {
        serde_json::to_string(self).map_err(|e| IsolationError::Spec(format!("fence order: {e}")))
    }

    /// Reads one line; the error says why it is not an order.
    pub fn parse(line: &str) -> Result<Self, String> {
        let order: Order = serde_json::from_str(line).map_err(|e| e.to_string())?;
        match &order {
            Order::Guard { key, target } => {
                check_key(key)?;
                target.check()?;
            }
            Order::Release { key } | Order::Thaw { key } => check_key(key)?,
            Order::Arm { .. } | Order::Disarm => {}
        }
        Ok(order)
    }
}

/// Why `key` cannot name a run, if it cannot.
pub fn check_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > MAX_KEY_LEN {
        return Err(format!("a key is 1 to {MAX_KEY_LEN} bytes"));
    }
    // Keys appear in log lines; a control character could forge one.
    if key.chars().any(char::is_control) {
        return Err("a key has no control characters".to_owned());
    }
    Ok(())
}

/// What the keeper tells the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Report {
    /// The keeper started and reads orders.
    Ready {
        /// Its process id.
        pid: u32,
    },
    /// A run was frozen because the deadline passed.
    Frozen {
        /// The run's key.
        key: String,
        /// How: `cgroup <dir>` or `process group <pgid>`.
        means: String,
    },
    /// A run was thawed on the server's order.
    Thawed {
        /// The run's key.
        key: String,
    },
    /// An order was refused or an action failed.
    Failed {
        /// The run concerned, when there is one.
        key: Option<String>,
        /// What went wrong.
        error: String,
    },
}

impl Report {
    /// The report as one line (without its newline).
    pub fn to_line(&self) -> String {
        // Only strings and integers: serializing cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads one report line.
    pub fn parse(line: &str) -> Result<Self, String> {
        serde_json::from_str(line).map_err(|e| e.to_string())
    }
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Report::Ready { pid } => write!(f, "keeper {pid} ready"),
            Report::Frozen { key, means } => {
                write!(f, "deadline passed: froze run {key} ({means})")
            }
            Report::Thawed { key } => write!(f, "thawed run {key}"),
            Report::Failed {
                key: Some(key),
                error,
            } => write!(f, "run {key}: {error}"),
            Report::Failed { key: None, error } => f.write_str(error),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn orders_round_trip_and_bad_ones_are_refused() {
        let guard = Order::Guard {
            key: "task-1".to_owned(),
            target: FenceTarget {
                pgid: Some(42),
                cgroup: Some("/sys/fs/cgroup/handoff/task-1".into()),
            },
        };
        assert_eq!(Order::parse(&guard.to_line().unwrap()).unwrap(), guard);
        let arm = Order::Arm {
            until: FenceDeadline::from_boottime_millis(7),
        };
        assert_eq!(arm.to_line().unwrap(), r#"{"op":"arm","until":7}"#);
        assert_eq!(Order::parse(r#"{"op":"disarm"}"#).unwrap(), Order::Disarm);
        for bad in [
            "",
            "not json",
            r#"{"op":"explode"}"#,
            r#"{"op":"thaw","key":""}"#,
            r#"{"op":"thaw","key":"a\nb"}"#,
            r#"{"op":"guard","key":"k","target":{}}"#,
            r#"{"op":"guard","key":"k","target":{"pgid":1}}"#,
            r#"{"op":"guard","key":"k","target":{"pgid":-5}}"#,
            r#"{"op":"guard","key":"k","target":{"cgroup":"relative/dir"}}"#,
            r#"{"op":"guard","key":"k","target":{"cgroup":"/sys/fs/cgroup/../../etc"}}"#,
        ] {
            assert!(Order::parse(bad).is_err(), "{bad}");
        }
        let long = "k".repeat(MAX_KEY_LEN + 1);
        assert!(Order::parse(&format!(r#"{{"op":"release","key":"{long}"}}"#)).is_err());
    }

    #[test]
    fn deadlines_are_on_the_boot_clock() {
        let now = FenceDeadline::now();
        assert!(now.boottime_millis() > 0);
        let later = FenceDeadline::after(Duration::from_secs(60));
        assert!(later.boottime_millis() >= now.boottime_millis() + 60_000);
        assert!(later.remaining() <= Duration::from_secs(60));
        assert!(later.remaining() > Duration::from_secs(50));
        assert_eq!(
            FenceDeadline::from_boottime_millis(1).remaining(),
            Duration::ZERO
        );
        let soon = FenceDeadline::at(Instant::now() + Duration::from_secs(5));
        assert!(soon > now && soon < later);
    }
}

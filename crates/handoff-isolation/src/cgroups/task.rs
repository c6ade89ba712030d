//! One task's cgroups: created with its limits before the task starts, joined by the launcher,
//! frozen for pause, emptied for cancel, asked about OOM kills, removed at the end.

use std::{
    collections::BTreeSet,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};

use super::support::{CgroupSupport, Hierarchy};
use crate::{IsolationError, Limits};

/// Parent group of every task's group, in each hierarchy.
const PARENT: &str = "handoff";
/// How long freezing, emptying and removing may take before it is an error.
const SETTLE: Duration = Duration::from_secs(5);
const POLL: Duration = Duration::from_millis(2);

/// One task's cgroups (a directory per hierarchy used).
#[derive(Debug)]
pub struct TaskCgroup {
    /// Directory per hierarchy.
    dirs: Vec<(Hierarchy, PathBuf)>,
    memory_limit: Option<u64>,
    pids_limit: Option<u64>,
}

impl TaskCgroup {
    /// Creates the task's group `name` in every hierarchy its limits, freezing and killing
    /// need, and writes the limits. A group left by a crash under the same name is reused: the
    /// name must be of one run only (see [`crate::Isolator::prepare`]).
    pub fn create(
        support: &CgroupSupport,
        name: &str,
        limits: &Limits,
    ) -> Result<Self, IsolationError> {
        let valid = (1..=128).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !valid {
            return Err(IsolationError::Cgroup {
                path: name.to_owned(),
                message: "a cgroup name is 1-128 of A-Z a-z 0-9 _ -".to_owned(),
            });
        }
        support
            .can_limit(limits)
            .map_err(|message| IsolationError::Cgroup {
                path: name.to_owned(),
                message,
            })?;
        let mut wanted = BTreeSet::new();
        for (limit, controller) in [
            (limits.memory_bytes.is_some(), "memory"),
            (limits.cpu_millicores.is_some(), "cpu"),
            (limits.pids.is_some(), "pids"),
        ] {
            if limit && let Some(home) = support.home(controller) {
                wanted.insert(home);
            }
        }
        // cgroup2 freezes and kills the whole group at once; v1 only freezes.
        if let Some(v2) = &support.v2 {
            wanted.insert(Hierarchy::V2(v2.clone()));
        } else if let Some(freezer) = support.v1.get("freezer") {
            wanted.insert(Hierarchy::V1("freezer".to_owned(), freezer.clone()));
        }
        let mut group = Self {
            dirs: Vec::new(),
            memory_limit: limits.memory_bytes,
            pids_limit: limits.pids,
        };
        for hierarchy in wanted {
            let dir = match &hierarchy {
                Hierarchy::V1(_, mount) => create_dir(&mount.join(PARENT).join(name))?,
                Hierarchy::V2(mount) => {
                    let controllers: Vec<&str> = ["memory", "cpu", "pids"]
                        .into_iter()
                        .filter(|c| support.home(c) == Some(hierarchy.clone()))
                        .collect();
                    let parent = create_dir(&mount.join(PARENT))?;
                    if !controllers.is_empty() {
                        let enable: Vec<String> =
                            controllers.iter().map(|c| format!("+{c}")).collect();
                        write(&mount.join("cgroup.subtree_control"), &enable.join(" "))?;
                        write(&parent.join("cgroup.subtree_control"), &enable.join(" "))?;
                    }
                    create_dir(&parent.join(name))?
                }
            };
            group.dirs.push((hierarchy, dir));
        }
        group.write_limits(limits)?;
        Ok(group)
    }

    /// The groups of task `name` that exist (left by a previous Handoff), to kill and remove.
    pub fn open(support: &CgroupSupport, name: &str) -> Option<Self> {
        let mut hierarchies: Vec<Hierarchy> = support
            .v1
            .iter()
            .map(|(c, dir)| Hierarchy::V1(c.clone(), dir.clone()))
            .collect();
        hierarchies.extend(support.v2.iter().map(|dir| Hierarchy::V2(dir.clone())));
        let dirs: Vec<(Hierarchy, PathBuf)> = hierarchies
            .into_iter()
            .filter_map(|h| {
                let mount = match &h {
                    Hierarchy::V1(_, m) | Hierarchy::V2(m) => m.clone(),
                };
                let dir = mount.join(PARENT).join(name);
                (!name.is_empty() && !name.contains('/') && dir.is_dir()).then_some((h, dir))
            })
            .collect();
        (!dirs.is_empty()).then_some(Self {
            dirs,
            memory_limit: None,
            pids_limit: None,
        })
    }

    /// The names of every group that exists (in any hierarchy), whoever created it: how
    /// groups are found that no record names (the runs of a task, left by a dead Handoff).
    pub fn names(support: &CgroupSupport) -> BTreeSet<String> {
        let mounts = support.v1.values().chain(support.v2.iter());
        mounts
            .filter_map(|mount| std::fs::read_dir(mount.join(PARENT)).ok())
            .flat_map(|entries| entries.flatten())
            .filter(|entry| entry.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|entry| entry.file_name().into_string().ok())
            .collect()
    }

    fn write_limits(&self, limits: &Limits) -> Result<(), IsolationError> {
        for (hierarchy, dir) in &self.dirs {
            let v2 = matches!(hierarchy, Hierarchy::V2(_));
            let controller = match hierarchy {
                Hierarchy::V1(c, _) => c.as_str(),
                Hierarchy::V2(_) => "",
            };
            if let Some(bytes) = limits.memory_bytes {
                if v2 && dir.join("memory.max").exists() {
                    write(&dir.join("memory.max"), &bytes.to_string())?;
                    // Swapping to escape the limit would only slow the end.
                    let _ = write(&dir.join("memory.swap.max"), "0");
                } else if controller == "memory" {
                    write(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
                    let _ = write(&dir.join("memory.swappiness"), "0");
                }
            }
            if let Some(millicores) = limits.cpu_millicores {
                // Quota per 100 ms period: a thousandth of a core is 100 µs.
                let quota = (millicores * 100).max(1000);
                if v2 && dir.join("cpu.max").exists() {
                    write(&dir.join("cpu.max"), &format!("{quota} 100000"))?;
                } else if controller == "cpu" {
                    write(&dir.join("cpu.cfs_period_us"), "100000")?;
                    write(&dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
                }
            }
            if let Some(pids) = limits.pids
                && ((v2 && dir.join("pids.max").exists()) || controller == "pids")
            {
                write(&dir.join("pids.max"), &pids.to_string())?;
            }
        }
        Ok(())
    }

    /// Every `cgroup.procs` a process writes itself into to be inside all of the task's groups.
    pub fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|(_, dir)| dir.join("cgroup.procs"))
            .collect()
    }

    /// Moves process `pid` into the task's groups.
    pub fn add(&self, pid: i32) -> Result<(), IsolationError> {
        for procs in self.procs_files() {
            write(&procs, &pid.to_string())?;
        }
        Ok(())
    }

    /// The processes in the task's groups.
    pub fn pids(&self) -> Vec<i32> {
        let mut pids = BTreeSet::new();
        for procs in self.procs_files() {
            let text = std::fs::read_to_string(&procs).unwrap_or_default();
            pids.extend(text.lines().filter_map(|l| l.trim().parse::<i32>().ok()));
        }
        pids.into_iter().collect()
    }

    /// True when no process is left.
    pub fn is_empty(&self) -> bool {
        self.pids().is_empty()
    }

    fn v2(&self) -> Option<&Path> {
        self.dirs.iter().find_map(|(h, dir)| match h {
            Hierarchy::V2(_) => Some(dir.as_path()),
            Hierarchy::V1(..) => None,
        })
    }

    fn v1(&self, controller: &str) -> Option<&Path> {
        self.dirs.iter().find_map(|(h, dir)| match h {
            Hierarchy::V1(c, _) if c == controller => Some(dir.as_path()),
            _ => None,
        })
    }

    /// The directory whose freezer stops the whole group (cgroup2's, else the v1 freezer's):
    /// what a process outside Handoff (the keeper) writes to freeze the run.
    pub fn freezer_dir(&self) -> Option<PathBuf> {
        self.v2()
            .or_else(|| self.v1("freezer"))
            .map(Path::to_path_buf)
    }

    /// Stops every process of the task; returns once the kernel says they are frozen.
    pub fn freeze(&self) -> Result<(), IsolationError> {
        self.set_frozen(true)
    }

    /// Lets a frozen task run again.
    pub fn thaw(&self) -> Result<(), IsolationError> {
        self.set_frozen(false)
    }

    fn set_frozen(&self, frozen: bool) -> Result<(), IsolationError> {
        if let Some(dir) = self.v2() {
            write(&dir.join("cgroup.freeze"), if frozen { "1" } else { "0" })?;
            let want = if frozen { "frozen 1" } else { "frozen 0" };
            return settle(&dir.join("cgroup.events"), |events| {
                events.lines().any(|l| l.trim() == want)
            });
        }
        if let Some(dir) = self.v1("freezer") {
            let state = if frozen { "FROZEN" } else { "THAWED" };
            write(&dir.join("freezer.state"), state)?;
            return settle(&dir.join("freezer.state"), |s| s.trim() == state);
        }
        Err(IsolationError::Cgroup {
            path: String::new(),
            message: "no freezer for this task".to_owned(),
        })
    }

    /// Kills every process of the task and returns once none is left.
    pub fn kill(&self) -> Result<(), IsolationError> {
        let atomic = self
            .v2()
            .map(|dir| dir.join("cgroup.kill"))
            .filter(|kill| kill.exists());
        if let Some(kill) = &atomic {
            write(kill, "1")?;
        } else {
            // A frozen v1 process cannot act on SIGKILL until thawed.
            let _ = self.thaw();
        }
        let deadline = Instant::now() + SETTLE;
        loop {
            let pids = self.pids();
            if pids.is_empty() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(IsolationError::Cgroup {
                    path: self.describe(),
                    message: format!("processes {pids:?} outlived SIGKILL"),
                });
            }
            if atomic.is_none() {
                for pid in pids {
                    let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
                }
            }
            std::thread::sleep(POLL);
        }
    }

    /// How many processes the kernel killed for exceeding the memory limit.
    pub fn oom_kills(&self) -> u64 {
        let counter = |file: PathBuf| {
            std::fs::read_to_string(file).ok().and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("oom_kill "))
                    .and_then(|n| n.trim().parse().ok())
            })
        };
        self.v2()
            .map(|dir| dir.join("memory.events"))
            .filter(|f| f.exists())
            .and_then(counter)
            .or_else(|| {
                self.v1("memory")
                    .and_then(|dir| counter(dir.join("memory.oom_control")))
            })
            .unwrap_or(0)
    }

    /// The memory limit, when one is set.
    pub fn memory_limit(&self) -> Option<u64> {
        self.memory_limit
    }

    /// How many times a fork or clone failed because the task was at its process limit.
    pub fn pids_limit_hits(&self) -> u64 {
        let file = self
            .v2()
            .map(|dir| dir.join("pids.events"))
            .filter(|f| f.exists())
            .or_else(|| self.v1("pids").map(|dir| dir.join("pids.events")));
        file.and_then(|file| std::fs::read_to_string(file).ok())
            .and_then(|text| {
                text.lines()
                    .find_map(|l| l.strip_prefix("max "))
                    .and_then(|n| n.trim().parse().ok())
            })
            .unwrap_or(0)
    }

    /// The process limit, when one is set.
    pub fn pids_limit(&self) -> Option<u64> {
        self.pids_limit
    }

    /// Kills what is left and removes the groups.
    pub fn remove(&self) -> Result<(), IsolationError> {
        self.kill()?;
        for (_, dir) in &self.dirs {
            // The kernel may still hold the group a moment after its last process exits.
            let deadline = Instant::now() + SETTLE;
            loop {
                match std::fs::remove_dir(dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                    Err(e) if Instant::now() >= deadline => {
                        return Err(IsolationError::Cgroup {
                            path: dir.display().to_string(),
                            message: format!("removing: {e}"),
                        });
                    }
                    Err(_) => std::thread::sleep(POLL),
                }
            }
        }
        Ok(())
    }

    fn describe(&self) -> String {
        self.dirs
            .first()
            .map(|(_, d)| d.display().to_string())
            .unwrap_or_default()
    }
}

/// Removes task groups a crashed Handoff left behind: empty ones older than a minute (a group
/// just created by another instance is not yet joined, and must not be taken away).
pub fn sweep(support: &CgroupSupport) -> usize {
    let mounts = support.v1.values().chain(support.v2.iter());
    let mut removed = 0;
    for parent in mounts.map(|m| m.join(PARENT)) {
        let Ok(entries) = std::fs::read_dir(&parent) else {
            continue;
        };
        for dir in entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()) {
            let old = std::fs::metadata(&dir)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().is_ok_and(|age| age > Duration::from_secs(60)));
            let empty = std::fs::read_to_string(dir.join("cgroup.procs"))
                .is_ok_and(|procs| procs.trim().is_empty());
            if old && empty && std::fs::remove_dir(&dir).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

fn create_dir(dir: &Path) -> Result<PathBuf, IsolationError> {
    std::fs::create_dir_all(dir).map_err(|e| IsolationError::Cgroup {
        path: dir.display().to_string(),
        message: format!("creating: {e}"),
    })?;
    Ok(dir.to_owned())
}

fn write(file: &Path, value: &str) -> Result<(), IsolationError> {
    std::fs::write(file, value).map_err(|e| IsolationError::Cgroup {
        path: file.display().to_string(),
        message: format!("writing {value:?}: {e}"),
    })
}

/// Polls `file` until `done` says the kernel finished.
fn settle(file: &Path, done: impl Fn(&str) -> bool) -> Result<(), IsolationError> {
    let deadline = Instant::now() + SETTLE;
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        if done(&text) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(IsolationError::Cgroup {
                path: file.display().to_string(),
                message: format!("still {:?}", text.trim()),
            });
        }
        std::thread::sleep(POLL);
    }
}

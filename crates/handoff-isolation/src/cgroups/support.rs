//! Which cgroup hierarchies this host has: v1 controllers (each its own mount), a cgroup2
//! mount, and the controllers cgroup2 can hand to children.

use std::{
    collections::{BTreeMap, BTreeSet},
    path::{Path, PathBuf},
};

use serde::Serialize;

use crate::Limits;

/// v1 controllers Handoff uses.
const V1_CONTROLLERS: [&str; 4] = ["memory", "cpu", "pids", "freezer"];

/// What the host's cgroups offer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct CgroupSupport {
    /// Writable v1 hierarchies: controller → mount directory.
    pub v1: BTreeMap<String, PathBuf>,
    /// The writable cgroup2 mount.
    pub v2: Option<PathBuf>,
    /// Controllers cgroup2 offers to child groups.
    pub v2_controllers: BTreeSet<String>,
}

impl CgroupSupport {
    /// Reads this process's mounts and keeps the hierarchies it may write.
    pub fn detect() -> Self {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let mut support = Self::from_mountinfo(&text);
        support.v1.retain(|_, dir| writable(dir));
        support.v2 = support.v2.filter(|dir| writable(dir));
        if let Some(v2) = &support.v2 {
            support.v2_controllers = std::fs::read_to_string(v2.join("cgroup.controllers"))
                .unwrap_or_default()
                .split_whitespace()
                .map(str::to_owned)
                .collect();
        }
        support
    }

    /// Parses `/proc/self/mountinfo` (no filesystem access).
    pub fn from_mountinfo(text: &str) -> Self {
        let mut support = Self::default();
        for line in text.lines() {
            let Some((left, right)) = line.split_once(" - ") else {
                continue;
            };
            let Some(mount) = left.split_whitespace().nth(4) else {
                continue;
            };
            let mut right = right.split_whitespace();
            let (Some(fstype), _, Some(options)) = (right.next(), right.next(), right.next())
            else {
                continue;
            };
            match fstype {
                "cgroup2" => support.v2 = Some(PathBuf::from(mount)),
                "cgroup" => {
                    for option in options.split(',') {
                        if V1_CONTROLLERS.contains(&option) {
                            support.v1.insert(option.to_owned(), PathBuf::from(mount));
                        }
                    }
                }
                _ => {}
            }
        }
        support
    }

    /// Where a controller lives: cgroup2 when it offers it, else its v1 hierarchy.
    pub(crate) fn home(&self, controller: &str) -> Option<Hierarchy> {
        if let Some(v2) = &self.v2
            && self.v2_controllers.contains(controller)
        {
            return Some(Hierarchy::V2(v2.clone()));
        }
        self.v1
            .get(controller)
            .map(|dir| Hierarchy::V1(controller.to_owned(), dir.clone()))
    }

    /// Whether `limits` can be enforced; the error names what is missing.
    pub fn can_limit(&self, limits: &Limits) -> Result<(), String> {
        for (wanted, controller) in [
            (limits.memory_bytes.is_some(), "memory"),
            (limits.cpu_millicores.is_some(), "cpu"),
            (limits.pids.is_some(), "pids"),
        ] {
            if wanted && self.home(controller).is_none() {
                return Err(format!(
                    "a {controller} limit needs the {controller} cgroup controller (writable v1, or delegated in cgroup2)"
                ));
            }
        }
        Ok(())
    }

    /// Whether a task's processes can be frozen as one.
    pub fn can_freeze(&self) -> bool {
        self.v2.is_some() || self.v1.contains_key("freezer")
    }

    /// One line for `handoff doctor` and `health`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if !self.v1.is_empty() {
            let names: Vec<&str> = self.v1.keys().map(String::as_str).collect();
            parts.push(format!("v1 {}", names.join(", ")));
        }
        if self.v2.is_some() {
            let controllers: Vec<&str> = self
                .v2_controllers
                .iter()
                .map(String::as_str)
                .filter(|c| ["memory", "cpu", "pids"].contains(c))
                .collect();
            parts.push(if controllers.is_empty() {
                "v2 freeze, kill".to_owned()
            } else {
                format!("v2 {}, freeze, kill", controllers.join(", "))
            });
        }
        if parts.is_empty() {
            "none writable (no limits; pause by SIGSTOP)".to_owned()
        } else {
            parts.join("; ")
        }
    }
}

/// One hierarchy a task's group lives in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Hierarchy {
    /// A v1 controller's mount.
    V1(String, PathBuf),
    /// The cgroup2 mount.
    V2(PathBuf),
}

fn writable(dir: &Path) -> bool {
    nix::unistd::access(dir, nix::unistd::AccessFlags::W_OK).is_ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// This host's mounts (hybrid: v1 controllers plus an empty cgroup2).
    const HYBRID: &str = "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw";

    const PURE_V2: &str = "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate";

    #[test]
    fn hybrid_mounts_are_read() {
        let support = CgroupSupport::from_mountinfo(HYBRID);
        assert_eq!(
            support.v1.keys().collect::<Vec<_>>(),
            ["cpu", "freezer", "memory", "pids"]
        );
        assert_eq!(support.v2, Some(PathBuf::from("/sys/fs/cgroup/unified")));
        assert_eq!(
            support.home("memory"),
            Some(Hierarchy::V1(
                "memory".into(),
                "/sys/fs/cgroup/memory".into()
            ))
        );
        assert!(support.can_freeze());
        assert!(
            support
                .can_limit(&Limits {
                    memory_bytes: Some(1),
                    cpu_millicores: Some(1),
                    pids: Some(1)
                })
                .is_ok()
        );
        assert_eq!(
            support.summary(),
            "v1 cpu, freezer, memory, pids; v2 freeze, kill"
        );
    }

    #[test]
    fn pure_v2_uses_its_delegated_controllers() {
        let mut support = CgroupSupport::from_mountinfo(PURE_V2);
        assert!(support.v1.is_empty());
        let limits = Limits {
            memory_bytes: Some(1),
            ..Limits::default()
        };
        let err = support.can_limit(&limits).unwrap_err();
        assert!(err.contains("memory"), "{err}");
        support.v2_controllers = ["memory".to_owned(), "pids".to_owned()].into();
        assert!(support.can_limit(&limits).is_ok());
        assert_eq!(
            support.home("memory"),
            Some(Hierarchy::V2("/sys/fs/cgroup".into()))
        );
        assert_eq!(support.summary(), "v2 memory, pids, freeze, kill");
    }
}

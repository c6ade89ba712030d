//! What a test sees of a run's processes in `/proc` and the cgroup trees: whether they live,
//! and whether they are frozen (paused, or fenced).

use super::wait::{PATIENCE, wait_until};

/// Whether process `pid` runs (a zombie does not).
pub(super) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// The processes of group `pgid` that still run (zombies awaiting their reaper do not), as
/// `pid (command) state` — empty once the group is gone.
pub(super) fn live_group_members(pgid: i32) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return vec![format!("/proc unreadable while looking for group {pgid}")];
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (name, rest) = stat.rsplit_once(')')?;
            let fields: Vec<&str> = rest.split_whitespace().collect();
            // fields[0] is the state (field 3 of the file), fields[2] the group (field 5).
            let (state, group) = (*fields.first()?, fields.get(2)?.parse::<i32>().ok()?);
            (group == pgid && !matches!(state, "Z" | "X"))
                .then(|| format!("{pid} {name}) {state}", name = name.trim_start()))
        })
        .collect()
}

/// Whether process `pid` is frozen: stopped by a signal, or held by its cgroup's freezer (v1
/// `freezer.state`, or cgroup2's `cgroup.events`) — the ways Handoff pauses a run.
fn frozen(pid: i32) -> bool {
    let read = |path: String| std::fs::read_to_string(path).unwrap_or_default();
    let stat = read(format!("/proc/{pid}/stat"));
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.split_whitespace().next());
    if matches!(state, Some("T" | "t")) {
        return true;
    }
    read(format!("/proc/{pid}/cgroup")).lines().any(|line| {
        let mut fields = line.splitn(3, ':').skip(1);
        let (Some(controllers), Some(path)) = (fields.next(), fields.next()) else {
            return false;
        };
        let path = path.trim_start_matches('/');
        if controllers.split(',').any(|c| c == "freezer") {
            read(format!("/sys/fs/cgroup/freezer/{path}/freezer.state")).trim() == "FROZEN"
        } else {
            controllers.is_empty()
                && ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
                    .iter()
                    .any(|root| {
                        read(format!("{root}/{path}/cgroup.events"))
                            .lines()
                            .any(|l| l == "frozen 1")
                    })
        }
    })
}

/// Waits until each of `pids` is [`frozen`]; `what` names them.
pub(super) fn wait_frozen(what: &str, pids: &[i32]) {
    wait_until(&format!("{what} to be frozen"), PATIENCE, || {
        if pids.iter().all(|pid| frozen(*pid)) {
            Ok(())
        } else {
            Err(process_states(pids))
        }
    });
}

/// `pid: state (cgroups)` of each of `pids`, for a failed wait's message.
fn process_states(pids: &[i32]) -> String {
    let read = |pid: i32, what: &str| {
        std::fs::read_to_string(format!("/proc/{pid}/{what}")).unwrap_or_default()
    };
    let states: Vec<String> = pids
        .iter()
        .map(|pid| {
            let stat = read(*pid, "stat");
            let state = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().next())
                .unwrap_or("?");
            let groups = read(*pid, "cgroup").lines().collect::<Vec<_>>().join(" ");
            format!("{pid}: {state} ({groups})")
        })
        .collect();
    format!("{states:?}")
}

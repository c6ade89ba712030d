//! A test run inside a network namespace of its own, for real clients that refuse loopback and
//! private addresses (Letta's MCP client): the test re-runs itself under `unshare --net`, checks
//! that the namespace it landed in is fresh and has only `lo` with no route anywhere, and only
//! then puts a globally routable address on `lo`. A packet to that address cannot leave the
//! namespace: there is no interface for it to leave through.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use super::wait::exit_within;

/// The globally routable address put on `lo` inside the namespace (`is_global` is true for it,
/// so Letta accepts it). Never used outside a namespace [`confine`] checked.
pub const PUBLIC_ADDRESS: &str = "11.0.0.1";

/// The variable that tells a re-run test which test it is running as.
const INSIDE: &str = "HANDOFF_TEST_NETNS_INSIDE";
/// The variable carrying the namespace the outer test ran in, which the inner one must not be in.
const PARENT: &str = "HANDOFF_TEST_NETNS_PARENT";

/// Whether this process is the namespace re-run of `test`.
pub fn inside(test: &str) -> bool {
    std::env::var(INSIDE).is_ok_and(|v| v == test)
}

/// Runs `test` (its full path in this test binary, e.g. `suite::letta_netns::inner`) in a new
/// network namespace, with `env` added, and panics unless it passes within `limit`. `cleanup`
/// runs afterwards whatever happened (the inner test may have been killed mid-way), told whether
/// the inner test passed so that it can show what a failure left behind.
pub fn run_inside(test: &str, env: &[(&str, &Path)], limit: Duration, cleanup: impl FnOnce(bool)) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let parent = own_namespace();
    let mut child = Command::new("unshare")
        .arg("--net")
        .arg("--")
        .arg(exe)
        .args(["--exact", test, "--include-ignored", "--nocapture"])
        .args(["--test-threads", "1"])
        .env(INSIDE, test)
        .env(PARENT, parent)
        .envs(env.iter().map(|(k, v)| (*k, *v)))
        .stdin(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run `unshare --net` (util-linux, and root): {e}"));
    let status = exit_within(&mut child, limit);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    cleanup(status.is_some_and(|s| s.success()));
    match status {
        Some(status) => assert!(
            status.success(),
            "{test} failed inside its network namespace ({status}); its output is above"
        ),
        None => panic!("{test} did not finish within {limit:?} inside its network namespace"),
    }
}

/// Checks that this process is in a fresh network namespace whose only interface is `lo` and
/// which has no route, then brings `lo` up with [`PUBLIC_ADDRESS`] on it and checks again.
/// Panics, before touching anything, when any check fails.
pub fn confine() {
    // (PID 1's namespace cannot be read in every sandbox; the outer test's always can.)
    let parent = std::env::var(PARENT).expect("the outer test's namespace");
    assert_ne!(
        own_namespace(),
        parent,
        "refusing to use {PUBLIC_ADDRESS}: this process is in the outer test's network namespace"
    );
    assert_only_lo("before configuring it");
    run("ip", &["link", "set", "lo", "up"]);
    run(
        "ip",
        &["addr", "add", &format!("{PUBLIC_ADDRESS}/32"), "dev", "lo"],
    );
    assert_only_lo("after configuring it");
}

/// This process's network namespace, as `net:[inode]`.
fn own_namespace() -> String {
    std::fs::read_link("/proc/self/ns/net")
        .expect("reading /proc/self/ns/net")
        .to_string_lossy()
        .into_owned()
}

/// The namespace has `lo` alone and no route through any other interface.
fn assert_only_lo(when: &str) {
    let interfaces = interfaces();
    assert_eq!(
        interfaces,
        ["lo"],
        "refusing to use {PUBLIC_ADDRESS}: the namespace has interfaces {interfaces:?} {when}"
    );
    let routes = std::fs::read_to_string("/proc/self/net/route").expect("reading the routes");
    let ipv4: Vec<&str> = routes.lines().skip(1).collect();
    assert!(
        ipv4.is_empty(),
        "refusing to use {PUBLIC_ADDRESS}: IPv4 routes {ipv4:?} {when}"
    );
    let ipv6 = std::fs::read_to_string("/proc/self/net/ipv6_route").unwrap_or_default();
    let out: Vec<&str> = ipv6
        .lines()
        .filter(|l| l.split_whitespace().last() != Some("lo"))
        .collect();
    assert!(
        out.is_empty(),
        "refusing to use {PUBLIC_ADDRESS}: IPv6 routes not through lo {out:?} {when}"
    );
}

/// The interfaces this process's namespace has (`/proc/self/net/dev` is per namespace, unlike
/// `/sys/class/net`, which shows the namespace sysfs was mounted in).
fn interfaces() -> Vec<String> {
    let dev = std::fs::read_to_string("/proc/self/net/dev").expect("reading /proc/self/net/dev");
    dev.lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(|name| name.trim().to_owned())
        .collect()
}

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} (iproute2): {e}"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

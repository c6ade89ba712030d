//! The bubblewrap command line, built as data so it can be checked exactly.

use std::{
    ffi::OsString,
    path::{Path, PathBuf},
};

use crate::NetworkMode;

/// What the sandbox looks like from inside.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BwrapSpec {
    /// The `bwrap` program.
    pub bwrap: PathBuf,
    /// The task directory: the only writable place, at its own path.
    pub workdir: PathBuf,
    /// Network mode.
    pub network: NetworkMode,
    /// Writable besides the task directory.
    pub writable: Vec<PathBuf>,
    /// Covered by an empty tmpfs (Handoff's data, other tasks' directories).
    pub hide: Vec<PathBuf>,
    /// Under `/tmp` but needed inside (the launcher, the agent's program), read-only.
    pub expose: Vec<PathBuf>,
    /// What runs inside.
    pub argv: Vec<OsString>,
}

/// The full `bwrap …` argv (the program first).
pub fn bwrap_args(spec: &BwrapSpec) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![spec.bwrap.clone().into()];
    // The whole system, read-only; fresh /dev, /proc and a private /tmp.
    args.extend(
        [
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
        ]
        .map(OsString::from),
    );
    // The private /tmp covers programs installed under the host's /tmp.
    for exposed in spec.expose.iter().filter(|p| p.exists()) {
        bind(&mut args, "--ro-bind", exposed);
    }
    // Hidden trees next: the binds below are mounted over them.
    for hidden in spec.hide.iter().filter(|p| p.exists()) {
        if hidden.is_dir() {
            args.extend(["--tmpfs".into(), hidden.clone().into_os_string()]);
        } else {
            // A file (a provider's key): an empty one in its place.
            args.extend(["--ro-bind".into(), "/dev/null".into()]);
            args.push(hidden.clone().into_os_string());
        }
    }
    for dir in std::iter::once(&spec.workdir).chain(&spec.writable) {
        bind(&mut args, "--bind", dir);
    }
    args.extend(["--chdir".into(), spec.workdir.clone().into_os_string()]);
    // Own pids (no host process visible or signalable), IPC, hostname and cgroup view.
    for flag in [
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ] {
        args.push(flag.into());
    }
    if spec.network == NetworkMode::Off {
        // Only a private loopback is left.
        args.push("--unshare-net".into());
    }
    // As root, root inside would be real root.
    args.extend(["--cap-drop".into(), "ALL".into()]);
    // Nothing inside outlives the sandbox's parent.
    args.push("--die-with-parent".into());
    args.extend([
        "--setenv".into(),
        "PWD".into(),
        spec.workdir.clone().into_os_string(),
        "--".into(),
    ]);
    args.extend(spec.argv.iter().cloned());
    args
}

/// Mounts `path` at its own path inside.
fn bind(args: &mut Vec<OsString>, flag: &str, path: &Path) {
    args.extend([flag.into(), path.into(), path.into()]);
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|a| a.into_string().unwrap()).collect()
    }

    #[test]
    fn shared_network_sandbox_is_exact() {
        let args = bwrap_args(&BwrapSpec {
            bwrap: "/usr/bin/bwrap".into(),
            workdir: "/w/task_a".into(),
            network: NetworkMode::Shared,
            writable: Vec::new(),
            hide: vec!["/nonexistent-handoff-path".into()],
            expose: Vec::new(),
            argv: vec!["sh".into(), "-c".into(), "true".into()],
        });
        assert_eq!(
            strings(args),
            [
                "/usr/bin/bwrap",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--tmpfs",
                "/tmp",
                "--bind",
                "/w/task_a",
                "/w/task_a",
                "--chdir",
                "/w/task_a",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--cap-drop",
                "ALL",
                "--die-with-parent",
                "--setenv",
                "PWD",
                "/w/task_a",
                "--",
                "sh",
                "-c",
                "true"
            ]
        );
    }

    #[test]
    fn a_hidden_file_is_replaced_by_an_empty_one() {
        let args = strings(bwrap_args(&BwrapSpec {
            bwrap: "bwrap".into(),
            workdir: "/w/task_a".into(),
            network: NetworkMode::Shared,
            writable: Vec::new(),
            hide: vec!["/etc/passwd".into()],
            expose: Vec::new(),
            argv: vec!["agent".into()],
        }));
        let at = args.iter().position(|a| a == "/etc/passwd").unwrap();
        assert_eq!(args[at - 2..at], ["--ro-bind", "/dev/null"]);
    }

    #[test]
    fn network_off_hides_and_extra_binds_are_exact() {
        let args = bwrap_args(&BwrapSpec {
            bwrap: "bwrap".into(),
            workdir: "/w/task_a".into(),
            network: NetworkMode::Off,
            writable: vec!["/state".into()],
            hide: vec!["/".into()],
            expose: vec!["/".into()],
            argv: vec!["agent".into()],
        });
        assert_eq!(
            strings(args),
            [
                "bwrap",
                "--ro-bind",
                "/",
                "/",
                "--dev",
                "/dev",
                "--proc",
                "/proc",
                "--tmpfs",
                "/tmp",
                "--ro-bind",
                "/",
                "/",
                "--tmpfs",
                "/",
                "--bind",
                "/w/task_a",
                "/w/task_a",
                "--bind",
                "/state",
                "/state",
                "--chdir",
                "/w/task_a",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
                "--unshare-cgroup-try",
                "--unshare-net",
                "--cap-drop",
                "ALL",
                "--die-with-parent",
                "--setenv",
                "PWD",
                "/w/task_a",
                "--",
                "agent"
            ]
        );
    }
}

//! The isolation levels for real: the launcher (`handoff-isolate`), bubblewrap, Landlock,
//! seccomp and cgroups on this host, against the behaviours a sandboxed task must show.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    ffi::OsString,
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Child, Command, Output, Stdio},
    sync::Arc,
};

mod waits;

use handoff_isolation::{
    HostCapabilities, IsolationConfig, IsolationLevel, Isolator, Limits, NetworkMode, Prepared,
};

fn isolator() -> Isolator {
    let host = HostCapabilities::detect(Path::new("/usr/bin/bwrap"), Path::new("docker"));
    assert!(
        host.bwrap.is_ok(),
        "bubblewrap must work here (apt-get install bubblewrap): {:?}",
        host.bwrap
    );
    Isolator::new(
        vec![env!("CARGO_BIN_EXE_handoff-isolate").to_owned()],
        PathBuf::from("docker"),
        Arc::new(host),
    )
}

fn sandbox(network: NetworkMode, limits: Limits) -> IsolationConfig {
    IsolationConfig {
        level: IsolationLevel::Sandbox,
        network,
        limits,
        ..IsolationConfig::default()
    }
}

/// A unique cgroup name per test.
fn name(test: &str) -> String {
    format!("handoff-test-{}-{test}", std::process::id())
}

fn secrets() -> Vec<(OsString, OsString)> {
    let mut vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    for secret in ["LETTA_API_TOKEN", "HANDOFF_AUTH_TOKEN"] {
        vars.push((secret.into(), "s3cret".into()));
    }
    vars
}

fn spawn(prepared: &Prepared, workdir: &Path) -> Child {
    let mut command = Command::new(&prepared.program);
    command
        .args(&prepared.args)
        .current_dir(workdir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if prepared.env_clear {
        command.env_clear();
    }
    command.envs(prepared.env.iter().map(|(k, v)| (k, v)));
    command.spawn().unwrap()
}

fn sh(script: &str) -> Vec<OsString> {
    vec!["sh".into(), "-c".into(), script.into()]
}

/// Runs `script` confined by `config`; returns its output and the prepared run (for its cgroup).
fn run(config: &IsolationConfig, test: &str, workdir: &Path, script: &str) -> (Output, Prepared) {
    let prepared = isolator()
        .prepare(config, &name(test), workdir, &sh(script), secrets(), &[])
        .unwrap();
    let output = spawn(&prepared, workdir).wait_with_output().unwrap();
    (output, prepared)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn cleanup(prepared: &Prepared) {
    if let Some(cgroup) = &prepared.cgroup {
        cgroup.remove().unwrap();
    }
}

#[test]
fn a_sandboxed_task_writes_only_its_own_directory() {
    let root = tempfile::tempdir().unwrap();
    let task = root.path().join("task_a");
    let other = root.path().join("task_b");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::create_dir_all(&other).unwrap();
    let home = tempfile::tempdir().unwrap();
    let mut config = sandbox(NetworkMode::Shared, Limits::default());
    config.hide = vec![root.path().to_owned()];
    let script = format!(
        "echo inside > inside.txt && echo wrote-inside; \
         echo x > /etc/handoff-escape 2>/dev/null && echo wrote-etc; \
         echo x > {other}/escape 2>/dev/null && echo wrote-other; \
         echo x > {home}/escape 2>/dev/null && echo wrote-home; \
         ls {other} >/dev/null 2>&1 && echo saw-other; \
         echo x > /tmp/{scratch} && echo wrote-tmp",
        other = other.display(),
        home = home.path().display(),
        scratch = name("scratch"),
    );
    let (output, prepared) = run(&config, "write", &task, &script);
    let out = text(&output.stdout);
    assert!(
        out.contains("wrote-inside"),
        "{out}\n{}",
        text(&output.stderr)
    );
    assert!(out.contains("wrote-tmp"), "private /tmp is writable: {out}");
    for escape in ["wrote-etc", "wrote-other", "wrote-home", "saw-other"] {
        assert!(!out.contains(escape), "{escape}: {out}");
    }
    assert_eq!(
        std::fs::read_to_string(task.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(!Path::new("/etc/handoff-escape").exists());
    assert!(!other.join("escape").exists());
    assert!(!home.path().join("escape").exists());
    assert!(
        !Path::new("/tmp").join(name("scratch")).exists(),
        "the sandbox's /tmp is private"
    );
    cleanup(&prepared);
}

#[test]
fn a_sandboxed_task_sees_no_host_process_and_cannot_signal_handoff() {
    let dir = tempfile::tempdir().unwrap();
    let me = std::process::id();
    let script = format!(
        "ls /proc | grep -c '^[0-9]'; kill -0 {me} 2>/dev/null && echo signalled; \
         test -e /proc/{me} && echo saw-handoff; true"
    );
    let (output, prepared) = run(
        &sandbox(NetworkMode::Shared, Limits::default()),
        "procs",
        dir.path(),
        &script,
    );
    let out = text(&output.stdout);
    let count: u32 = out.lines().next().unwrap().trim().parse().unwrap();
    assert!(count < 10, "{count} processes visible: {out}");
    assert!(
        !out.contains("signalled") && !out.contains("saw-handoff"),
        "{out}"
    );
    cleanup(&prepared);
}

#[test]
fn no_inherited_secret_reaches_the_task() {
    let dir = tempfile::tempdir().unwrap();
    for level in [IsolationLevel::Process, IsolationLevel::Sandbox] {
        let config = IsolationConfig {
            level,
            ..IsolationConfig::default()
        };
        let (output, prepared) = run(&config, &format!("env-{level}"), dir.path(), "env");
        let env = text(&output.stdout);
        assert!(env.contains("PATH="), "{level}: {env}");
        for secret in ["LETTA_API_TOKEN", "HANDOFF_AUTH_TOKEN", "s3cret"] {
            assert!(!env.contains(secret), "{level}: {secret} leaked:\n{env}");
        }
        if level == IsolationLevel::Sandbox {
            assert!(env.contains("TMPDIR=/tmp\n"), "the private /tmp: {env}");
        }
        cleanup(&prepared);
    }
}

#[test]
fn with_network_off_the_task_cannot_reach_handoff() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\" 2>&1"
    );
    let (shared, prepared) = run(
        &sandbox(NetworkMode::Shared, Limits::default()),
        "net-shared",
        dir.path(),
        &script,
    );
    assert!(
        text(&shared.stdout).contains("connected"),
        "{}",
        text(&shared.stdout)
    );
    cleanup(&prepared);
    let (off, prepared) = run(
        &sandbox(NetworkMode::Off, Limits::default()),
        "net-off",
        dir.path(),
        &script,
    );
    let out = text(&off.stdout);
    assert!(!out.contains("connected"), "{out}");
    assert!(
        out.contains("Error"),
        "the connection must fail, not hang: {out}"
    );
    cleanup(&prepared);
}

#[test]
fn a_memory_hog_is_oom_killed_at_the_limit_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        memory_bytes: Some(64 << 20),
        ..Limits::default()
    };
    let (output, prepared) = run(
        &sandbox(NetworkMode::Shared, limits),
        "oom",
        dir.path(),
        "python3 -c 'b = bytearray(512 * 1024 * 1024); print(\"survived\")'",
    );
    assert!(!output.status.success());
    assert!(!text(&output.stdout).contains("survived"));
    let cgroup = prepared.cgroup.as_ref().unwrap();
    assert!(cgroup.oom_kills() >= 1, "no OOM kill recorded");
    assert_eq!(cgroup.memory_limit(), Some(64 << 20));
    cleanup(&prepared);
}

#[test]
fn a_fork_bomb_stops_at_the_pids_limit() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        pids: Some(32),
        ..Limits::default()
    };
    // Each fork holds its pid until the bomb ends: it waits for the end of a pipe only the
    // bomb keeps open.
    let script = "python3 -c \"
import os
n = 0
r, w = os.pipe()
try:
    while n < 1000:
        if os.fork() == 0:
            os.close(w); os.read(r, 1); os._exit(0)
        n += 1
except OSError as e:
    print('stopped at', n)
\"";
    let (output, prepared) = run(
        &sandbox(NetworkMode::Shared, limits),
        "pids",
        dir.path(),
        script,
    );
    let out = text(&output.stdout);
    let stopped: u32 = out
        .trim()
        .strip_prefix("stopped at ")
        .unwrap_or_else(|| panic!("the bomb was not stopped: {out}"))
        .parse()
        .unwrap();
    assert!(stopped < 32, "{stopped} forks under a limit of 32");
    // The kernel counted the refused fork: how a failed run learns it hit the limit.
    let cgroup = prepared.cgroup.as_ref().unwrap();
    assert!(cgroup.pids_limit_hits() >= 1, "no refused fork counted");
    assert_eq!(cgroup.pids_limit(), Some(32));
    cleanup(&prepared);
}

fn counter(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

#[test]
fn pause_stops_progress_resume_continues_and_cancel_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let prepared = isolator()
        .prepare(
            &sandbox(NetworkMode::Shared, Limits::default()),
            &name("pause"),
            dir.path(),
            // A child that leaves the process group must not escape pause or cancel either.
            &sh("setsid sh -c 'sleep 300' & i=0; while :; do i=$((i+1)); echo $i > count; sleep 0.01; done"),
            secrets(),
            &[],
        )
        .unwrap();
    let mut child = spawn(&prepared, dir.path());
    let count = dir.path().join("count");
    waits::wait_for("the counter to start", || counter(&count) >= 5);
    let cgroup = prepared.cgroup.as_ref().unwrap();
    // Returns once the kernel says every process of the cgroup is frozen.
    cgroup.freeze().unwrap();
    let frozen_at = waits::assert_unchanged("progress while paused", || counter(&count));
    cgroup.thaw().unwrap();
    // Polled, not slept: on a loaded machine the thawed loop may wait for a CPU (a fixed
    // 400 ms once saw no step in CI).
    waits::wait_for("progress after resume", || counter(&count) > frozen_at);
    assert!(cgroup.pids().len() >= 3, "{:?}", cgroup.pids());
    cgroup.kill().unwrap();
    let _ = child.wait();
    assert!(cgroup.is_empty(), "left behind: {:?}", cgroup.pids());
    cleanup(&prepared);
}

#[test]
fn the_process_level_keeps_the_host_view_but_scrubs_and_limits() {
    let dir = tempfile::tempdir().unwrap();
    let config = IsolationConfig {
        level: IsolationLevel::Process,
        ..IsolationConfig::default()
    };
    let (output, prepared) = run(
        &config,
        "process",
        dir.path(),
        "ulimit -c; ulimit -n; ulimit -f; ps -o sid= -p $$; echo $$",
    );
    let out = text(&output.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "0", "no core dumps: {out}");
    assert!(lines[1].parse::<u64>().unwrap() <= 65_536, "{out}");
    // `ulimit -f` counts 512-byte blocks (dash) or KiB (bash); either way bounded.
    assert_ne!(lines[2], "unlimited", "{out}");
    // Its own session: the session id is the shell's own pid (the launcher exec'd into it).
    assert_eq!(lines[3].trim(), lines[4].trim(), "{out}");
    cleanup(&prepared);
}

#[test]
fn unavailable_levels_are_refused_not_weakened() {
    let isolator = isolator();
    let container = IsolationConfig {
        level: IsolationLevel::Container,
        image: Some("alpine".into()),
        ..IsolationConfig::default()
    };
    if isolator.host().docker.version().is_err() {
        let err = isolator.check(&container).unwrap_err().to_string();
        assert!(
            err.contains("container") && err.contains("not available"),
            "{err}"
        );
        eprintln!(
            "NOTE: no Docker engine here; the container level is reported unavailable, its live tests do not run"
        );
    }
    let no_launcher = Isolator::new(
        Vec::new(),
        PathBuf::from("docker"),
        Arc::new(isolator.host().clone()),
    );
    let err = no_launcher
        .check(&IsolationConfig::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("launcher"), "{err}");
}

#[test]
fn without_bubblewrap_landlock_and_seccomp_still_confine() {
    let mut host = HostCapabilities::detect(Path::new("/usr/bin/bwrap"), Path::new("docker"));
    assert!(
        host.landlock && host.seccomp,
        "Landlock and seccomp must be available here"
    );
    host.bwrap = Err("pretend user namespaces are off".to_owned());
    let isolator = Isolator::new(
        vec![env!("CARGO_BIN_EXE_handoff-isolate").to_owned()],
        PathBuf::from("docker"),
        Arc::new(host),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let script = format!(
        "echo in > inside.txt && echo wrote-inside; \
         echo x > {outside}/escape 2>/dev/null && echo wrote-outside; \
         python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=3); print('connected')\" 2>&1; \
         python3 -c \"import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM); print('udp')\" 2>&1; \
         python3 -c \"import socket; socket.socket(socket.AF_UNIX); print('unix')\" 2>&1; \
         kill -0 {me} 2>/dev/null && echo signalled",
        outside = outside.path().display(),
        me = std::process::id()
    );
    let prepared = isolator
        .prepare(
            &sandbox(NetworkMode::Off, Limits::default()),
            &name("landlock"),
            dir.path(),
            &sh(&script),
            secrets(),
            &[],
        )
        .unwrap();
    let output = spawn(&prepared, dir.path()).wait_with_output().unwrap();
    let out = text(&output.stdout);
    assert!(
        out.contains("wrote-inside"),
        "{out}\n{}",
        text(&output.stderr)
    );
    assert!(!out.contains("wrote-outside"), "{out}");
    assert!(!outside.path().join("escape").exists());
    assert!(
        !out.contains("connected") && !out.contains("udp\n"),
        "{out}"
    );
    assert!(out.contains("unix"), "Unix sockets stay usable: {out}");
    assert!(!out.contains("signalled"), "Landlock scopes signals: {out}");
    cleanup(&prepared);
}

#[test]
fn cpu_limits_become_a_cfs_quota() {
    let host = HostCapabilities::detect(Path::new("/usr/bin/bwrap"), Path::new("docker"));
    let limits = Limits {
        cpu_millicores: Some(1500),
        ..Limits::default()
    };
    let group =
        handoff_isolation::cgroups::TaskCgroup::create(&host.cgroups, &name("cpu"), &limits)
            .unwrap();
    let quota = group
        .procs_files()
        .iter()
        .filter_map(|procs| procs.parent())
        .find_map(|dir| {
            std::fs::read_to_string(dir.join("cpu.cfs_quota_us"))
                .or_else(|_| std::fs::read_to_string(dir.join("cpu.max")))
                .ok()
        })
        .unwrap();
    assert!(quota.starts_with("150000"), "{quota}");
    group.remove().unwrap();
}

/// The container level needs a Docker engine; where none answers (these machines) the level is
/// reported unavailable, and this says so loudly instead of passing quietly.
#[test]
fn the_container_level_runs_where_an_engine_answers() {
    let isolator = isolator();
    if let Err(why) = isolator.host().docker.version() {
        eprintln!("SKIPPED: the container level's live test needs a Docker engine ({why})");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let config = IsolationConfig {
        level: IsolationLevel::Container,
        image: Some(
            std::env::var("HANDOFF_TEST_CONTAINER_IMAGE").unwrap_or_else(|_| "alpine:3".into()),
        ),
        limits: Limits {
            memory_bytes: Some(256 << 20),
            pids: Some(64),
            ..Limits::default()
        },
        ..IsolationConfig::default()
    };
    let prepared = isolator
        .prepare(
            &config,
            &name("container"),
            dir.path(),
            &sh("echo inside > /workspace/inside.txt; env"),
            secrets(),
            &[],
        )
        .unwrap();
    let output = spawn(&prepared, dir.path()).wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(!text(&output.stdout).contains("s3cret"));
    assert!(dir.path().join("inside.txt").exists());
}

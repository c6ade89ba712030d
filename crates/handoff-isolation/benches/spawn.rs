//! Spawn overhead per isolation level: median (and p90) of 50 runs of `/bin/true` from
//! preparing the command (cgroup creation included) to its exit, plain fork+exec as the
//! baseline measured in the same run; removing the cgroups afterwards is reported apart.
//!
//! `cargo bench -p handoff-isolation --bench spawn`

// A benchmark: a failed unwrap is a failed run with its message.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::{
    ffi::OsString,
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Command, Stdio},
    sync::Arc,
    time::{Duration, Instant},
};

use handoff_isolation::{
    HostCapabilities, IsolationConfig, IsolationLevel, Isolator, Limits, NetworkMode,
};

const RUNS: usize = 50;

fn main() {
    let host = HostCapabilities::detect(Path::new("/usr/bin/bwrap"), Path::new("docker"));
    let isolator = Isolator::new(
        vec![env!("CARGO_BIN_EXE_handoff-isolate").to_owned()],
        PathBuf::from("docker"),
        Arc::new(host),
    );
    let dir = tempfile::tempdir().unwrap();
    let argv: Vec<OsString> = vec!["/bin/true".into()];
    let plain = measure(|| {
        let status = Command::new("/bin/true")
            .current_dir(dir.path())
            .process_group(0)
            .status()
            .unwrap();
        assert!(status.success());
    });
    let limits = Limits {
        memory_bytes: Some(512 << 20),
        cpu_millicores: Some(1000),
        pids: Some(256),
    };
    let level = |level, limits| IsolationConfig {
        level,
        network: NetworkMode::Shared,
        limits,
        ..IsolationConfig::default()
    };
    let cases = [
        ("process", level(IsolationLevel::Process, Limits::default())),
        ("sandbox", level(IsolationLevel::Sandbox, Limits::default())),
        ("sandbox+cgroups", level(IsolationLevel::Sandbox, limits)),
    ];
    println!("spawn of /bin/true, {RUNS} runs each (median / p90, and the median over plain)");
    println!(
        "{:<18} {:>10} {:>10} {:>8}",
        "level", "median", "p90", "ratio"
    );
    print_row("plain", plain, plain.0);
    for (n, (name, config)) in cases.iter().enumerate() {
        let mut i = 0;
        // Removing a group is not spawn overhead (it happens after the task, off its path).
        let mut done = Vec::new();
        let figures = measure(|| {
            i += 1;
            let prepared = isolator
                .prepare(
                    config,
                    &format!("bench-{}-{n}-{i}", std::process::id()),
                    dir.path(),
                    &argv,
                    std::env::vars_os(),
                    &[],
                )
                .unwrap();
            let mut command = Command::new(&prepared.program);
            command
                .args(&prepared.args)
                .current_dir(dir.path())
                .env_clear()
                .envs(prepared.env.iter().map(|(k, v)| (k, v)))
                .stdin(Stdio::null());
            let status = command.status().unwrap();
            assert!(status.success(), "{name}: {status}");
            done.push(prepared);
        });
        let removing = Instant::now();
        for prepared in &done {
            if let Some(cgroup) = &prepared.cgroup {
                cgroup.remove().unwrap();
            }
        }
        print_row(name, figures, plain.0);
        println!(
            "{:<18} {:>8.2}ms per group, after the run",
            "  cgroup removal",
            removing.elapsed().as_secs_f64() * 1e3 / RUNS as f64
        );
    }
}

/// (median, p90) of [`RUNS`] timed calls of `run`.
fn measure(mut run: impl FnMut()) -> (Duration, Duration) {
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let started = Instant::now();
            run();
            started.elapsed()
        })
        .collect();
    times.sort();
    (times[RUNS / 2], times[RUNS * 9 / 10])
}

fn print_row(name: &str, (median, p90): (Duration, Duration), baseline: Duration) {
    println!(
        "{name:<18} {:>8.2}ms {:>8.2}ms {:>7.1}x",
        median.as_secs_f64() * 1e3,
        p90.as_secs_f64() * 1e3,
        median.as_secs_f64() / baseline.as_secs_f64()
    );
}

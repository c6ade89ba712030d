//! The keeper for real: `handoff-isolate keeper` freezing a live process group (and a cgroup,
//! where this host lets us write one) once the deadline passes, with no word from the server
//! after the `arm` — also while the server itself is stopped — and thawing it on order.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::{
    io::{BufRead, BufReader, Write},
    os::unix::process::CommandExt,
    path::{Path, PathBuf},
    process::{Child, ChildStdin, Command, Stdio},
    sync::{
        Arc, Mutex,
        mpsc::{Receiver, channel},
    },
    time::{Duration, Instant},
};

use handoff_isolation::{
    Limits,
    cgroups::{CgroupSupport, TaskCgroup},
    keeper::{FenceDeadline, FenceTarget, MAX_LINE, Order, Report},
};
use nix::{
    sys::signal::{Signal, killpg},
    unistd::Pid,
};

mod waits;

use waits::{PATIENCE, assert_unchanged, wait_for};

const DEADLINE: Duration = Duration::from_millis(300);

/// The state letter of `/proc/<pid>/stat` (`T`: stopped), `None` once the process is gone.
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

/// The keeper, spoken to over its stdin, heard through its stdout and stderr.
struct Keeper {
    child: Child,
    stdin: Option<ChildStdin>,
    reports: Receiver<Report>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Keeper {
    /// `handoff-isolate keeper`, the test being its server.
    fn start() -> Self {
        let mut command = Command::new(env!("CARGO_BIN_EXE_handoff-isolate"));
        command.args(["keeper", &std::process::id().to_string()]);
        Self::spawn(command)
    }

    fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (tx, reports) = channel();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        std::thread::spawn(move || {
            for line in stdout.lines().map_while(Result::ok) {
                let _ = tx.send(Report::parse(&line).unwrap());
            }
        });
        let log = Arc::new(Mutex::new(Vec::new()));
        let stderr = BufReader::new(child.stderr.take().unwrap());
        let lines = Arc::clone(&log);
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("{line}");
                lines.lock().unwrap().push(line);
            }
        });
        let stdin = child.stdin.take();
        Self {
            child,
            stdin,
            reports,
            log,
        }
    }

    fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn send(&mut self, order: &Order) {
        self.send_line(&order.to_line().unwrap());
    }

    /// The next report that `wanted` accepts (others are skipped).
    fn expect(&self, what: &str, wanted: impl Fn(&Report) -> bool) -> Report {
        let give_up = Instant::now() + PATIENCE;
        loop {
            let left = give_up.saturating_duration_since(Instant::now());
            let report = self
                .reports
                .recv_timeout(left)
                .unwrap_or_else(|e| panic!("no report {what}: {e}"));
            if wanted(&report) {
                return report;
            }
        }
    }

    /// The keeper's pid, from its first report.
    fn ready(&self) -> i32 {
        match self.expect("ready", |r| matches!(r, Report::Ready { .. })) {
            Report::Ready { pid } => i32::try_from(pid).unwrap(),
            _ => unreachable!(),
        }
    }

    fn logged(&self, text: &str) -> bool {
        self.log.lock().unwrap().iter().any(|l| l.contains(text))
    }
}

impl Drop for Keeper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A run stand-in: a shell loop in a process group of its own appending a line every 50 ms.
struct Worker {
    child: Child,
    file: PathBuf,
    _dir: tempfile::TempDir,
}

impl Worker {
    /// Starts the loop, inside the cgroup whose `cgroup.procs` is `procs` when given (joined
    /// before the loop forks anything), and with it a second loop in a session of its own
    /// (`escaped`: a process that left the run's group; bounded to 30 s should it leak).
    fn start(procs: Option<&Path>, escaped: bool) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("ticks");
        let join = procs.map_or(String::new(), |p| {
            format!("echo 0 > '{}' || exit 1; ", p.display())
        });
        let escapee = if escaped {
            format!(
                "setsid bash -c 'for i in $(seq 600); do date +%s%N >> \"$0\"; sleep 0.05; done' '{}' >/dev/null 2>&1 & ",
                dir.path().join("escaped").display()
            )
        } else {
            String::new()
        };
        let script = format!(
            "{join}{escapee}exec bash -c 'while true; do date +%s%N >> \"$0\"; sleep 0.05; done' '{}'",
            file.display()
        );
        let child = std::process::Command::new("sh")
            .args(["-c", &script])
            .stdin(Stdio::null())
            .process_group(0)
            .spawn()
            .unwrap();
        let worker = Self {
            child,
            file,
            _dir: dir,
        };
        wait_for("the worker's first ticks", || worker.ticks() >= 2);
        worker
    }

    fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).unwrap()
    }

    fn group(&self) -> FenceTarget {
        FenceTarget {
            pgid: Some(self.pid()),
            cgroup: None,
        }
    }

    fn ticks(&self) -> usize {
        count_lines(&self.file)
    }

    fn escaped_ticks(&self) -> usize {
        count_lines(&self.file.with_file_name("escaped"))
    }

    /// No tick for a while (a negative can only be shown over some time).
    fn assert_still(&self) {
        assert_unchanged("the worker went on while frozen", || {
            (self.ticks(), self.escaped_ticks())
        });
    }

    fn assert_ticking(&self) {
        let before = self.ticks();
        wait_for("the worker to tick again", || self.ticks() > before);
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let group = Pid::from_raw(self.pid());
        let _ = killpg(group, Signal::SIGKILL);
        let _ = killpg(group, Signal::SIGCONT);
        let _ = self.child.wait();
    }
}

fn count_lines(file: &Path) -> usize {
    std::fs::read_to_string(file)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn guard(key: &str, target: FenceTarget) -> Order {
    Order::Guard {
        key: key.to_owned(),
        target,
    }
}

/// The worker is not stopped at any moment known to be before `until`.
fn assert_not_early(worker: &Worker, until: FenceDeadline) {
    let seen = state(worker.pid());
    if FenceDeadline::now() < until {
        assert_ne!(seen, Some('T'), "frozen before the deadline");
    }
}

#[test]
fn the_keeper_stops_a_group_at_the_deadline_without_further_orders_and_thaws_on_order() {
    let worker = Worker::start(None, false);
    let mut keeper = Keeper::start();
    keeper.ready();
    // Garbage first: logged and ignored, and the keeper goes on.
    keeper.send_line("not an order");
    keeper.send_line(r#"{"op":"guard","key":"x","target":{"pgid":1}}"#);
    keeper.send_line(&"z".repeat(MAX_LINE * 2));
    keeper.send(&guard("run-1", worker.group()));
    let until = FenceDeadline::after(DEADLINE);
    keeper.send(&Order::Arm { until });
    assert_not_early(&worker, until);
    // Nothing more is sent: the keeper acts on the deadline alone.
    wait_for("the worker to be stopped", || {
        state(worker.pid()) == Some('T')
    });
    assert!(FenceDeadline::now() >= until);
    let frozen = keeper.expect("frozen", |r| matches!(r, Report::Frozen { .. }));
    assert_eq!(
        frozen,
        Report::Frozen {
            key: "run-1".to_owned(),
            means: format!("process group {}", worker.pid()),
        }
    );
    worker.assert_still();
    assert!(keeper.logged("froze run run-1"));
    assert!(keeper.logged("ignored a line that is no order"));
    assert!(keeper.logged(&format!("ignored a line over {MAX_LINE} bytes")));

    // Thawing needs a later deadline first.
    keeper.send(&Order::Thaw {
        key: "run-1".to_owned(),
    });
    keeper.expect("a refused thaw", |r| matches!(r, Report::Failed { .. }));
    keeper.send(&Order::Arm {
        until: FenceDeadline::after(Duration::from_secs(3600)),
    });
    keeper.send(&Order::Thaw {
        key: "run-1".to_owned(),
    });
    keeper.expect("thawed", |r| matches!(r, Report::Thawed { .. }));
    worker.assert_ticking();

    // Closing stdin ends the keeper, and it leaves the run as it is.
    keeper.stdin = None;
    let status = keeper.child.wait().unwrap();
    assert!(status.success(), "{status}");
    worker.assert_ticking();
}

#[test]
fn the_keeper_freezes_while_its_server_is_stopped_and_dies_with_it() {
    let worker = Worker::start(None, false);
    // The "server": a shell whose child is the keeper, fed the orders by `cat`; it and `cat`
    // share a process group that the test stops.
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            &format!(
                "cat | '{}' keeper $$",
                env!("CARGO_BIN_EXE_handoff-isolate")
            ),
        ])
        .process_group(0);
    let mut keeper = Keeper::spawn(command);
    let keeper_pid = keeper.ready();
    let server = Pid::from_raw(i32::try_from(keeper.child.id()).unwrap());
    keeper.send(&guard("run-2", worker.group()));
    // Longer than elsewhere: the server must be seen stopped before it passes.
    let until = FenceDeadline::after(Duration::from_secs(2));
    keeper.send(&Order::Arm { until });
    // Answered only once the orders before it are carried out.
    keeper.send(&Order::Thaw {
        key: "probe".to_owned(),
    });
    keeper.expect("the probe refused", |r| matches!(r, Report::Failed { .. }));
    killpg(server, Signal::SIGSTOP).unwrap();
    wait_for("the server to be stopped", || {
        state(server.as_raw()) == Some('T')
    });
    assert!(
        FenceDeadline::now() < until,
        "the server was stopped only after the deadline: nothing shown"
    );
    assert_ne!(state(worker.pid()), Some('T'), "frozen before the deadline");
    wait_for("the worker to be stopped", || {
        state(worker.pid()) == Some('T')
    });
    assert_eq!(
        state(server.as_raw()),
        Some('T'),
        "the server stayed stopped"
    );
    assert_ne!(
        state(keeper_pid),
        Some('T'),
        "the keeper left the server's group"
    );
    worker.assert_still();

    // The server dies: so does its keeper (parent-death signal), and the run stays frozen.
    killpg(server, Signal::SIGKILL).unwrap();
    let _ = keeper.child.wait();
    wait_for("the keeper to die with its server", || {
        matches!(state(keeper_pid), None | Some('Z'))
    });
    worker.assert_still();
}

#[test]
fn the_keeper_freezes_a_cgroup_also_where_processes_left_the_group() {
    let support = CgroupSupport::detect();
    if !support.can_freeze() {
        eprintln!(
            "SKIPPED: no writable cgroup freezer here ({})",
            support.summary()
        );
        return;
    }
    let name = format!("handoff-test-{}-keeper", std::process::id());
    let cgroup = Cleanup(TaskCgroup::create(&support, &name, &Limits::default()).unwrap());
    let dir = cgroup.0.freezer_dir().unwrap();
    let procs = cgroup.0.procs_files();
    let procs = procs.iter().find(|p| p.starts_with(&dir)).unwrap();
    let worker = Worker::start(Some(procs), true);
    wait_for("the escaped loop's first ticks", || {
        worker.escaped_ticks() >= 2
    });
    let mut keeper = Keeper::start();
    keeper.ready();
    let target = FenceTarget {
        pgid: Some(worker.pid()),
        cgroup: Some(dir.clone()),
    };
    keeper.send(&guard("run-3", target));
    keeper.send(&Order::Arm {
        until: FenceDeadline::after(DEADLINE),
    });
    let frozen = keeper.expect("frozen", |r| matches!(r, Report::Frozen { .. }));
    assert_eq!(
        frozen,
        Report::Frozen {
            key: "run-3".to_owned(),
            means: format!("cgroup {}", dir.display()),
        },
        "the cgroup is preferred to the process group"
    );
    let frozen = || {
        let events = std::fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
        let v1 = std::fs::read_to_string(dir.join("freezer.state")).unwrap_or_default();
        events.lines().any(|l| l == "frozen 1") || v1.trim() == "FROZEN"
    };
    wait_for("the kernel to freeze the cgroup", frozen);
    worker.assert_still();
    keeper.send(&Order::Disarm);
    keeper.send(&Order::Thaw {
        key: "run-3".to_owned(),
    });
    keeper.expect("thawed", |r| matches!(r, Report::Thawed { .. }));
    worker.assert_ticking();
    let escaped = worker.escaped_ticks();
    wait_for("the escaped loop to tick again", || {
        worker.escaped_ticks() > escaped
    });
    drop(worker);
    // Kills the escaped loop too.
    cgroup.0.remove().unwrap();
}

/// Thaws and removes the test's cgroup however the test ends: a frozen group's processes
/// would otherwise stay, frozen, after it.
struct Cleanup(TaskCgroup);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let _ = self.0.thaw();
        let _ = self.0.remove();
    }
}

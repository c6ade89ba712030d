//! The run fence for real: a keeper process freezing real runs — through the target their
//! control names, a cgroup or a process group — once the deadline the test gave it passes,
//! with nothing more said to it, and thawing them on order; and a keeper that is gone or never
//! started is an error, never a silent "fenced".
//!
//! The keeper and the isolation launcher are `handoff isolate keeper|outer|inner`, and no
//! program of this crate is one: this test is both itself, which is why it has a `main` of its
//! own rather than libtest's.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod self_launching;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::{Duration, Instant},
};

use handoff_isolation::{
    DockerProbe, HostCapabilities, IsolationConfig, IsolationLevel, Isolator,
    cgroups::CgroupSupport,
};
use handoff_runner::{
    CommandConfig, CommandExecutor, Executor, Isolation, OutputStream, PromptVia, Run, RunEvent,
    RunSpec,
    fence::{FenceDeadline, FenceTarget, RunFence},
};
use handoff_task::TaskId;
use nix::{
    sys::signal::{Signal, kill},
    unistd::Pid,
};
use tokio::time::timeout;

/// How long a wait on a fact may take before the test fails: a safety net, never what decides
/// a result (a loaded machine can be slow).
const WAIT: Duration = Duration::from_secs(60);
const DEADLINE: Duration = Duration::from_millis(300);

use self_launching::Test;

const TESTS: &[(&str, Test)] = &[
    (
        "a_confined_run_freezes_by_its_cgroup_and_thaws_on_order",
        || Box::pin(a_confined_run_freezes_by_its_cgroup_and_thaws_on_order()),
    ),
    ("an_unconfined_run_freezes_by_its_process_group", || {
        Box::pin(an_unconfined_run_freezes_by_its_process_group())
    }),
    ("a_keeper_that_is_gone_makes_every_order_fail", || {
        Box::pin(a_keeper_that_is_gone_makes_every_order_fail())
    }),
    ("a_launcher_without_a_keeper_is_refused", || {
        Box::pin(a_launcher_without_a_keeper_is_refused())
    }),
];

fn main() -> ExitCode {
    self_launching::main("fence", TESTS)
}

fn me() -> Vec<String> {
    vec![std::env::current_exe().unwrap().display().to_string()]
}

/// A command run printing `tick N` every 50 ms, N counting up and written to the file `count`
/// first — by a rename, so a freeze between truncating and writing cannot leave it empty: confined at the `process` level (a cgroup of its own, launched by this program) or in
/// a process group only.
fn executor(confined: bool) -> CommandExecutor {
    let isolation = confined.then(|| {
        let support = CgroupSupport::detect();
        assert!(
            support.can_freeze(),
            "cgroups must be writable here (a cgroup2 mount or the v1 freezer): {}",
            support.summary()
        );
        let host = HostCapabilities {
            bwrap: Err("not needed at the process level".to_owned()),
            landlock: false,
            seccomp: false,
            cgroups: support,
            docker: DockerProbe::answered(Err("not needed at the process level".to_owned())),
        };
        let isolator = Isolator::new(me(), PathBuf::from("docker"), Arc::new(host));
        Isolation {
            isolator: Arc::new(isolator),
            config: IsolationConfig {
                level: IsolationLevel::Process,
                ..IsolationConfig::default()
            },
        }
    });
    CommandExecutor::new(CommandConfig {
        argv: vec![
            "sh".to_owned(),
            "-c".to_owned(),
            "i=0; while :; do i=$((i+1)); echo $i > count.new; mv count.new count; echo tick $i; sleep 0.05; done"
                .to_owned(),
        ],
        prompt_via: PromptVia::Argument,
        messages_via_stdin: false,
        env: Vec::new(),
        message_format: Default::default(),
        isolation,
    })
    .unwrap()
}

fn spec(workdir: &Path) -> RunSpec {
    RunSpec {
        task_id: TaskId::generate().unwrap(),
        attempt: 1,
        prompt: String::new(),
        workdir: workdir.to_owned(),
        preset_rules: None,
        continuable: false,
        env: Vec::new(),
        env_hidden: Vec::new(),
    }
}

/// Waits for the run's next `tick`.
async fn ticks(run: &mut Run) {
    loop {
        match timeout(WAIT, run.events.recv()).await.unwrap().unwrap() {
            RunEvent::Output {
                stream: OutputStream::Stdout,
                ..
            } => return,
            RunEvent::Finished(outcome) => panic!("the run ended: {outcome:?}"),
            _ => {}
        }
    }
}

/// The run in `dir` makes no progress while frozen: its count stays, and every line that
/// arrives — also those written before the freeze and still on their way through the pipe,
/// however slowly a loaded machine delivers them — is from before it.
async fn is_still(run: &mut Run, dir: &Path) {
    let count = || -> u64 {
        let text = std::fs::read_to_string(dir.join("count")).unwrap_or_default();
        text.trim().parse().unwrap_or(0)
    };
    let last = count();
    // A negative can only be shown over some time: a running loop ticks six times in this.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(count(), last, "the run went on while frozen");
    while let Ok(event) = run.events.try_recv() {
        if let RunEvent::Output { line, .. } = event {
            let tick: u64 = line.trim_start_matches("tick ").parse().unwrap_or(u64::MAX);
            assert!(
                tick <= last,
                "the run printed `{line}` while frozen at {last}"
            );
        }
    }
}

/// Looks at `done` every 10 ms until it holds (the one polling wait of these tests); fails
/// the test after [`WAIT`].
async fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
    let give_up = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < give_up, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The state letter of `/proc/<pid>/stat` (`T`: stopped; `None`: gone).
fn state(pid: i32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?
        .1
        .split_whitespace()
        .next()?
        .chars()
        .next()
}

fn cgroup_frozen(dir: &Path) -> bool {
    let events = std::fs::read_to_string(dir.join("cgroup.events")).unwrap_or_default();
    let v1 = std::fs::read_to_string(dir.join("freezer.state")).unwrap_or_default();
    events.lines().any(|l| l == "frozen 1") || v1.trim() == "FROZEN"
}

/// Unfreezes `run` the way the server does once its lease is renewed: a later deadline, then
/// `thaw`.
async fn renew_and_thaw(fence: &RunFence, key: &str, run: &mut Run) {
    fence
        .arm(FenceDeadline::after(Duration::from_secs(3600)))
        .unwrap();
    fence.thaw(key).unwrap();
    wait_for("the keeper to report the thaw", || !fence.is_frozen(key)).await;
    ticks(run).await;
}

async fn a_confined_run_freezes_by_its_cgroup_and_thaws_on_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = executor(true).start(spec(dir.path())).await.unwrap();
    ticks(&mut run).await;
    let target = run.control.fence_target().unwrap();
    let cgroup = target
        .cgroup
        .clone()
        .expect("a confined run names its cgroup");
    assert!(target.pgid.is_some());

    let fence = RunFence::spawn(&me()).unwrap();
    fence.guard("run-a", &target).unwrap();
    let until = FenceDeadline::after(DEADLINE);
    fence.arm(until).unwrap();
    wait_for("the keeper to freeze the run", || fence.is_frozen("run-a")).await;
    assert!(FenceDeadline::now() >= until, "frozen before the deadline");
    assert_eq!(fence.frozen(), ["run-a"]);
    wait_for("the kernel to freeze the cgroup", || cgroup_frozen(&cgroup)).await;
    is_still(&mut run, dir.path()).await;

    renew_and_thaw(&fence, "run-a", &mut run).await;
    assert!(!cgroup_frozen(&cgroup));
    fence.release("run-a").unwrap();
    run.control
        .cancel(Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(
        run.control.fence_target(),
        None,
        "an ended run has no target"
    );
}

async fn an_unconfined_run_freezes_by_its_process_group() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = executor(false).start(spec(dir.path())).await.unwrap();
    ticks(&mut run).await;
    let target = run.control.fence_target().unwrap();
    let FenceTarget {
        pgid: Some(pgid),
        cgroup: None,
    } = target
    else {
        panic!("an unconfined run has a process group only: {target:?}");
    };

    let fence = RunFence::spawn(&me()).unwrap();
    fence.guard("run-b", &target).unwrap();
    fence.arm(FenceDeadline::after(DEADLINE)).unwrap();
    wait_for("the run's leader to stop", || state(pgid) == Some('T')).await;
    wait_for("the keeper to report the freeze", || {
        fence.is_frozen("run-b")
    })
    .await;
    is_still(&mut run, dir.path()).await;
    renew_and_thaw(&fence, "run-b", &mut run).await;

    // Dropping the handle ends the keeper (its stdin closes); the run goes on.
    let keeper = i32::try_from(fence.pid()).unwrap();
    drop(fence);
    wait_for("the keeper to exit", || state(keeper).is_none()).await;
    ticks(&mut run).await;
    run.control
        .cancel(Duration::from_millis(200))
        .await
        .unwrap();
}

async fn a_keeper_that_is_gone_makes_every_order_fail() {
    let fence = RunFence::spawn(&me()).unwrap();
    assert!(fence.is_alive());
    let target = FenceTarget {
        pgid: Some(i32::MAX),
        cgroup: None,
    };
    fence.guard("run-c", &target).unwrap();
    kill(
        Pid::from_raw(i32::try_from(fence.pid()).unwrap()),
        Signal::SIGKILL,
    )
    .unwrap();
    wait_for("the fence to notice", || !fence.is_alive()).await;
    assert!(fence.guard("run-d", &target).is_err());
    assert!(fence.arm(FenceDeadline::after(DEADLINE)).is_err());
    assert!(fence.thaw("run-c").is_err());
    assert!(fence.release("run-c").is_err());
    assert!(fence.disarm().is_err());
    // Bad orders are refused here, before they reach a keeper.
    let fence = RunFence::spawn(&me()).unwrap();
    assert!(fence.guard("", &target).is_err());
    assert!(fence.guard("run-e", &FenceTarget::default()).is_err());
    let init = FenceTarget {
        pgid: Some(1),
        cgroup: None,
    };
    assert!(fence.guard("run-e", &init).is_err());
}

async fn a_launcher_without_a_keeper_is_refused() {
    assert!(RunFence::spawn(&[]).is_err());
    assert!(RunFence::spawn(&["/nonexistent/handoff".to_owned()]).is_err());
    // Starts, but never becomes a keeper.
    assert!(RunFence::spawn(&["false".to_owned()]).is_err());
}

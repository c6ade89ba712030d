//! A run's cgroup is its own, not its task's: two runs of one task (a task re-queued after its
//! instance was declared lost, run again on the same host) have different groups, and stopping
//! the old run — cancel, or abandoning its recorded state — leaves the new one running.
//!
//! Isolated runs start through the isolation launcher, and no program of this crate is one:
//! this test is its own launcher (`outer|inner <spec> -- argv`, as `handoff isolate`), which is
//! why it has a `main` of its own rather than libtest's.

// Test code: a failed unwrap is a failed test with its message.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod self_launching;

use std::{
    path::{Path, PathBuf},
    process::ExitCode,
    sync::Arc,
    time::Duration,
};

use handoff_isolation::{
    DockerProbe, HostCapabilities, IsolationConfig, IsolationLevel, Isolator,
    cgroups::{CgroupSupport, TaskCgroup},
};
use handoff_runner::{
    CommandConfig, CommandExecutor, Executor, Isolation, OutputStream, PromptVia, Run, RunEvent,
    RunOutcome, RunSpec, stop_task_leftovers,
};
use handoff_task::TaskId;
use serde_json::{Value, json};
use tokio::time::timeout;

const WAIT: Duration = Duration::from_secs(10);

use self_launching::Test;

const TESTS: &[(&str, Test)] = &[
    (
        "a_stale_runs_stop_leaves_the_tasks_next_run_running",
        || Box::pin(a_stale_runs_stop_leaves_the_tasks_next_run_running()),
    ),
    ("an_old_row_naming_the_task_still_stops_its_group", || {
        Box::pin(an_old_row_naming_the_task_still_stops_its_group())
    }),
];

fn main() -> ExitCode {
    self_launching::main("run_groups", TESTS)
}

/// This host's cgroups; the isolation tests need them writable too, so a host without them
/// fails here rather than passing without a look at the groups.
fn cgroups() -> CgroupSupport {
    let support = CgroupSupport::detect();
    assert!(
        support.can_freeze(),
        "cgroups must be writable here (a cgroup2 mount or the v1 freezer): {}",
        support.summary()
    );
    support
}

/// The command executor at the `process` level (own cgroup, no sandbox), launched by this
/// program.
fn executor(script: &str) -> CommandExecutor {
    let host = HostCapabilities {
        bwrap: Err("not needed at the process level".to_owned()),
        landlock: false,
        seccomp: false,
        cgroups: cgroups(),
        docker: DockerProbe::answered(Err("not needed at the process level".to_owned())),
    };
    let launcher = std::env::current_exe().unwrap().display().to_string();
    let isolator = Isolator::new(vec![launcher], PathBuf::from("docker"), Arc::new(host));
    CommandExecutor::new(CommandConfig {
        argv: vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()],
        prompt_via: PromptVia::Stdin,
        messages_via_stdin: false,
        env: Vec::new(),
        message_format: Default::default(),
        isolation: Some(Isolation {
            isolator: Arc::new(isolator),
            config: IsolationConfig {
                level: IsolationLevel::Process,
                ..IsolationConfig::default()
            },
        }),
    })
    .unwrap()
}

fn spec(task: &TaskId, attempt: i64, workdir: &Path) -> RunSpec {
    RunSpec {
        task_id: task.clone(),
        attempt,
        prompt: String::new(),
        workdir: workdir.to_owned(),
        preset_rules: None,
        continuable: false,
        env: Vec::new(),
        env_hidden: Vec::new(),
    }
}

/// Reads the run up to its first stdout line (it is then inside its group); returns its pid.
async fn started(run: &mut Run) -> i32 {
    let mut pid = None;
    loop {
        match timeout(WAIT, run.events.recv()).await.unwrap().unwrap() {
            RunEvent::Event(event) if event.message == "process started" => {
                pid = event.data.get("pid").and_then(Value::as_i64);
            }
            RunEvent::Output {
                stream: OutputStream::Stdout,
                ..
            } => return i32::try_from(pid.unwrap()).unwrap(),
            RunEvent::Finished(outcome) => panic!("the run ended before it started: {outcome:?}"),
            _ => {}
        }
    }
}

/// Reads the run to its end.
async fn finished(run: &mut Run) -> RunOutcome {
    loop {
        if let RunEvent::Finished(outcome) =
            timeout(WAIT, run.events.recv()).await.unwrap().unwrap()
        {
            return outcome;
        }
    }
}

fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(')')
            .is_some_and(|(_, r)| !r.trim().starts_with('Z'))
    })
}

fn recorded_group(run: &Run) -> String {
    let state = run.state.as_ref().unwrap();
    state["cgroup"].as_str().unwrap().to_owned()
}

async fn a_stale_runs_stop_leaves_the_tasks_next_run_running() {
    let support = cgroups();
    let dir = tempfile::tempdir().unwrap();
    let task = TaskId::generate().unwrap();
    let executor = executor("echo started; exec sleep 300");
    // The lost instance's run (claim 1), and the run of the instance that took the task over
    // after its re-queue (claim 3), on the same host.
    let mut stale = executor.start(spec(&task, 1, dir.path())).await.unwrap();
    let mut next = executor.start(spec(&task, 3, dir.path())).await.unwrap();
    let (stale_pid, next_pid) = (started(&mut stale).await, started(&mut next).await);
    let (stale_group, next_group) = (recorded_group(&stale), recorded_group(&next));
    assert_eq!(
        (stale_group.as_str(), next_group.as_str()),
        (format!("{task}-r1").as_str(), format!("{task}-r3").as_str())
    );
    let group = |name: &str| TaskCgroup::open(&support, name).unwrap();
    assert_eq!(group(&stale_group).pids(), [stale_pid]);
    assert_eq!(group(&next_group).pids(), [next_pid]);

    // The lost instance comes back and stops "its" run; a rescuer abandons what it recorded.
    stale
        .control
        .cancel(Duration::from_millis(200))
        .await
        .unwrap();
    assert_eq!(
        finished(&mut stale).await.error.as_deref(),
        Some("cancelled")
    );
    executor
        .abandon(stale.state.as_ref().unwrap())
        .await
        .unwrap();
    assert!(!alive(stale_pid));
    assert!(TaskCgroup::open(&support, &stale_group).is_none());

    assert!(alive(next_pid), "the task's next run was killed");
    assert_eq!(group(&next_group).pids(), [next_pid]);
    assert!(
        timeout(Duration::from_millis(300), next.events.recv())
            .await
            .is_err(),
        "the task's next run reported something after the stale run was stopped"
    );

    // Leftover cleanup still stops every run of the task, this one's group included.
    stop_task_leftovers(task.as_str()).await.unwrap();
    assert_eq!(finished(&mut next).await.exit.unwrap().signal, Some(9));
    let left: Vec<String> = TaskCgroup::names(&support)
        .into_iter()
        .filter(|name| name.starts_with(task.as_str()))
        .collect();
    assert!(left.is_empty(), "groups left: {left:?}");
}

async fn an_old_row_naming_the_task_still_stops_its_group() {
    let support = cgroups();
    let task = TaskId::generate().unwrap();
    // A run recorded before runs had names of their own: its group is the task's id.
    let group = TaskCgroup::create(&support, task.as_str(), &Default::default()).unwrap();
    let mut sleeper = std::process::Command::new("sleep")
        .arg("300")
        .spawn()
        .unwrap();
    group.add(i32::try_from(sleeper.id()).unwrap()).unwrap();
    executor("true")
        .abandon(&json!({ "pgid": null, "start_time": null, "cgroup": task.as_str() }))
        .await
        .unwrap();
    assert!(sleeper.wait().is_ok());
    assert!(TaskCgroup::open(&support, task.as_str()).is_none());
}

use std::{os::unix::process::CommandExt, path::Path};

use handoff_store::{ClaimLimits, InsertOutcome, SqliteStore, TaskStore};
use handoff_task::{NewTask, TaskId, TaskOptions, TaskStatus, unix_millis_now};
use serde_json::json;

use super::common::{PATIENCE, agent, alive, as_agent, config, start_in, wait_until};

/// A task stored as an earlier instance left it, to run in `workdir` (a directory of the test's
/// own: a run snapshots its workdir, and the shared temp dir is large and changing).
fn new_task(description: &str, requeue: bool, workdir: &Path) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: agent("a"),
        description: description.to_owned(),
        executor: "command".to_owned(),
        options: TaskOptions {
            timeout_ms: 60_000,
            requeue_on_restart: requeue,
            ..TaskOptions::default()
        },
        priority: 0,
        workdir: workdir.display().to_string(),
        created_at: unix_millis_now(),
        idempotency_key: None,
        metadata: json!({}),
        repeat_guard: None,
    }
}

fn start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let (_, rest) = stat.rsplit_once(')').unwrap();
    rest.split_whitespace().nth(19).unwrap().parse().unwrap()
}

/// The state a dead server leaves behind: tasks marked running whose processes still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_accounts_for_every_task_and_kills_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let work_dir = tempfile::tempdir().unwrap();
    let work = work_dir.path();
    let cfg = config(&dir, &[]);
    let store = SqliteStore::open(&cfg.database_path()).await.unwrap();
    let mut leftover = std::process::Command::new("sleep")
        .arg("300")
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = leftover.id();
    let mut ids = Vec::new();
    for (text, requeue) in [
        ("sleep 300", false),
        ("echo again", true),
        ("echo queued", false),
    ] {
        let InsertOutcome::Created(task) = store
            .insert_task(&new_task(text, requeue, work), None, 100)
            .await
            .unwrap()
        else {
            panic!("not created");
        };
        ids.push(task.id);
    }
    let limits = ClaimLimits {
        max_active: 2,
        max_active_per_agent: 2,
    };
    let first = store
        .claim_next(limits, unix_millis_now())
        .await
        .unwrap()
        .unwrap();
    let second = store
        .claim_next(limits, unix_millis_now())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((&first.id, &second.id), (&ids[0], &ids[1]));
    store
        .set_runner_state(
            &first.id,
            Some(&json!({"pgid": pid, "start_time": start_time(pid)})),
        )
        .await
        .unwrap();
    store.close().await;

    let h = start_in(dir, &[]).await;
    let interrupted = h
        .engine
        .status(&as_agent(&agent("a")), &ids[0])
        .await
        .map(|v| v.task)
        .unwrap();
    assert_eq!(interrupted.status, TaskStatus::Failed);
    assert_eq!(
        interrupted.error.as_deref(),
        Some("interrupted: server restarted")
    );
    // The old run's process group was killed, so the task cannot run twice.
    wait_until(
        &format!("leftover process {pid} to end"),
        PATIENCE,
        async || leftover.try_wait().unwrap().ok_or("still running"),
    )
    .await;
    assert!(!alive(pid as i32), "leftover process {pid} survived");

    let requeued = h.wait_done("a", &ids[1]).await;
    assert_eq!(requeued.status, TaskStatus::Completed);
    assert_eq!(h.outputs("a", &ids[1]).await, ["again"]);
    let queued = h.wait_done("a", &ids[2]).await;
    assert_eq!(queued.status, TaskStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_runs_and_says_so() {
    let h = super::common::start(&[]).await;
    let stopped = h
        .submit("a", "sleep 300 & echo child:$!; sleep 300")
        .await
        .task
        .id;
    let again = h
        .engine
        .submit(
            &agent("a"),
            handoff_engine::SubmitRequest {
                requeue_on_restart: Some(true),
                ..super::common::script("sleep 300")
            },
        )
        .await
        .unwrap()
        .task
        .id;
    let line = h
        .wait_output("a", &stopped, |l| l.starts_with("child:"))
        .await;
    let child: i32 = line["child:".len()..].parse().unwrap();
    let leader = h.pid("a", &stopped).await;
    h.wait_status("a", &again, TaskStatus::Running).await;

    h.engine.shutdown().await;
    let task = h
        .engine
        .status(&as_agent(&agent("a")), &stopped)
        .await
        .map(|v| v.task)
        .unwrap();
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.error.as_deref(), Some("interrupted: server shut down"));
    assert!(!alive(leader) && !alive(child));
    let task = h
        .engine
        .status(&as_agent(&agent("a")), &again)
        .await
        .map(|v| v.task)
        .unwrap();
    assert_eq!(task.status, TaskStatus::Queued, "opted in to re-running");
}

/// Handoff died after starting a run but before recording its pid: the run carries the task id
/// in its environment, and the restart kills it before the task runs again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_pid_was_never_recorded_is_killed_before_the_re_run() {
    let dir = tempfile::tempdir().unwrap();
    let work_dir = tempfile::tempdir().unwrap();
    let work = work_dir.path();
    let cfg = config(&dir, &[]);
    let store = SqliteStore::open(&cfg.database_path()).await.unwrap();
    let id = TaskId::generate().unwrap();
    // The old run's processes: a leader and a child that left its group.
    let mut survivor = std::process::Command::new("sh")
        .args(["-c", "setsid sleep 300 & echo $!; wait"])
        .env(handoff_runner::TASK_ID_ENV, id.as_str())
        .stdout(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(survivor.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    let escaped: i32 = line.trim().parse().unwrap();
    // The re-run says whether the old run is still there beside it.
    let check = format!(
        "s=$(cut -d' ' -f3 /proc/{escaped}/stat 2>/dev/null); \
         if [ -n \"$s\" ] && [ \"$s\" != Z ]; then echo beside; else echo alone; fi"
    );
    let InsertOutcome::Created(task) = store
        .insert_task(
            &NewTask {
                id: id.clone(),
                ..new_task(&check, true, work)
            },
            None,
            100,
        )
        .await
        .unwrap()
    else {
        panic!("not created");
    };
    let limits = ClaimLimits {
        max_active: 1,
        max_active_per_agent: 1,
    };
    let claimed = store
        .claim_next(limits, unix_millis_now())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(claimed.id, task.id);
    assert!(claimed.runner_state.is_none(), "no pid was recorded");
    store.close().await;

    let h = start_in(dir, &[]).await;
    let rerun = h.wait_done("a", &id).await;
    assert_eq!(rerun.status, TaskStatus::Completed);
    assert_eq!(h.outputs("a", &id).await, ["alone"]);
    assert!(survivor.wait().is_ok());
    assert!(!alive(escaped), "the old run's process {escaped} survived");
}

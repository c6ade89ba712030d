use std::{os::unix::process::CommandExt, time::Duration};

use handoff_store::{ClaimLimits, InsertOutcome, SqliteStore, TaskStore};
use handoff_task::{NewTask, TaskId, TaskOptions, TaskStatus, unix_millis_now};
use serde_json::json;

use super::common::{agent, alive, as_agent, config, start_in};

fn new_task(description: &str, requeue: bool) -> NewTask {
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
        workdir: std::env::temp_dir().display().to_string(),
        created_at: unix_millis_now(),
        idempotency_key: None,
        metadata: json!({}),
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
            .insert_task(&new_task(text, requeue), None, 100)
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
    let mut reaped = false;
    for _ in 0..100 {
        if leftover.try_wait().unwrap().is_some() {
            reaped = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        reaped && !alive(pid as i32),
        "leftover process {pid} survived"
    );

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
                requeue_on_restart: true,
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

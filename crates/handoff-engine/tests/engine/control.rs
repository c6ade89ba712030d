use handoff_engine::EngineError;
use handoff_protocol::tasks::ControlAction;
use handoff_task::{MessageType, TaskStatus};

use super::common::{
    PATIENCE, agent, alive, as_agent, group_states, start, wait_until, written_bytes,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_kills_the_whole_process_group() {
    let h = start(&[]).await;
    let id = h
        .submit("a", "sleep 300 & echo child:$!; sleep 300")
        .await
        .task
        .id;
    let line = h.wait_output("a", &id, |l| l.starts_with("child:")).await;
    let child: i32 = line["child:".len()..].parse().unwrap();
    let leader = h.pid("a", &id).await;
    assert!(alive(child) && alive(leader));
    let receipt = h
        .engine
        .control(
            &as_agent(&agent("a")),
            &id,
            ControlAction::Cancel,
            Some("changed my mind".into()),
        )
        .await
        .unwrap();
    assert!(receipt.changed);
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    assert_eq!(
        receipt.task.error.as_deref(),
        Some("cancelled: changed my mind")
    );
    assert!(!alive(leader), "leader {leader} survived");
    assert!(!alive(child), "grandchild {child} survived");
    let again = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Cancel, None)
        .await
        .unwrap();
    assert!(!again.changed, "cancel is idempotent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_queued_task_is_cancelled_without_running() {
    let h = start(&[("HANDOFF_MAX_CONCURRENT_TASKS", "1")]).await;
    let marker = h.dir.path().join("ran");
    let blocker = h.submit("a", "sleep 30").await.task.id;
    h.wait_status("a", &blocker, TaskStatus::Running).await;
    let queued = h
        .submit("a", &format!("touch '{}'", marker.display()))
        .await
        .task
        .id;
    let receipt = h
        .engine
        .control(&as_agent(&agent("a")), &queued, ControlAction::Cancel, None)
        .await
        .unwrap();
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    let err = h
        .engine
        .control(&as_agent(&agent("a")), &queued, ControlAction::Pause, None)
        .await
        .unwrap();
    assert!(!err.changed);
    h.engine
        .control(
            &as_agent(&agent("a")),
            &blocker,
            ControlAction::Cancel,
            None,
        )
        .await
        .unwrap();
    // Queued after it, with one slot: had the cancelled task been claimed, it would have run
    // to its end before this one started.
    let after = h.submit("a", "true").await.task.id;
    h.wait_done("a", &after).await;
    assert!(!marker.exists(), "a cancelled queued task must never run");
}

/// Whether the process group `pgid` is stopped; else its members' states.
fn stopped(pgid: i32) -> Result<(), Vec<char>> {
    let states = group_states(pgid);
    // A shell that forked waits in 'D' for its stopped child until that child execs.
    let all = states.iter().all(|s| matches!(s, 'T' | 'D'));
    if states.contains(&'T') && all {
        Ok(())
    } else {
        Err(states)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_freezes_and_resume_thaws() {
    let h = start(&[]).await;
    let id = h
        .submit(
            "a",
            "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done",
        )
        .await
        .task
        .id;
    h.wait_output("a", &id, |l| l == "tick 3").await;
    let paused = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Pause, None)
        .await
        .unwrap();
    assert_eq!(paused.task.status, TaskStatus::Paused);
    let pid = h.pid("a", &id).await;
    wait_until("the run's process group to stop", PATIENCE, async || {
        stopped(pid)
    })
    .await;
    // Stopped, the shell writes nothing more; what it wrote before is all recorded once the
    // recorded lines add up to its count of bytes written.
    let written = written_bytes(pid);
    let frozen = wait_until("the lines written before the stop", PATIENCE, async || {
        let lines = h.outputs("a", &id).await;
        let recorded: u64 = lines.iter().map(|l| l.len() as u64 + 1).sum();
        if recorded == written {
            Ok(lines.len())
        } else {
            Err((recorded, written))
        }
    })
    .await;
    let again = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Pause, None)
        .await
        .unwrap();
    assert!(!again.changed, "pause is idempotent");
    assert_eq!(stopped(pid), Ok(()), "the group stays stopped");
    assert_eq!(
        h.outputs("a", &id).await.len(),
        frozen,
        "no output while paused"
    );
    assert_eq!(written_bytes(pid), written, "no output while paused");

    let resumed = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Resume, None)
        .await
        .unwrap();
    assert_eq!(resumed.task.status, TaskStatus::Running);
    let next = format!("tick {}", frozen + 2);
    h.wait_output("a", &id, |l| l == next).await;
    let cancelled = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Cancel, None)
        .await
        .unwrap();
    assert_eq!(cancelled.task.status, TaskStatus::Cancelled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_task_can_be_cancelled() {
    let h = start(&[]).await;
    let id = h.submit("a", "echo up; sleep 300").await.task.id;
    let pid = h.pid("a", &id).await;
    h.wait_output("a", &id, |l| l == "up").await;
    h.engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Pause, None)
        .await
        .unwrap();
    let receipt = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Cancel, None)
        .await
        .unwrap();
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    assert!(!alive(pid));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_reach_the_running_executor() {
    let h = start(&[]).await;
    let id = h
        .submit("a", "echo ready; read -r line; echo \"got:$line\"")
        .await
        .task
        .id;
    h.wait_output("a", &id, |l| l == "ready").await;
    let receipt = h
        .engine
        .message(
            &as_agent(&agent("a")),
            &id,
            MessageType::Guidance,
            "use tabs".into(),
            None,
        )
        .await
        .unwrap();
    assert!(receipt.delivered, "{}", receipt.note);
    let line = h.wait_output("a", &id, |l| l.starts_with("got:")).await;
    assert_eq!(
        line,
        r#"got:{"type":"message","message":"[guidance] use tabs"}"#
    );
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_to_a_queued_task_join_its_prompt() {
    let h = start(&[("HANDOFF_MAX_CONCURRENT_TASKS", "1")]).await;
    let blocker = h.submit("a", "sleep 30").await.task.id;
    h.wait_status("a", &blocker, TaskStatus::Running).await;
    let id = h
        .submit(
            "a",
            "printf '%s' \"$BASH_EXECUTION_STRING\" > prompt.txt; exit 0",
        )
        .await
        .task
        .id;
    let receipt = h
        .engine
        .message(
            &as_agent(&agent("a")),
            &id,
            MessageType::RequirementChange,
            "also add tests".into(),
            None,
        )
        .await
        .unwrap();
    assert!(!receipt.delivered);
    assert!(receipt.note.contains("queued"));
    h.engine
        .control(
            &as_agent(&agent("a")),
            &blocker,
            ControlAction::Cancel,
            None,
        )
        .await
        .unwrap();
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    let prompt = h
        .engine
        .read_file(&as_agent(&agent("a")), &id, "prompt.txt", 0, None)
        .await
        .unwrap();
    let text = prompt.content.unwrap();
    assert!(
        text.ends_with("- [requirement_change] also add tests"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn controls_that_do_not_fit_the_state_are_conflicts() {
    let h = start(&[("HANDOFF_MAX_CONCURRENT_TASKS", "1")]).await;
    let running = h.submit("a", "sleep 30").await.task.id;
    h.wait_status("a", &running, TaskStatus::Running).await;
    let queued = h.submit("a", "true").await.task.id;
    let err = h
        .engine
        .control(&as_agent(&agent("a")), &queued, ControlAction::Pause, None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
    let err = h
        .engine
        .control(&as_agent(&agent("a")), &queued, ControlAction::Resume, None)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
    let resumed = h
        .engine
        .control(
            &as_agent(&agent("a")),
            &running,
            ControlAction::Resume,
            None,
        )
        .await
        .unwrap();
    assert!(!resumed.changed, "resume of a running task is a no-op");
    h.engine
        .control(
            &as_agent(&agent("a")),
            &running,
            ControlAction::Cancel,
            None,
        )
        .await
        .unwrap();
}

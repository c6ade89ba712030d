//! What a dead server leaves in the store, set up through the store directly, then met by a
//! new engine: a claim that never reached its executor, and a re-attached run that was waiting
//! for an answer.

use handoff_engine::EngineError;
use handoff_protocol::tasks::{AnswerScope, ApprovalAnswer};
use handoff_runner::{Capabilities, Decision, InputRequest};
use handoff_store::{ClaimLimits, InsertOutcome, StatusChange, TaskStore};
use handoff_task::{
    MessageType, NewTask, PendingInput, TaskId, TaskOptions, TaskStatus, unix_millis_now,
};
use serde_json::json;
use tempfile::TempDir;

use super::{
    common::agent,
    rig::{Trail, open_store, owner, rig_in, step},
    scripted::{Call, NAME, question},
};

const REATTACH: Capabilities = Capabilities {
    messages: false,
    pause: false,
    reattach: true,
};

/// A task claimed by a server that died at once: `running`, with no run recorded.
async fn claimed(dir: &TempDir, requeue_on_restart: bool) -> TaskId {
    let store = open_store(dir).await;
    let workdir = dir.path().join("work");
    std::fs::create_dir_all(&workdir).unwrap();
    let new = NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: agent("a"),
        description: "do the work".to_owned(),
        executor: NAME.to_owned(),
        options: TaskOptions {
            timeout_ms: 600_000,
            requeue_on_restart,
            ..TaskOptions::default()
        },
        priority: 0,
        workdir: workdir.display().to_string(),
        created_at: unix_millis_now(),
        idempotency_key: None,
        metadata: json!({}),
        repeat_guard: None,
    };
    let InsertOutcome::Created(task) = store.insert_task(&new, None, 100).await.unwrap() else {
        panic!("not created");
    };
    let limits = ClaimLimits {
        max_active: 1,
        max_active_per_agent: 1,
    };
    let running = store
        .claim_next(limits, unix_millis_now())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(running.id, task.id);
    store.close().await;
    task.id
}

/// A claimed task whose run (re-attachable) waits for an answer to `request`, asked
/// `asked_ms_ago` with a 600 s ask timeout.
async fn waiting(dir: &TempDir, request: &InputRequest, asked_ms_ago: i64) -> TaskId {
    let id = claimed(dir, false).await;
    let store = open_store(dir).await;
    store
        .set_runner_state(&id, Some(&json!({ "fake": id.as_str() })))
        .await
        .unwrap();
    let asked_at = unix_millis_now() - asked_ms_ago;
    store
        .put_input_request(&PendingInput {
            task_id: id.clone(),
            request_id: request.id.clone(),
            request: serde_json::to_value(request).unwrap(),
            asked_at,
            expires_at: asked_at + 600_000,
        })
        .await
        .unwrap();
    let change = StatusChange {
        from: TaskStatus::Running,
        to: TaskStatus::InputRequired,
        at: unix_millis_now(),
        exit: None,
        error: None,
        reason: request.title.clone(),
    };
    store.set_status(&id, &change).await.unwrap().unwrap();
    store.close().await;
    id
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_never_reached_its_executor_fails_at_restart() {
    let dir = tempfile::tempdir().unwrap();
    let id = claimed(&dir, false).await;
    let rig = rig_in(dir, &[], REATTACH).await;
    assert_eq!(
        Trail::new(&id).step(&rig.engine).await,
        step(
            TaskStatus::Failed,
            Some("interrupted: server restarted"),
            &[
                "status: queued",
                "status: running",
                "error: the server stopped while this task was running; its run was lost",
                "status: interrupted: server restarted"
            ]
        )
    );
    // No run was recorded, so there is nothing to re-attach or abandon.
    assert!(rig.script.calls.log().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_that_never_reached_its_executor_runs_again_when_opted_in() {
    let dir = tempfile::tempdir().unwrap();
    let id = claimed(&dir, true).await;
    let mut rig = rig_in(dir, &[], REATTACH).await;
    let run = rig.script.next_run().await;
    assert_eq!(run.task, id);
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(
        Trail::new(&id).step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &[
                "status: queued",
                "status: running",
                "status: re-queued: server restarted",
                "status: running",
                "status: completed"
            ]
        )
    );
    assert_eq!(
        rig.script.calls.log(),
        [
            Call::Start(id.clone()),
            Call::Release(json!({ "fake": id.as_str() }))
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_engine_shows_and_takes_the_answer_to_what_was_asked() {
    let dir = tempfile::tempdir().unwrap();
    let request = question("q1", "which colour?");
    let id = waiting(&dir, &request, 1_000).await;
    let mut rig = rig_in(dir, &[], REATTACH).await;
    assert_eq!(
        rig.script.calls.next().await.call,
        Call::Reattach(id.clone())
    );
    let mut run = rig.script.next_run().await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(view.task.status, TaskStatus::InputRequired);
    assert_eq!(view.pending_input, std::slice::from_ref(&request));

    let receipt = rig
        .engine
        .message(
            &owner(),
            &id,
            MessageType::Approval,
            r#"{"decision":"allow","message":"blue"}"#.into(),
            None,
        )
        .await
        .unwrap();
    assert!(receipt.delivered, "{}", receipt.note);
    assert_eq!(
        run.calls.next().await.call,
        Call::Answer {
            request: "q1".into(),
            decision: Decision::Allow,
            message: Some("blue".into())
        }
    );
    rig.until_status(&id, TaskStatus::Running).await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(view.pending_input.is_empty());
    let err = rig
        .engine
        .answer_input(&owner(), &id, ApprovalAnswer::allow(AnswerScope::Once))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");

    assert!(run.succeed().await);
    rig.until_done(&id).await;
    let mut trail = Trail::new(&id);
    let all = trail.step(&rig.engine).await;
    assert_eq!(
        (all.status, &all.events[3..]),
        (
            TaskStatus::Completed,
            &[
                "input: allowed by a: which colour?".to_owned(),
                "status: input answered".to_owned(),
                "message: {\"decision\":\"allow\",\"message\":\"blue\"}".to_owned(),
                "status: completed".to_owned()
            ][..]
        )
    );
    assert_eq!(run.calls.log().len(), 1);
}

/// The server was down longer than the ask timeout: the re-attached run hears one deny, once
/// its executor is attached, and the stored request goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_that_expired_while_the_server_was_down_is_denied_once() {
    let dir = tempfile::tempdir().unwrap();
    let request = question("q1", "which colour?");
    let id = waiting(&dir, &request, 601_000).await;
    let mut rig = rig_in(dir, &[], REATTACH).await;
    let mut run = rig.script.next_run().await;
    assert_eq!(
        run.calls.next().await.call,
        Call::Answer {
            request: "q1".into(),
            decision: Decision::Deny,
            message: Some("no answer within 600s".into())
        }
    );
    rig.until_status(&id, TaskStatus::Running).await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(view.pending_input.is_empty(), "{:?}", view.pending_input);
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(run.calls.log().len(), 1, "{:?}", run.calls.log());
}

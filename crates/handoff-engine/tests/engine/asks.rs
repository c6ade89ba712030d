//! The owner's answer against the ask timer. The timers run on the real clock: tokio's paused
//! clock cannot drive the SQLite store (it jumps ahead whenever the runtime waits on sqlx's
//! worker thread, so the pool's acquire timeout fires). Each race is ordered instead by holding
//! the fake's `answer` call, and the tests wait on the fake's calls and the engine's notices.

use handoff_engine::EngineError;
use handoff_protocol::tasks::{AnswerScope, ApprovalAnswer};
use handoff_runner::{Capabilities, Decision, InputRequest};
use std::time::Duration;

use handoff_task::{MessageType, TaskId, TaskStatus};
use tokio::time::Instant;

use super::{
    rig::{Rig, Trail, owner, rig, step},
    scripted::{Call, Kind, RunHandle, permission, question},
};

/// Asking before `rm` is configured; everything else is allowed.
const RULES: &str = r#"[{"permission":"*","pattern":"*","action":"allow"},{"permission":"bash","pattern":"rm *","action":"ask"}]"#;

/// Starts a task whose run asks `request` (with the answers it hears held, if `hold`); returns
/// once the task waits for the answer, and the instant by which its ask timer was set.
async fn asking(
    rig: &mut Rig,
    request: &InputRequest,
    hold: bool,
) -> (TaskId, RunHandle, Trail, Instant) {
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    if hold {
        run.calls.hold(Kind::Answer);
    }
    let mut trail = Trail::new(&id);
    trail.step(&rig.engine).await;
    run.ask(request.clone()).await;
    rig.until_status(&id, TaskStatus::InputRequired).await;
    let timer_set = Instant::now();
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(
        view.pending_input,
        std::slice::from_ref(request),
        "shown from the store"
    );
    (id, run, trail, timer_set)
}

fn answer(request: &str, decision: Decision, message: Option<&str>) -> Call {
    Call::Answer {
        request: request.to_owned(),
        decision,
        message: message.map(str::to_owned),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_answers_before_the_timer() {
    let mut rig = rig(
        &[("HANDOFF_PERMISSION_RULES", RULES)],
        Capabilities::default(),
    )
    .await;
    let request = permission("p1", "rm -rf build");
    let (id, mut run, mut trail, _) = asking(&mut rig, &request, false).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::InputRequired,
            None,
            &[
                "input: waiting for an answer: run `rm -rf build` (answer with send_task_message type approval; denied after 600s)",
                "status: run `rm -rf build`"
            ]
        )
    );

    let receipt = rig
        .engine
        .message(&owner(), &id, MessageType::Approval, "allow".into(), None)
        .await
        .unwrap();
    assert!(receipt.delivered, "{}", receipt.note);
    assert_eq!(
        run.calls.next().await.call,
        answer("p1", Decision::Allow, None)
    );
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(view.pending_input.is_empty(), "{:?}", view.pending_input);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Running,
            None,
            &[
                "input: allowed by a: run `rm -rf build`",
                "status: input answered",
                "message: allow"
            ]
        )
    );

    // A second answer finds nothing to answer.
    let late = ApprovalAnswer::deny().with_message(Some("changed my mind".into()));
    let err = rig
        .engine
        .answer_input(&owner(), &id, late)
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(run.calls.log(), [answer("p1", Decision::Allow, None)]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_answer_is_one_deny_by_the_timer() {
    let mut rig = rig(
        &[("HANDOFF_ASK_TIMEOUT_SECS", "1")],
        Capabilities::default(),
    )
    .await;
    let request = question("q1", "which colour?");
    let (id, mut run, mut trail, _) = asking(&mut rig, &request, false).await;
    trail.step(&rig.engine).await;

    let denied = answer("q1", Decision::Deny, Some("no answer within 1s"));
    assert_eq!(run.calls.next().await.call, denied);
    rig.until_status(&id, TaskStatus::Running).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Running,
            None,
            &[
                "input: denied by timeout: which colour?",
                "status: input answered"
            ]
        )
    );
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
    assert_eq!(run.calls.log(), [denied]);
}

/// The owner's answer is being delivered when the timer's instant passes: the request is no
/// longer pending, so the timer has nothing to deny.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_in_delivery_outlives_the_timer() {
    let mut rig = rig(
        &[("HANDOFF_ASK_TIMEOUT_SECS", "1")],
        Capabilities::default(),
    )
    .await;
    let request = question("q1", "which colour?");
    let (id, mut run, mut trail, timer_set) = asking(&mut rig, &request, true).await;
    trail.step(&rig.engine).await;
    let (engine, task) = (rig.engine.clone(), id.clone());
    let answering = tokio::spawn(async move {
        let blue = ApprovalAnswer::allow(AnswerScope::Once).with_message(Some("blue".into()));
        engine.answer_input(&owner(), &task, blue).await
    });
    // The one timing assumption of these tests: the owner's answer reaches the supervisor
    // within the 1 s the timer gives it.
    let held = run.calls.next().await;
    assert_eq!(held.call, answer("q1", Decision::Allow, Some("blue")));
    // The timer's instant is known: wait until it has passed while the answer is in delivery.
    tokio::time::sleep_until(timer_set + Duration::from_secs(1)).await;
    held.release();
    assert_eq!(answering.await.unwrap().unwrap(), request);
    rig.until_status(&id, TaskStatus::Running).await;
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &[
                "input: allowed by a: which colour?",
                "status: input answered",
                "status: completed"
            ]
        )
    );
    assert_eq!(
        run.calls.log(),
        [answer("q1", Decision::Allow, Some("blue"))]
    );
}

/// The timer's deny is being delivered when the owner answers: the owner is told there is
/// nothing left to answer, and the executor hears exactly one answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_after_the_timer_fired_is_refused() {
    let mut rig = rig(
        &[("HANDOFF_ASK_TIMEOUT_SECS", "1")],
        Capabilities::default(),
    )
    .await;
    let request = question("q1", "which colour?");
    let (id, mut run, mut trail, _) = asking(&mut rig, &request, true).await;
    trail.step(&rig.engine).await;
    let held = run.calls.next().await;
    let denied = answer("q1", Decision::Deny, Some("no answer within 1s"));
    assert_eq!(held.call, denied);
    // The request left the store before the deny went out; the state follows the delivery.
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(view.pending_input.is_empty());
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::InputRequired, None, &[])
    );

    let (engine, task) = (rig.engine.clone(), id.clone());
    let answering = tokio::spawn(async move {
        engine
            .answer_input(&owner(), &task, ApprovalAnswer::allow(AnswerScope::Once))
            .await
    });
    held.release();
    match answering.await.unwrap() {
        Err(EngineError::Conflict(message)) => {
            assert_eq!(message, "the task is not waiting for an answer")
        }
        other => panic!("{other:?}"),
    }
    rig.until_status(&id, TaskStatus::Running).await;
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &[
                "input: denied by timeout: which colour?",
                "status: input answered",
                "status: completed"
            ]
        )
    );
    assert_eq!(run.calls.log(), [denied]);
}

/// The executor withdraws its request (answered elsewhere): nothing is left to answer or to
/// deny, and the task works on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_the_executor_settles_needs_no_answer() {
    let mut rig = rig(&[], Capabilities::default()).await;
    let request = question("q1", "which colour?");
    let (id, run, mut trail, _) = asking(&mut rig, &request, false).await;
    trail.step(&rig.engine).await;
    run.settled("q1").await;
    rig.until_status(&id, TaskStatus::Running).await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert!(view.pending_input.is_empty());
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Running,
            None,
            &["status: request settled by the executor"]
        )
    );
    let err = rig
        .engine
        .answer_input(&owner(), &id, ApprovalAnswer::allow(AnswerScope::Once))
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert!(run.calls.log().is_empty(), "{:?}", run.calls.log());
}

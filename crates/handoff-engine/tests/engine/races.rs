//! Races between what the owner asks and what the run does, each ordered exactly by holding
//! one of the fake's calls: cancel vs natural finish, pause vs exit, message vs end of turn.

use handoff_engine::EngineError;
use handoff_protocol::tasks::ControlAction;
use handoff_runner::Capabilities;
use handoff_task::{MessageType, TaskId, TaskStatus};
use serde_json::json;

use super::{
    rig::{Rig, Trail, owner, rig, step},
    scripted::{Call, Kind, Observed, RunHandle},
};

const STEERABLE: Capabilities = Capabilities {
    messages: true,
    pause: true,
    reattach: false,
};

/// Submits a task, takes its run, and has it print one line.
async fn live(rig: &mut Rig) -> (TaskId, RunHandle, Trail) {
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    assert_eq!(run.prompt, "do the work");
    assert_eq!(rig.script.calls.next().await.call, Call::Start(id.clone()));
    run.tool("edit").await;
    run.output("working").await;
    rig.until_event(&id, |e| e.message == "working").await;
    let mut trail = Trail::new(&id);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Running,
            None,
            &[
                "status: queued",
                "status: running",
                "tool: tool edit",
                "output: working"
            ]
        )
    );
    (id, run, trail)
}

/// Has the run succeed and holds the driver at its last executor call (releasing the run's
/// session), after the outcome is known and before it is written: the window between a natural
/// end and the final state.
async fn succeed_and_hold(rig: &mut Rig, run: &RunHandle) -> Observed {
    rig.script.calls.hold(Kind::Release);
    assert!(run.succeed().await);
    let held = rig.script.calls.next().await;
    assert_eq!(
        held.call,
        Call::Release(json!({ "fake": run.task.as_str() }))
    );
    held
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_decided_before_the_run_succeeds_wins() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, mut run, mut trail) = live(&mut rig).await;
    run.calls.hold(Kind::Cancel);
    let cancel = rig.control(&id, ControlAction::Cancel, "stop");
    let held = run.calls.next().await;
    assert_eq!(held.call, Call::Cancel);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::Running, None, &["control: cancel: stop"])
    );

    // The run reports success while its cancel is still under way.
    assert!(run.succeed().await);
    let receipt = cancel.await.unwrap().unwrap();
    assert!(receipt.changed, "{}", receipt.message);
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Cancelled,
            Some("cancelled: stop"),
            &["status: cancelled: stop"]
        )
    );
    held.release();
    assert_eq!(run.calls.log(), [Call::Cancel]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_after_the_run_ended_changes_nothing() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, run, mut trail) = live(&mut rig).await;
    assert!(run.succeed().await);
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::Completed, None, &["status: completed"])
    );

    let receipt = rig
        .control(&id, ControlAction::Cancel, "too late")
        .await
        .unwrap()
        .unwrap();
    assert!(!receipt.changed);
    assert_eq!(receipt.message, "task already finished (completed)");
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::Completed, None, &[])
    );
    assert!(run.calls.log().is_empty(), "{:?}", run.calls.log());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_between_success_and_settling_reports_the_real_end() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, mut run, mut trail) = live(&mut rig).await;
    let release = succeed_and_hold(&mut rig, &run).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::Running, None, &[])
    );

    let cancel = rig.control(&id, ControlAction::Cancel, "stop");
    // Stopping an ended run is harmless; it changes nothing about how it ended.
    assert_eq!(run.calls.next().await.call, Call::Cancel);
    release.release();
    let receipt = cancel.await.unwrap().unwrap();
    assert!(!receipt.changed);
    assert_eq!(
        receipt.message,
        "the task ended as completed before the cancel took effect"
    );
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &["control: cancel: stop", "status: completed"]
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_that_meets_the_exit_is_a_conflict() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, mut run, mut trail) = live(&mut rig).await;
    run.calls.hold(Kind::Pause);
    let pause = rig.control(&id, ControlAction::Pause, "hold on");
    let held = run.calls.next().await;
    assert_eq!(held.call, Call::Pause);
    // The run exits while the executor is being paused: the pause finds it gone.
    assert!(run.succeed().await);
    held.release();
    match pause.await.unwrap() {
        Err(EngineError::Conflict(message)) => {
            assert_eq!(message, format!("task {id} finished meanwhile"))
        }
        other => panic!("{other:?}"),
    }
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &["control: pause: hold on", "status: completed"]
        )
    );
}

/// An executor may report a pause as done although its run just ended (a signal sent to a
/// process group that is exiting): the task passes through `paused` but ends truthfully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_the_executor_confirms_after_the_exit_never_sticks() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, mut run, mut trail) = live(&mut rig).await;
    run.calls.hold(Kind::Pause);
    let pause = rig.control(&id, ControlAction::Pause, "hold on");
    let held = run.calls.next().await;
    assert!(run.succeed().await);
    held.release_with(Ok(()));
    let receipt = pause.await.unwrap().unwrap();
    assert_eq!(receipt.task.status, TaskStatus::Paused);
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &[
                "control: pause: hold on",
                "status: paused",
                "status: run ended",
                "status: completed"
            ]
        )
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_after_the_exit_before_settling_is_a_conflict() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, run, mut trail) = live(&mut rig).await;
    let release = succeed_and_hold(&mut rig, &run).await;
    let err = rig
        .control(&id, ControlAction::Pause, "hold on")
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
    release.release();
    rig.until_done(&id).await;
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &["control: pause: hold on", "status: completed"]
        )
    );
    assert_eq!(run.calls.log(), [Call::Pause]);
}

async fn say(
    rig: &Rig,
    id: &TaskId,
    text: &str,
) -> Result<handoff_engine::MessageReceipt, EngineError> {
    rig.engine
        .message(&owner(), id, MessageType::Guidance, text.to_owned(), None)
        .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_reaches_a_live_run_and_not_a_finished_one() {
    let mut rig = rig(&[], STEERABLE).await;
    let (id, mut run, mut trail) = live(&mut rig).await;
    let receipt = say(&rig, &id, "use tabs").await.unwrap();
    assert!(receipt.delivered, "{}", receipt.note);
    assert_eq!(
        run.calls.next().await.call,
        Call::Message("[guidance] use tabs".to_owned())
    );
    assert_eq!(
        trail.step(&rig.engine).await,
        step(TaskStatus::Running, None, &["message: use tabs"])
    );

    // The turn ended; the task is not written down yet.
    let release = succeed_and_hold(&mut rig, &run).await;
    let receipt = say(&rig, &id, "and spaces").await.unwrap();
    assert!(!receipt.delivered);
    assert_eq!(
        receipt.note,
        "recorded, not delivered: the run has already finished"
    );
    release.release();
    rig.until_done(&id).await;

    // A finished task takes a message only as a follow-up round (`follow_ups`); an approval
    // has nothing left to answer.
    let err = rig
        .engine
        .message(
            &owner(),
            &id,
            MessageType::Approval,
            "allow".to_owned(),
            None,
        )
        .await
        .unwrap_err();
    match err {
        EngineError::Conflict(message) => assert!(
            message.starts_with(&format!(
                "task {id} has ended (completed): there is nothing to approve"
            )),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        trail.step(&rig.engine).await,
        step(
            TaskStatus::Completed,
            None,
            &["message: and spaces", "status: completed"]
        )
    );
    assert_eq!(
        run.calls.log(),
        [
            Call::Message("[guidance] use tabs".to_owned()),
            Call::Message("[guidance] and spaces".to_owned())
        ]
    );
}

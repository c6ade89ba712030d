//! The owner's word still counts while a finished turn is being evaluated: a cancel ends the
//! evaluation at once (verify commands included), and a message is new input that resumes the
//! session instead of being dropped. The verify command waits for a file the test creates, so
//! the evaluation is held exactly where the test wants it.

use std::path::{Path, PathBuf};

use handoff_engine::Control;
use handoff_runner::Capabilities;
use handoff_task::{MessageType, TaskId, TaskStatus};

use super::{
    rig::{Rig, owner, rig},
    scripted::HANG,
};

const RESUMABLE: Capabilities = Capabilities {
    messages: true,
    pause: false,
    reattach: false,
};

/// Verification by checks whose one command marks that it runs, then waits for `release`.
const HELD_VERIFY: [(&str, &str); 2] = [
    ("HANDOFF_COMPLETION_POLICY", "checks"),
    (
        "HANDOFF_VERIFY_COMMANDS",
        r#"["touch verifying; while [ ! -f release ]; do sleep 0.05; done"]"#,
    ),
];

async fn workdir(rig: &Rig, id: &TaskId) -> PathBuf {
    let view = rig.engine.status(&owner(), id).await.unwrap();
    PathBuf::from(view.task.workdir)
}

/// Waits until the verify command has started (it leaves a marker in the task directory).
async fn until_verifying(dir: &Path) {
    let marker = dir.join("verifying");
    tokio::time::timeout(HANG, async {
        while !marker.exists() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the verify command never started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_evaluation_wins_over_the_verify_commands() {
    let mut rig = rig(&HELD_VERIFY, RESUMABLE).await;
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    assert!(run.succeed().await);
    let dir = workdir(&rig, &id).await;
    until_verifying(&dir).await;

    let receipt = tokio::time::timeout(HANG, rig.control(&id, Control::Cancel, "changed my mind"))
        .await
        .expect("the cancel hung behind the verify command")
        .unwrap()
        .unwrap();
    assert!(receipt.changed, "{receipt:?}");
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(view.task.status, TaskStatus::Cancelled);
    assert_eq!(
        view.task.error.as_deref(),
        Some("cancelled: changed my mind")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_evaluation_resumes_the_session() {
    let mut rig = rig(&HELD_VERIFY, RESUMABLE).await;
    let id = rig.submit_task().await;
    let first = rig.script.next_run().await;
    assert!(first.succeed().await);
    let dir = workdir(&rig, &id).await;
    until_verifying(&dir).await;

    let receipt = rig
        .engine
        .message(
            &owner(),
            &id,
            MessageType::Update,
            "also update the changelog".to_owned(),
            None,
        )
        .await
        .unwrap();
    assert!(!receipt.delivered, "{receipt:?}");
    assert!(receipt.note.starts_with("kept"), "{}", receipt.note);

    // The checks pass; the kept message is new input, so the session resumes with it.
    std::fs::write(dir.join("release"), "").unwrap();
    let second = rig.script.next_run().await;
    assert!(
        second.prompt.contains("also update the changelog"),
        "{}",
        second.prompt
    );
    assert!(second.succeed().await);
    rig.until_done(&id).await;
    let view = rig.engine.status(&owner(), &id).await.unwrap();
    assert_eq!(view.task.status, TaskStatus::Completed);
    let history = rig
        .engine
        .history(&owner(), &id, 0, 500, false)
        .await
        .unwrap();
    assert!(
        history
            .events
            .iter()
            .any(|e| e.message.contains("delivered by resuming the session")),
        "{:#?}",
        history.events
    );
}

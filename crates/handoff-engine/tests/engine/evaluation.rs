//! The owner's word still counts while a finished turn is being evaluated: a cancel ends the
//! evaluation at once (verify commands included), and a message is new input that resumes the
//! session instead of being dropped. A cancel also ends the verify commands' run before the
//! task starts. The verify command meets the test at two FIFOs, so the
//! evaluation is held exactly where the test wants it.

use std::path::PathBuf;

use handoff_protocol::tasks::ControlAction;
use handoff_runner::Capabilities;
use handoff_task::{MessageType, TaskStatus};
use tempfile::TempDir;

use super::{
    common::{PATIENCE, alive, wait_until},
    rig::{Rig, owner, rig},
    scripted::HANG,
};

const RESUMABLE: Capabilities = Capabilities {
    messages: true,
    pause: false,
    reattach: false,
};

/// Two FIFOs through which the test meets the verify command: it says it runs on `verifying`
/// and waits for a word on `release` (once `released` exists, later checks pass at once), so
/// the evaluation is held exactly where the test wants it, without polling.
struct Gate {
    dir: TempDir,
}

impl Gate {
    fn new() -> Self {
        let dir = TempDir::new().unwrap();
        for fifo in ["verifying", "release"] {
            nix::unistd::mkfifo(&dir.path().join(fifo), nix::sys::stat::Mode::S_IRWXU).unwrap();
        }
        Self { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Verification by checks whose one command is held at this gate.
    fn env(&self) -> Vec<(String, String)> {
        let (verifying, release, released) = (
            self.path("verifying"),
            self.path("release"),
            self.path("released"),
        );
        let command = format!(
            "if [ ! -e {released} ]; then echo running > {verifying}; read word < {release}; fi",
            released = released.display(),
            verifying = verifying.display(),
            release = release.display(),
        );
        vec![
            ("HANDOFF_COMPLETION_POLICY".to_owned(), "checks".to_owned()),
            (
                "HANDOFF_VERIFY_COMMANDS".to_owned(),
                serde_json::json!([command]).to_string(),
            ),
            // Held at the gate only when the run is evaluated, not before it starts.
            ("HANDOFF_VERIFY_BEFORE_SECS".to_owned(), "0".to_owned()),
        ]
    }

    /// Waits until the verify command has started.
    async fn until_verifying(&self) {
        let fifo = self.path("verifying");
        let read = tokio::task::spawn_blocking(move || std::fs::read_to_string(fifo));
        let said = tokio::time::timeout(HANG, read)
            .await
            .expect("the verify command never started")
            .unwrap()
            .unwrap();
        assert_eq!(said.trim(), "running");
    }

    /// Lets the held verify command (and every later one) pass.
    async fn release(&self) {
        std::fs::write(self.path("released"), "").unwrap();
        let fifo = self.path("release");
        let write = tokio::task::spawn_blocking(move || std::fs::write(fifo, "go\n"));
        tokio::time::timeout(HANG, write)
            .await
            .expect("the verify command stopped waiting")
            .unwrap()
            .unwrap();
    }
}

async fn gated_rig(gate: &Gate) -> Rig {
    let env = gate.env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    rig(&env, RESUMABLE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_evaluation_wins_over_the_verify_commands() {
    let gate = Gate::new();
    let mut rig = gated_rig(&gate).await;
    let id = rig.submit_task().await;
    let run = rig.script.next_run().await;
    assert!(run.succeed().await);
    gate.until_verifying().await;

    let receipt = tokio::time::timeout(
        HANG,
        rig.control(&id, ControlAction::Cancel, "changed my mind"),
    )
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
    let gate = Gate::new();
    let mut rig = gated_rig(&gate).await;
    let id = rig.submit_task().await;
    let first = rig.script.next_run().await;
    assert!(first.succeed().await);
    gate.until_verifying().await;

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
    gate.release().await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_ends_the_verify_commands_run_before_the_task_starts() {
    let marks = TempDir::new().unwrap();
    let pid_file = marks.path().join("verify.pid");
    // Records its pid, then waits for a word that never comes: only a kill ends it.
    let command = format!(
        "echo $$ > {pid}; mkfifo {fifo}; read word < {fifo}",
        pid = pid_file.display(),
        fifo = marks.path().join("never").display(),
    );
    let commands = serde_json::json!([command]).to_string();
    let rig = rig(
        &[
            ("HANDOFF_COMPLETION_POLICY", "checks"),
            ("HANDOFF_VERIFY_COMMANDS", &commands),
        ],
        RESUMABLE,
    )
    .await;
    let id = rig.submit_task().await;
    let pid: i32 = wait_until(
        "the verify command to run before the task",
        HANG,
        async || {
            let text = std::fs::read_to_string(&pid_file).map_err(|e| e.to_string())?;
            text.trim().parse::<i32>().map_err(|e| e.to_string())
        },
    )
    .await;

    let receipt = tokio::time::timeout(HANG, rig.control(&id, ControlAction::Cancel, "not now"))
        .await
        .expect("the cancel hung behind the verify command")
        .unwrap()
        .unwrap();
    assert_eq!(receipt.task.status, TaskStatus::Cancelled);
    wait_until("the verify command to be killed", PATIENCE, async || {
        if alive(pid) { Err(pid) } else { Ok(()) }
    })
    .await;
}

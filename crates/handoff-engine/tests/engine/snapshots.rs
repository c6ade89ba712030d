//! The diff of a task directory is bounded: huge files are listed, not copied; the diff ends
//! with its time limit, and a cancel while it runs wins at once.

use std::time::{Duration, Instant};

use handoff_protocol::tasks::ControlAction;
use handoff_task::{ArtifactBody, ArtifactKind, EventKind, TaskId, TaskStatus};

use super::common::{Harness, PATIENCE, agent, as_agent, script, start, wait_until};

/// The diff artifact and Handoff's notes of a finished task.
async fn diff_and_notes(h: &Harness, id: &TaskId) -> (Option<String>, Vec<String>) {
    let history = h
        .engine
        .history(&as_agent(&agent("a")), id, 0, 1000, true)
        .await
        .unwrap();
    let diff = history
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Diff)
        .map(|a| match &a.body {
            ArtifactBody::Inline(bytes) => String::from_utf8_lossy(bytes).into_owned(),
            ArtifactBody::File(path) => std::fs::read_to_string(path).unwrap(),
        });
    let notes = history
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Log)
        .map(|e| e.message.clone())
        .collect();
    (diff, notes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_is_listed_in_the_diff_not_copied() {
    let h = start(&[("HANDOFF_SNAPSHOT_MAX_FILE_BYTES", "1m")]).await;
    let id = h
        .submit(
            "a",
            "head -c 5000000 /dev/zero > big.bin; echo small > s.txt",
        )
        .await
        .task
        .id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    let (diff, _) = diff_and_notes(&h, &id).await;
    let diff = diff.unwrap();
    assert!(diff.contains("+small"), "{diff}");
    assert!(
        diff.contains("# large file added: big.bin, 5000000 bytes"),
        "{diff}"
    );
}

// A 20 s timeout with 1 GiB written finished after 82 s: the diff after a stop ends with its
// time limit, and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_diff_after_a_timeout_ends_with_its_time_limit() {
    // Five seconds: the baseline of the empty directory fits on a loaded machine, the diff of
    // 256 GiB (minutes of hashing on any machine) does not.
    let h = start(&[
        ("HANDOFF_SNAPSHOT_MAX_FILE_BYTES", "1t"),
        ("HANDOFF_SNAPSHOT_MAX_BYTES", "1t"),
        ("HANDOFF_SNAPSHOT_TIMEOUT_SECS", "5"),
    ])
    .await;
    let mut request = script("truncate -s 256G big.bin; echo written; sleep 60");
    request.timeout_ms = Some(1_500);
    let started = Instant::now();
    let id = h.engine.submit(&agent("a"), request).await.unwrap().task.id;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Timeout);
    // Deadline, the cancel grace, the diff's five seconds, and room for a loaded machine:
    // hashing 256 GiB takes minutes.
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    let (_, notes) = diff_and_notes(&h, &id).await;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("could not compute the diff: given up after")),
        "{notes:?}"
    );
}

// A cancel during the diff took 119.6 s, and after 15 s answered that the task "ended as
// running before the cancel took effect".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_during_the_diff_wins_at_once() {
    let h = start(&[
        ("HANDOFF_SNAPSHOT_MAX_FILE_BYTES", "64g"),
        ("HANDOFF_SNAPSHOT_MAX_BYTES", "64g"),
    ])
    .await;
    let id = h
        .submit("a", "truncate -s 16G big.bin; echo written")
        .await
        .task
        .id;
    // The run's output is recorded before the diff starts; git then holds the private
    // index's lock while it copies the file in.
    h.wait_output("a", &id, |line| line == "written").await;
    let lock = h
        .dir
        .path()
        .join("snapshots")
        .join(format!("{id}.git"))
        .join("index.lock");
    wait_until("the diff to start", PATIENCE, async || {
        if lock.exists() {
            Ok(())
        } else {
            Err("no index.lock")
        }
    })
    .await;
    let asked = Instant::now();
    let receipt = h
        .engine
        .control(&as_agent(&agent("a")), &id, ControlAction::Cancel, None)
        .await
        .unwrap();
    assert!(
        asked.elapsed() < Duration::from_secs(10),
        "{:?}",
        asked.elapsed()
    );
    assert_eq!(
        receipt.task.status,
        TaskStatus::Cancelled,
        "{}",
        receipt.message
    );
    assert!(receipt.changed);
    assert!(
        receipt.message.starts_with("cancelled"),
        "{}",
        receipt.message
    );
    let (_, notes) = diff_and_notes(&h, &id).await;
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("the diff was abandoned")),
        "{notes:?}"
    );
}

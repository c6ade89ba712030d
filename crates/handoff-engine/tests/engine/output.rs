//! A run's output is stored as bounded events; the artifacts keep it whole (up to their cap).

use handoff_task::{Artifact, ArtifactBody, ArtifactKind, EventKind, TaskEvent, TaskStatus};

use super::common::{Harness, agent, as_agent, start};

/// Every event of a finished task and its output artifact.
async fn recorded(h: &Harness, id: &handoff_task::TaskId) -> (Vec<TaskEvent>, Artifact) {
    let history = h
        .engine
        .history(&as_agent(&agent("a")), id, 0, 10_000, true)
        .await
        .unwrap();
    assert_eq!(
        history.events.len() as u64,
        history.total_events,
        "one page holds them all"
    );
    let artifact = history
        .artifacts
        .into_iter()
        .find(|a| a.kind == ArtifactKind::Output)
        .unwrap();
    (history.events, artifact)
}

fn artifact_bytes(artifact: &Artifact) -> Vec<u8> {
    match &artifact.body {
        ArtifactBody::Inline(bytes) => bytes.clone(),
        ArtifactBody::File(path) => std::fs::read(path).unwrap(),
    }
}

// One fast printer used to add a row per line (8.1 M rows, 1.94 GB in 300 s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fast_printer_is_kept_as_a_few_events_and_counted_past_the_cap() {
    let h = start(&[
        ("HANDOFF_OUTPUT_EVENT_MAX_BYTES", "4096"),
        ("HANDOFF_OUTPUT_MAX_EVENTS", "20"),
    ])
    .await;
    let id = h.submit("a", "seq 1 200000").await.task.id;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Completed);
    let (events, artifact) = recorded(&h, &id).await;
    assert!(events.len() < 40, "{} events", events.len());
    let outputs: Vec<&TaskEvent> = events
        .iter()
        .filter(|e| e.kind == EventKind::Output)
        .collect();
    assert_eq!(outputs.len(), 20);
    assert!(outputs.iter().all(|e| e.message.len() <= 4096));
    let stored_lines: u64 = outputs
        .iter()
        .map(|e| e.message.split('\n').count() as u64)
        .sum();
    let first: Vec<&str> = outputs[0].message.split('\n').take(3).collect();
    assert_eq!(first, ["1", "2", "3"]);
    let dropped = events
        .iter()
        .find_map(|e| e.data.get("output_dropped"))
        .expect("the dropped output is counted");
    assert_eq!(dropped["lines"].as_u64().unwrap() + stored_lines, 200_000);

    let whole: String = (1..=200_000).map(|n| format!("{n}\n")).collect();
    assert_eq!(artifact.size, whole.len() as u64);
    assert!(!artifact.capped);
    assert_eq!(artifact_bytes(&artifact), whole.as_bytes());
}

// A single 100 MB line used to add ~110 MB of events, beyond the artifact cap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_line_is_one_clipped_event() {
    let h = start(&[]).await;
    let id = h
        .submit(
            "a",
            "head -c 10000000 /dev/zero | tr '\\0' x; echo; sleep 0.3; echo after",
        )
        .await
        .task
        .id;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Completed);
    let (events, artifact) = recorded(&h, &id).await;
    let outputs: Vec<&TaskEvent> = events
        .iter()
        .filter(|e| e.kind == EventKind::Output)
        .collect();
    assert_eq!(
        outputs.len(),
        2,
        "{:?}",
        outputs.iter().map(|e| e.message.len()).collect::<Vec<_>>()
    );
    let clipped = outputs[0];
    assert!(clipped.message.starts_with(&"x".repeat(64 * 1024)));
    assert!(
        clipped.message.len() < 64 * 1024 + 200,
        "{}",
        clipped.message.len()
    );
    assert_eq!(clipped.data["clipped_bytes"], 10_000_000 - 64 * 1024);
    assert!(
        clipped
            .message
            .contains(&format!("{} more bytes", 10_000_000 - 64 * 1024)),
        "the event says how much was cut"
    );
    assert_eq!(outputs[1].message, "after");
    assert_eq!(artifact.size, 10_000_000 + "\nafter\n".len() as u64);
    assert!(!artifact.capped);
    let bytes = artifact_bytes(&artifact);
    assert_eq!(bytes.len(), 10_000_007);
    assert!(bytes.ends_with(b"x\nafter\n"));
}

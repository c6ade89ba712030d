use std::time::Duration;

use handoff_engine::EngineError;
use handoff_protocol::tasks::ControlAction;
use handoff_task::{ArtifactBody, ArtifactKind, EventKind, TaskStatus};

use super::common::{PATIENCE, agent, alive, as_agent, script, start, wait_until};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_successful_run_records_everything() {
    let h = start(&[]).await;
    let submitted = h.submit("a", "echo hello; echo oops >&2; echo bye").await;
    assert!(submitted.created);
    let task = h.wait_done("a", &submitted.task.id).await;
    assert_eq!(task.status, TaskStatus::Completed);
    assert_eq!(task.exit.and_then(|e| e.code), Some(0));
    assert!(task.started_at.is_some() && task.completed_at.is_some());

    let history = h
        .engine
        .history(&as_agent(&agent("a")), &task.id, 0, 100, true)
        .await
        .unwrap();
    let statuses: Vec<_> = history
        .events
        .iter()
        .filter(|e| e.kind == EventKind::Status)
        .map(|e| e.data["to"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["queued", "running", "completed"]);
    let seqs: Vec<_> = history.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, (1..=history.total_events as i64).collect::<Vec<_>>());
    let output = history
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Output)
        .unwrap();
    assert_eq!(output.body, ArtifactBody::Inline(b"hello\nbye\n".to_vec()));
    let log = history
        .artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Log)
        .unwrap();
    assert_eq!(log.body, ArtifactBody::Inline(b"oops\n".to_vec()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_run_says_why() {
    let h = start(&[]).await;
    let id = h.submit("a", "echo working; exit 3").await.task.id;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Failed);
    assert_eq!(task.exit.and_then(|e| e.code), Some(3));
    assert!(task.error.unwrap().contains("exit code 3"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_stops_the_run_while_it_works() {
    let h = start(&[]).await;
    let mut request = script("echo started; sleep 30");
    request.timeout_ms = Some(400);
    let id = h.engine.submit(&agent("a"), request).await.unwrap().task.id;
    let pid = h.pid("a", &id).await;
    let task = h.wait_done("a", &id).await;
    assert_eq!(task.status, TaskStatus::Timeout);
    assert_eq!(task.error.as_deref(), Some("timed out after 400ms"));
    assert!(!alive(pid), "the timed-out process group must be gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminal_states_never_change() {
    let h = start(&[]).await;
    let id = h.submit("a", "true").await.task.id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    for control in [
        ControlAction::Cancel,
        ControlAction::Pause,
        ControlAction::Resume,
    ] {
        let receipt = h
            .engine
            .control(&as_agent(&agent("a")), &id, control, None)
            .await
            .unwrap();
        assert!(!receipt.changed);
        assert_eq!(receipt.task.status, TaskStatus::Completed);
    }
    // A message continues a finished task in a follow-up round (see `follow_ups`); an
    // approval has nothing left to answer.
    let err = h
        .engine
        .message(
            &as_agent(&agent("a")),
            &id,
            handoff_task::MessageType::Approval,
            "allow".into(),
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, EngineError::Conflict(_)), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_submissions_are_refused_with_the_field_named() {
    let h = start(&[("HANDOFF_MAX_DESCRIPTION_BYTES", "64")]).await;
    let cases = [
        (script(&"x".repeat(65)), "task_description"),
        (script("   "), "task_description"),
        (
            handoff_engine::SubmitRequest {
                executor: Some("nope".into()),
                ..script("true")
            },
            "executor",
        ),
        (
            handoff_engine::SubmitRequest {
                workdir: Some("/etc".into()),
                ..script("true")
            },
            "workdir",
        ),
        (
            handoff_engine::SubmitRequest {
                metadata: Some(serde_json::json!([1])),
                ..script("true")
            },
            "metadata",
        ),
        (
            handoff_engine::SubmitRequest {
                metadata: Some(serde_json::json!({"big": "x".repeat(16 << 10)})),
                ..script("true")
            },
            "metadata",
        ),
        (
            with_completion(serde_json::json!({"budget": {"cost_usd": -1}})),
            "completion/budget/cost_usd",
        ),
        (
            with_completion(serde_json::json!({"budget": {"turns": 0}})),
            "completion/budget/turns",
        ),
        (
            with_completion(serde_json::json!({"budget": {"wall_ms": 0}})),
            "completion/budget/wall_ms",
        ),
        (
            with_completion(serde_json::json!({"budget": {"tokens": 0}})),
            "completion/budget/tokens",
        ),
        (
            with_completion(serde_json::json!({"verify_commands": [""]})),
            "completion/verify_commands",
        ),
        (
            with_completion(serde_json::json!({"verify_commands": ["true", " \t "]})),
            "completion/verify_commands",
        ),
    ];
    for (request, expected) in cases {
        match h.engine.submit(&agent("a"), request).await {
            Err(EngineError::Invalid { field, .. }) => assert_eq!(field, expected),
            other => panic!("{expected}: {other:?}"),
        }
    }
    let page = h
        .engine
        .list(&as_agent(&agent("a")), vec![], 10, None)
        .await
        .unwrap();
    assert!(
        page.tasks.is_empty(),
        "refused submissions leave nothing behind"
    );
}

fn with_completion(completion: serde_json::Value) -> handoff_engine::SubmitRequest {
    handoff_engine::SubmitRequest {
        completion: Some(serde_json::from_value(completion).unwrap()),
        ..script("true")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn message_metadata_is_capped_like_task_metadata() {
    let h = start(&[]).await;
    let id = h.submit("a", "sleep 30").await.task.id;
    let owner = as_agent(&agent("a"));
    let big = serde_json::json!({"big": "x".repeat(16 << 10)});
    let err = h
        .engine
        .message(&owner, &id, Default::default(), "hi".into(), Some(big))
        .await
        .unwrap_err();
    let EngineError::Invalid { field, message } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*field, "metadata");
    assert!(message.len() < 200, "{message}");
    let array = h
        .engine
        .message(
            &owner,
            &id,
            Default::default(),
            "hi".into(),
            Some(serde_json::json!([1])),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            array,
            EngineError::Invalid {
                field: "metadata",
                ..
            }
        ),
        "{array:?}"
    );
    // Refused messages leave nothing behind; one within the cap is recorded.
    let history = h.engine.history(&owner, &id, 0, 1000, false).await.unwrap();
    assert!(
        !history.events.iter().any(|e| e.kind == EventKind::Message),
        "{:?}",
        history.events
    );
    let small = serde_json::json!({"ticket": "x".repeat(1000)});
    h.engine
        .message(&owner, &id, Default::default(), "hi".into(), Some(small))
        .await
        .unwrap();
    h.engine
        .control(&owner, &id, ControlAction::Cancel, None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn agents_see_only_their_own_tasks() {
    let h = start(&[]).await;
    let id = h.submit("owner", "sleep 0.2").await.task.id;
    let stranger = agent("stranger");
    assert!(matches!(
        h.engine.status(&as_agent(&stranger), &id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        h.engine
            .control(&as_agent(&stranger), &id, ControlAction::Cancel, None)
            .await,
        Err(EngineError::NotFound(_))
    ));
    assert!(matches!(
        h.engine.files(&as_agent(&stranger), &id, None).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(
        h.engine
            .list(&as_agent(&stranger), vec![], 10, None)
            .await
            .unwrap()
            .tasks
            .is_empty()
    );
    assert_eq!(
        h.wait_done("owner", &id).await.status,
        TaskStatus::Completed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn submissions_are_rate_limited_per_agent() {
    let h = start(&[
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "1"),
        ("HANDOFF_SUBMISSION_BURST", "2"),
    ])
    .await;
    h.submit("a", "true").await;
    h.submit("a", "true").await;
    match h.engine.submit(&agent("a"), script("true")).await {
        Err(EngineError::RateLimited { retry_after, .. }) => {
            assert!(retry_after > Duration::from_secs(1))
        }
        other => panic!("{other:?}"),
    }
    h.submit("b", "true").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replaying_an_idempotency_key_costs_no_rate_token() {
    let h = start(&[
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "1"),
        ("HANDOFF_SUBMISSION_BURST", "1"),
    ])
    .await;
    let keyed = handoff_engine::SubmitRequest {
        idempotency_key: Some("once".into()),
        ..script("true")
    };
    let first = h.engine.submit(&agent("a"), keyed.clone()).await.unwrap();
    for _ in 0..3 {
        let again = h.engine.submit(&agent("a"), keyed.clone()).await.unwrap();
        assert_eq!(
            (again.task.id.clone(), again.created),
            (first.task.id.clone(), false)
        );
    }
    assert!(matches!(
        h.engine.submit(&agent("a"), script("true")).await,
        Err(EngineError::RateLimited { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_outputs_are_kept_whole_in_a_file() {
    let h = start(&[("HANDOFF_ARTIFACT_INLINE_BYTES", "1k")]).await;
    let id = h.submit("a", "seq 1 20000").await.task.id;
    assert_eq!(h.wait_done("a", &id).await.status, TaskStatus::Completed);
    let history = h
        .engine
        .history(&as_agent(&agent("a")), &id, 0, 10, true)
        .await
        .unwrap();
    let output = &history.artifacts[0];
    let ArtifactBody::File(path) = &output.body else {
        panic!("expected a spilled artifact");
    };
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(text.lines().count(), 20000);
    assert_eq!(output.size, text.len() as u64);
    assert!(!output.capped);
    // The lines are joined into a few output events (three states, the process note and the
    // evaluator's verdict besides), which hold them all.
    assert!(history.total_events < 100, "{}", history.total_events);
    assert_eq!(h.outputs("a", &id).await.len(), 20000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_purges_finished_tasks_and_their_directories() {
    let h = start(&[("HANDOFF_TASK_RETENTION_DAYS", "0")]).await;
    let done = h.submit("a", "echo kept > file.txt").await.task;
    assert_eq!(
        h.wait_done("a", &done.id).await.status,
        TaskStatus::Completed
    );
    let running = h.submit("a", "sleep 30").await.task;
    h.wait_status("a", &running.id, TaskStatus::Running).await;
    assert!(
        std::path::Path::new(&done.workdir)
            .join("file.txt")
            .exists()
    );

    assert_eq!(h.engine.purge_expired().await.unwrap(), 1);
    assert!(matches!(
        h.engine.status(&as_agent(&agent("a")), &done.id).await,
        Err(EngineError::NotFound(_))
    ));
    assert!(!std::path::Path::new(&done.workdir).exists());
    assert_eq!(
        h.engine
            .status(&as_agent(&agent("a")), &running.id)
            .await
            .unwrap()
            .task
            .status,
        TaskStatus::Running,
        "unfinished tasks are never purged"
    );
    h.engine
        .control(
            &as_agent(&agent("a")),
            &running.id,
            ControlAction::Cancel,
            None,
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_completion_cleanup_removes_the_directory_when_the_task_ends() {
    let h = start(&[("HANDOFF_WORKDIR_CLEANUP", "on_completion")]).await;
    let task = h.submit("a", "echo x > file.txt").await.task;
    assert_eq!(
        h.wait_done("a", &task.id).await.status,
        TaskStatus::Completed
    );
    let workdir = std::path::Path::new(&task.workdir);
    wait_until(
        &format!("{} to be removed", task.workdir),
        PATIENCE,
        async || {
            if workdir.exists() {
                Err("still there")
            } else {
                Ok(())
            }
        },
    )
    .await;
}

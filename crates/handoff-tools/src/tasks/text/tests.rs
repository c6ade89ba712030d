//! Every task tool's text, as a model reads it (snapshots), and the bounds they keep.

use std::time::Duration;

use handoff_protocol::{
    AgentId, Approval, ApprovalScope, ArtifactKind, AuditRecord, EventKind, EventView, TaskId,
    TaskStatus, TaskView,
    tasks::{
        ArtifactView, ControlAction, ExecuteTaskOutput, FileEntryView, GetAuditLogOutput,
        GetTaskFilesOutput, GetTaskHistoryOutput, GetTaskStatusOutput, ListApprovalsOutput,
        ListTasksOutput, PendingInputView, ReadTaskFileOutput, RevokeApprovalOutput,
        SendTaskControlOutput, SendTaskMessageOutput,
    },
};
use handoff_task::{ExitInfo, ModelUsage};
use serde_json::json;

use super::{files::FILE_TEXT_BYTES, *};
use crate::FollowUp;

const ID: &str = "task_abcdefghijklmnopqrstuvwxyz";

fn view(status: TaskStatus) -> TaskView {
    let started = status != TaskStatus::Queued;
    TaskView {
        task_id: ID.into(),
        status,
        executor: "opencode".into(),
        description: "Fix the failing test in crates/parser\nand make sure cargo test passes"
            .into(),
        priority: 0,
        workdir: format!("/srv/handoff/workspaces/{ID}"),
        created_at_ms: 1_000,
        started_at_ms: started.then_some(2_000),
        completed_at_ms: status.is_terminal().then_some(135_000),
        duration_ms: started.then_some(133_000),
        exit: None,
        error: None,
        idempotency_key: None,
        metadata: json!({}),
        branch: None,
        round: None,
    }
}

fn letta() -> Outlook {
    Outlook {
        follow_up: FollowUp {
            memory_block: Some(format!("handoff_{ID}")),
            message_at_end: true,
        },
        answer: None,
    }
}

fn event(seq: i64, kind: EventKind, message: &str) -> EventView {
    EventView {
        seq,
        at_ms: seq * 1000,
        kind,
        message: message.into(),
        data: json!({}),
    }
}

fn submission(status: TaskStatus) -> ExecuteTaskOutput {
    let task = view(status);
    ExecuteTaskOutput {
        task_id: ID.into(),
        status,
        created: true,
        executor: task.executor,
        workdir: task.workdir,
        queue_position: (status == TaskStatus::Queued).then_some(2),
        message: "accepted; poll get_task_status with this task_id".into(),
        duration_ms: task.duration_ms,
        exit: None,
        error: None,
        output_tail: Vec::new(),
        answer: None,
    }
}

fn status_output(task: TaskView) -> GetTaskStatusOutput {
    GetTaskStatusOutput {
        task,
        queue_position: None,
        recent_events: vec![
            event(7, EventKind::Tool, "edit: src/lib.rs"),
            event(8, EventKind::Log, "checkpoint saved"),
        ],
        pending_input: Vec::new(),
        completion: None,
        last_tool_call: None,
        answer: None,
        delivery: None,
        model_usage: None,
    }
}

#[test]
fn execute_task_without_follow_ups_says_to_poll() {
    let text = execute(&submission(TaskStatus::Queued), &Outlook::default(), None);
    insta::assert_snapshot!("execute_queued_plain", text);
}

#[test]
fn execute_task_for_a_letta_agent_says_no_need_to_poll() {
    let text = execute(&submission(TaskStatus::Running), &letta(), None);
    insta::assert_snapshot!("execute_running_letta", text);
    assert!(
        text.contains(&format!("memory block handoff_{ID}")),
        "{text}"
    );
}

#[test]
fn a_finished_sync_call_shows_the_answer_and_the_last_output() {
    let mut out = submission(TaskStatus::Completed);
    out.exit = Some(ExitInfo {
        code: Some(0),
        signal: None,
    });
    out.output_tail = (1..=8).map(|n| format!("test t{n} ... ok")).collect();
    let outlook = Outlook {
        answer: Some("All 8 tests pass.\nI fixed the off-by-one in src/lexer.rs.".into()),
        ..letta()
    };
    let text = execute(&out, &outlook, Some(Duration::from_secs(12)));
    insta::assert_snapshot!("execute_sync_completed", text);
    assert!(!text.contains("no need to poll"), "{text}");
}

#[test]
fn a_sync_call_that_ran_out_of_time_says_how_long_it_waited() {
    let text = execute(
        &submission(TaskStatus::Running),
        &Outlook::default(),
        Some(Duration::from_secs(30)),
    );
    insta::assert_snapshot!("execute_sync_still_running", text);
}

#[test]
fn an_idempotent_replay_says_nothing_new_was_queued() {
    let mut out = submission(TaskStatus::Running);
    out.created = false;
    insta::assert_snapshot!("execute_replayed", execute(&out, &Outlook::default(), None));
}

#[test]
fn status_of_a_running_task_names_its_latest_step() {
    let out = status_output(view(TaskStatus::Running));
    insta::assert_snapshot!("status_running_plain", status(&out, &Outlook::default()));
    insta::assert_snapshot!("status_running_letta", status(&out, &letta()));
}

#[test]
fn status_of_a_queued_task_names_its_place_and_the_block_to_come() {
    let mut out = status_output(view(TaskStatus::Queued));
    out.queue_position = Some(3);
    out.recent_events = vec![event(1, EventKind::Status, "queued")];
    insta::assert_snapshot!("status_queued_letta", status(&out, &letta()));
}

#[test]
fn status_of_a_task_waiting_for_input_says_how_to_answer() {
    let mut out = status_output(view(TaskStatus::InputRequired));
    out.pending_input = vec![
        PendingInputView {
            request_id: "per_1".into(),
            kind: "permission".into(),
            permission: "bash".into(),
            patterns: vec!["rm -rf build".into()],
            title: "Remove the build directory".into(),
            detail: json!({}),
        },
        PendingInputView {
            request_id: "que_2".into(),
            kind: "question".into(),
            permission: "question".into(),
            patterns: Vec::new(),
            title: "Which database should the tests use?".into(),
            detail: json!({}),
        },
    ];
    let text = status(&out, &letta());
    insta::assert_snapshot!("status_input_required", text);
    assert!(!text.contains("no need to poll"), "{text}");
}

#[test]
fn status_of_a_failed_task_gives_the_outcome_the_evaluator_and_the_answer() {
    let mut task = view(TaskStatus::Failed);
    task.exit = Some(ExitInfo {
        code: Some(1),
        signal: None,
    });
    task.error = Some("the executor exited with code 1".into());
    let mut out = status_output(task);
    out.completion = Some(json!({
        "status": "not_done", "cycles": 2, "reason": "cargo test still fails in parser::tests",
        "remaining": ["fix parser::tests::nested", "run cargo test"]
    }));
    out.model_usage = Some(ModelUsage {
        calls: 3,
        input_tokens: 1_234,
        output_tokens: 456,
        cached_tokens: 200,
        cost_usd: 0.0123,
    });
    let outlook = Outlook {
        answer: Some("I could not make the nested test pass.".into()),
        ..letta()
    };
    insta::assert_snapshot!("status_failed", status(&out, &outlook));
}

#[test]
fn status_of_a_task_that_never_started_says_so() {
    let mut task = view(TaskStatus::Failed);
    task.started_at_ms = None;
    task.duration_ms = None;
    task.error = Some("executor `claude` is not installed".into());
    let text = status(&status_output(task), &Outlook::default());
    assert!(
        text.starts_with(&format!(
            "Task {ID} failed before it started (opencode): executor `claude` is not installed."
        )),
        "{text}"
    );
}

#[test]
fn controls_say_what_changed() {
    let out = |status, changed, message: &str| SendTaskControlOutput {
        task_id: ID.into(),
        status,
        changed,
        message: message.into(),
    };
    let cancelled = out(
        TaskStatus::Cancelled,
        true,
        "cancelled; the executor's processes are stopped",
    );
    let paused = out(TaskStatus::Paused, true, "paused");
    let again = out(TaskStatus::Paused, false, "already paused");
    let late = out(
        TaskStatus::Completed,
        false,
        "task already finished (completed)",
    );
    let texts = [
        control(&cancelled, ControlAction::Cancel, &letta()),
        control(&paused, ControlAction::Pause, &letta()),
        control(&again, ControlAction::Pause, &Outlook::default()),
        control(&late, ControlAction::Cancel, &Outlook::default()),
    ];
    insta::assert_snapshot!("controls", texts.join("\n---\n"));
}

#[test]
fn messages_say_whether_the_executor_has_them() {
    let delivered = SendTaskMessageOutput {
        task_id: ID.into(),
        status: TaskStatus::Running,
        event_seq: 42,
        delivered: true,
        note: "delivered to the running session".into(),
    };
    let queued = SendTaskMessageOutput {
        status: TaskStatus::Queued,
        delivered: false,
        note: "the task is queued; the message will be added to its prompt when it starts".into(),
        ..delivered.clone()
    };
    let texts = [
        message(&delivered, &letta()),
        message(&queued, &Outlook::default()),
    ];
    insta::assert_snapshot!("messages", texts.join("\n---\n"));
}

fn listed(n: usize) -> (ListTasksOutput, Vec<i64>) {
    let statuses = [
        TaskStatus::Running,
        TaskStatus::Completed,
        TaskStatus::Failed,
    ];
    let tasks: Vec<TaskView> = (0..n)
        .map(|i| {
            let mut task = view(statuses[i % 3]);
            task.task_id = format!("task_{:a>26}", i);
            if task.status == TaskStatus::Failed {
                task.error = Some("exit code 101".into());
            }
            task
        })
        .collect();
    let seqs = (0..n as i64).map(|i| 100 - i).collect();
    (
        ListTasksOutput {
            tasks,
            next_cursor: Some("c97".into()),
        },
        seqs,
    )
}

#[test]
fn a_task_list_pages_through_text_alone() {
    let (out, seqs) = listed(3);
    insta::assert_snapshot!("list_tasks", task_list(&out, &seqs, None, None));
    let empty = ListTasksOutput {
        tasks: Vec::new(),
        next_cursor: None,
    };
    assert_eq!(
        task_list(&empty, &[], Some(TaskStatus::Failed), None),
        "No failed tasks to list."
    );
}

#[test]
fn a_text_filtered_list_resumes_with_its_text() {
    let (out, seqs) = listed(200);
    let text = task_list(&out, &seqs, None, Some("login"));
    assert!(
        text.contains(r#"list_tasks {"cursor":"c81","limit":20,"text":"login"}"#),
        "{text}"
    );
}

#[test]
fn a_long_task_list_shows_twenty_and_resumes_after_the_last_shown() {
    let (out, seqs) = listed(200);
    let text = task_list(&out, &seqs, Some(TaskStatus::Running), None);
    assert_eq!(
        text.lines().filter(|l| l.starts_with("- task_")).count(),
        20
    );
    assert!(
        text.contains("Showing the newest 20 of the 200 on this page."),
        "{text}"
    );
    assert!(
        text.contains(r#"list_tasks {"cursor":"c81","limit":20,"status":"running"}"#),
        "{text}"
    );
    assert!(text.len() < 4096, "{} bytes", text.len());
}

fn history_page(status: TaskStatus, events: usize, total: u64) -> GetTaskHistoryOutput {
    GetTaskHistoryOutput {
        task: view(status),
        events: (1..=events as i64)
            .map(|seq| event(seq, EventKind::Output, &format!("line {seq}")))
            .collect(),
        total_events: total,
        events_offset: 0,
        has_more: (events as u64) < total,
        artifacts: None,
    }
}

#[test]
fn a_history_page_lists_events_and_where_the_next_page_starts() {
    insta::assert_snapshot!(
        "history_running",
        history(&history_page(TaskStatus::Running, 3, 57))
    );
    let long = history(&history_page(TaskStatus::Running, 1000, 2000));
    assert_eq!(long.lines().filter(|l| l.starts_with('#')).count(), 25);
    assert!(
        long.contains(r#"get_task_history {"events_limit":25,"events_offset":25,"task_id""#),
        "{long}"
    );
}

#[test]
fn a_finished_history_shows_its_stored_outputs() {
    let mut page = history_page(TaskStatus::Completed, 2, 2);
    page.artifacts = Some(vec![
        ArtifactView {
            kind: ArtifactKind::Output,
            size: 20_000,
            capped: false,
            content: "x".repeat(20_000) + "\ntest result: ok. 8 passed\n",
            truncated: false,
            diff_stat: None,
            offset: None,
            next_offset: None,
        },
        ArtifactView {
            kind: ArtifactKind::Diff,
            size: 120,
            capped: false,
            content: "--- a/src/lexer.rs\n+++ b/src/lexer.rs\n@@ -1 +1 @@\n-let end = len;\n+let end = len - 1;\n".into(),
            truncated: false,
            diff_stat: None,
            offset: None,
            next_offset: None,
        },
    ]);
    let text = history(&page);
    let (head, output_tail) = text.split_at(text.find("Stored output").unwrap());
    insta::assert_snapshot!("history_completed", head);
    assert!(
        output_tail.contains("test result: ok. 8 passed"),
        "{output_tail}"
    );
    assert!(output_tail.len() < 2048, "{} bytes", output_tail.len());
    assert!(
        history(&history_page(TaskStatus::Completed, 2, 2)).contains("\"include_artifacts\":true")
    );
}

#[test]
fn a_listing_names_entries_and_how_to_read_one() {
    let out = GetTaskFilesOutput {
        task_id: ID.into(),
        entries: vec![
            FileEntryView {
                path: "src".into(),
                kind: "dir".into(),
                size: None,
            },
            FileEntryView {
                path: "src/lexer.rs".into(),
                kind: "file".into(),
                size: Some(1229),
            },
            FileEntryView {
                path: "Cargo.toml".into(),
                kind: "file".into(),
                size: Some(212),
            },
        ],
        truncated: false,
    };
    insta::assert_snapshot!("files", file_listing(&out, None));
    let empty = GetTaskFilesOutput {
        entries: Vec::new(),
        ..out
    };
    assert_eq!(
        file_listing(&empty, Some("docs")),
        format!("docs in task {ID}'s working directory is empty.")
    );
}

#[test]
fn a_file_chunk_says_where_the_rest_starts() {
    let whole = ReadTaskFileOutput {
        path: "Cargo.toml".into(),
        size: 25,
        offset: 0,
        bytes_read: 25,
        content: Some("[package]\nname = \"lexer\"\n".into()),
        binary: false,
        has_more: false,
    };
    insta::assert_snapshot!("file_whole", file_chunk(&whole, ID));
    let big = ReadTaskFileOutput {
        path: "big.log".into(),
        size: 100_000,
        offset: 0,
        bytes_read: 65_536,
        content: Some("y".repeat(65_536)),
        binary: false,
        has_more: true,
    };
    let text = file_chunk(&big, ID);
    let (header, body) = text.split_once('\n').unwrap();
    insta::assert_snapshot!("file_part_header", header);
    assert_eq!(body.len(), FILE_TEXT_BYTES);
    let binary = ReadTaskFileOutput {
        content: None,
        binary: true,
        ..big
    };
    assert_eq!(
        file_chunk(&binary, ID),
        "big.log is a binary file of 97.7 KiB; its content is not shown."
    );
}

fn approval(id: &str, scope: ApprovalScope, pattern: &str) -> Approval {
    Approval {
        id: id.into(),
        agent_id: AgentId::parse("agent-a").unwrap(),
        scope,
        task_id: TaskId::parse(ID).unwrap(),
        project: "/srv/repos/parser".into(),
        permission: "bash".into(),
        pattern: pattern.into(),
        created_at: 0,
    }
}

#[test]
fn approvals_list_what_is_allowed_and_how_to_revoke() {
    let out = ListApprovalsOutput {
        approvals: vec![
            approval(
                "ap_0123456789abcdef0123456789abcdef",
                ApprovalScope::Task,
                "git *",
            ),
            approval(
                "ap_fedcba9876543210fedcba9876543210",
                ApprovalScope::Project,
                "cargo test",
            ),
        ],
    };
    insta::assert_snapshot!("approvals", approvals(&out, None));
    let none = ListApprovalsOutput {
        approvals: Vec::new(),
    };
    assert!(approvals(&none, None).starts_with("No standing approvals:"));
    let gone = RevokeApprovalOutput {
        revoked: out.approvals[0].clone(),
        message: String::new(),
    };
    insta::assert_snapshot!("revoked", revoked(&gone));
}

#[test]
fn the_audit_log_lists_decisions_and_where_older_ones_start() {
    let record =
        |seq, outcome: &str, source: &str, subject: &str, stage: &str, reason: &str| AuditRecord {
            seq,
            at: 0,
            agent_id: Some(AgentId::parse("agent-a").unwrap()),
            task_id: Some(TaskId::parse(ID).unwrap()),
            source: source.into(),
            subject: subject.into(),
            outcome: outcome.into(),
            stage: stage.into(),
            reason: reason.into(),
            detail: json!({}),
        };
    let out = GetAuditLogOutput {
        records: vec![
            record(
                12,
                "deny",
                "executor",
                "bash",
                "rule",
                "rule bash `rm *` denies",
            ),
            record(11, "ok", "tool", "execute_task", "execute", ""),
        ],
        next_before_seq: Some(11),
    };
    insta::assert_snapshot!("audit_log", audit_log(&out, None));
}

#[test]
fn a_stored_output_part_names_the_call_for_the_next_part() {
    let mut page = history_page(TaskStatus::Completed, 0, 4);
    page.artifacts = Some(vec![ArtifactView {
        kind: ArtifactKind::Diff,
        size: 90_000,
        capped: false,
        content: "+line\n".into(),
        truncated: true,
        diff_stat: None,
        offset: Some(100),
        next_offset: Some(106),
    }]);
    let text = artifact_part(&page, ArtifactKind::Diff);
    assert!(
        text.contains("stored diff of 87.9 KiB, bytes 100–106:\n+line\n"),
        "{text}"
    );
    assert!(
        text.ends_with(r#"Next part: get_task_history {"artifact":"diff","artifact_offset":106,"task_id":"task_abcdefghijklmnopqrstuvwxyz"}."#),
        "{text}"
    );
    if let Some(parts) = page.artifacts.as_mut() {
        parts[0].next_offset = None;
    }
    let last = artifact_part(&page, ArtifactKind::Diff);
    assert!(
        last.ends_with("That is the end of the stored diff."),
        "{last}"
    );
    page.artifacts = Some(Vec::new());
    let none = artifact_part(&page, ArtifactKind::Log);
    assert!(none.ends_with("has no stored log."), "{none}");
    assert!(!text.contains("read_tool_output") && !last.contains("read_tool_output"));
}

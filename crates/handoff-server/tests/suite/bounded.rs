//! What a stranger's bad calls cost: errors that name the field and size without echoing a
//! megabyte back, bounded audit rows, failed calls charged to the caller's rate, and failed
//! reads counted in the metrics instead of written to the store.

use serde_json::{Value, json};

use super::common::{Reply, TestServer, call, start};

const AGENT: [(&str, &str); 1] = [("x-agent-id", "agent-bounded")];

/// The `{code, message, pointer}` body of a tool error result.
fn tool_error(reply: &Reply) -> Value {
    let result = &reply.body["result"];
    assert_eq!(result["isError"], true, "not a tool error: {}", reply.body);
    result["_meta"]["handoff/error"].clone()
}

async fn audit_rows(server: &TestServer, session: &str) -> Vec<Value> {
    let reply = server
        .session_call(
            session,
            &AGENT,
            &call(900, "get_audit_log", json!({"limit": 100})),
        )
        .await;
    let result = &reply.body["result"]["structuredContent"];
    result["records"]
        .as_array()
        .unwrap_or_else(|| panic!("no records: {}", reply.body))
        .clone()
}

/// Polls the audit log until a row about `subject` appears (rows are written in the
/// background).
async fn wait_for_row(server: &TestServer, session: &str, subject: &str) -> Vec<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let rows = audit_rows(server, session).await;
        if rows.iter().any(|r| r["subject"] == subject) {
            return rows;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no audit row about {subject}: {rows:?}"
        );
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn a_megabyte_argument_is_refused_by_field_and_size_and_audited_bounded() {
    let server = start(&[]).await;
    let session = server.initialize(&AGENT).await;
    let huge = "a".repeat(1 << 20);
    let reply = server
        .session_call(&session, &AGENT, &call(1, "ping", json!({"message": huge})))
        .await;
    let answer = reply.body.to_string();
    assert!(answer.len() < 1024, "an answer of {} bytes", answer.len());
    let error = tool_error(&reply);
    assert_eq!(error["code"], "INVALID_ARGUMENTS", "{error}");
    assert_eq!(error["pointer"], "/message", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("1048576 bytes"), "{message}");
    assert!(message.contains("1024"), "names the limit: {message}");

    // A refused write is audited; its row is bounded however big the argument was.
    let reply = server
        .session_call(
            &session,
            &AGENT,
            &call(
                2,
                "send_task_control",
                json!({"task_id": huge, "control": "cancel", "reason": huge}),
            ),
        )
        .await;
    assert!(
        reply.body.to_string().len() < 1024,
        "{}",
        reply.body.to_string().len()
    );
    let rows = wait_for_row(&server, &session, "send_task_control").await;
    for row in &rows {
        let text = row.to_string();
        assert!(text.len() < 2048, "an audit row of {} bytes", text.len());
    }
}

#[tokio::test]
async fn invalid_calls_use_up_the_callers_rate_and_not_anothers() {
    let server = start(&[
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "1"),
        ("HANDOFF_SUBMISSION_BURST", "3"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_ARGV", r#"["true"]"#),
    ])
    .await;
    let session = server.initialize(&AGENT).await;
    for id in 0..3 {
        let reply = server
            .session_call(&session, &AGENT, &call(id, "ping", json!({"message": 5})))
            .await;
        assert_eq!(tool_error(&reply)["code"], "INVALID_ARGUMENTS");
    }
    let reply = server
        .session_call(&session, &AGENT, &call(3, "ping", json!({"message": 5})))
        .await;
    let error = tool_error(&reply);
    assert_eq!(error["code"], "RATE_LIMITED", "{error}");
    assert!(error["retry_after_ms"].as_u64().unwrap() > 0, "{error}");
    // The same rate: the caller's submissions wait too.
    let reply = server
        .session_call(
            &session,
            &AGENT,
            &call(
                4,
                "execute_task",
                json!({"task_description": "x", "sync": false}),
            ),
        )
        .await;
    assert_eq!(tool_error(&reply)["code"], "RATE_LIMITED", "{}", reply.body);
    // Valid reads still answer, and other agents have their own bucket.
    let reply = server
        .session_call(&session, &AGENT, &call(5, "ping", json!({})))
        .await;
    assert_eq!(reply.body["result"]["isError"], false, "{}", reply.body);
    let other = [("x-agent-id", "agent-other")];
    let other_session = server.initialize(&other).await;
    let reply = server
        .session_call(
            &other_session,
            &other,
            &call(6, "ping", json!({"message": 5})),
        )
        .await;
    assert_eq!(tool_error(&reply)["code"], "INVALID_ARGUMENTS");
}

#[tokio::test]
async fn reads_of_unknown_ids_are_counted_not_stored() {
    let server = start(&[("HANDOFF_SUBMISSIONS_PER_MINUTE", "0")]).await;
    let session = server.initialize(&AGENT).await;
    let unknown = format!("task_{}", "a".repeat(26));
    const READS: u64 = 25;
    for id in 0..READS {
        let reply = server
            .session_call(
                &session,
                &AGENT,
                &call(id, "get_task_status", json!({"task_id": unknown})),
            )
            .await;
        assert_eq!(tool_error(&reply)["code"], "NOT_FOUND", "{}", reply.body);
    }
    // A refused write after them is stored: once it is there, the reads would be too.
    server
        .session_call(
            &session,
            &AGENT,
            &call(
                100,
                "send_task_control",
                json!({"task_id": unknown, "control": "cancel"}),
            ),
        )
        .await;
    let rows = wait_for_row(&server, &session, "send_task_control").await;
    let reads: Vec<&Value> = rows
        .iter()
        .filter(|r| r["subject"] == "get_task_status")
        .collect();
    assert!(reads.is_empty(), "failed reads were stored: {reads:?}");

    let text = server.metrics().await;
    let expected = format!(
        r#"handoff_tool_calls_refused_unrecorded_total{{tool="get_task_status",code="NOT_FOUND"}} {READS}"#
    );
    assert!(text.contains(&expected), "missing `{expected}` in:\n{text}");
}

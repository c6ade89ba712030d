//! `GET /metrics`: Prometheus text with bounded labels.

use serde_json::json;

use super::common::{call, start};

#[tokio::test]
async fn metrics_count_requests_and_tasks_without_task_ids() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ])
    .await;
    let session = server.initialize(&[("x-agent-id", "agent-m")]).await;
    let submitted = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-m")],
            &call(
                1,
                "execute_task",
                json!({"task_description": "echo hi", "sync": true}),
            ),
        )
        .await;
    let result = &submitted.body["result"]["structuredContent"];
    assert_eq!(result["status"], "completed", "{:?}", submitted.body);
    let task_id = result["task_id"].as_str().unwrap().to_owned();
    // Refused at the edge: still counted.
    server
        .post(
            &[("origin", "https://evil.example")],
            &call(2, "ping", json!({})),
        )
        .await;

    let base = server.url.trim_end_matches("/mcp");
    let response = server
        .client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    for expected in [
        r#"handoff_tasks{state="completed"} 1"#,
        r#"handoff_tasks{state="queued"} 0"#,
        "handoff_queue_depth 0",
        r#"handoff_task_duration_seconds_count{executor="command",outcome="completed"} 1"#,
        r#"handoff_mcp_requests_total{method="tools/call",outcome="ok"} 1"#,
        r#"handoff_mcp_requests_total{method="initialize",outcome="ok"} 1"#,
        r#"handoff_mcp_requests_total{method="refused at edge",outcome="rejected"} 1"#,
        r#"handoff_executor_calls_total{executor="command",operation="start",outcome="ok"} 1"#,
    ] {
        assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
    }
    assert!(!text.contains(&task_id), "task ids must never be labels");
}

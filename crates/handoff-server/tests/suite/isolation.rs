//! Fail closed: an executor whose isolation level this host cannot provide refuses tasks with
//! the reason, and `health` says so.

use serde_json::json;

use super::common::{call, start};

#[tokio::test]
async fn an_unavailable_level_refuses_submissions_with_the_reason() {
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        // No Docker engine answers on these machines (an engine would make this run).
        ("HANDOFF_COMMAND_ISOLATION", "container"),
        ("HANDOFF_RUNNER_IMAGE", "alpine:3"),
        ("HANDOFF_DOCKER", "/nonexistent/docker"),
    ])
    .await;
    let session = server.initialize(&[("x-agent-id", "agent-i")]).await;
    let reply = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-i")],
            &call(1, "execute_task", json!({"task_description": "echo never"})),
        )
        .await;
    let result = &reply.body["result"];
    assert_eq!(result["isError"], true, "{:?}", reply.body);
    let body = &result["_meta"]["handoff/error"];
    assert_eq!(body["code"], "INVALID_ARGUMENTS", "{body}");
    let message = body["message"].as_str().unwrap();
    assert!(
        message.contains("isolation level `container` is not available"),
        "{message}"
    );
    let health = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-i")],
            &call(2, "health", json!({})),
        )
        .await;
    let report = health.body["result"]["structuredContent"].to_string();
    assert!(
        report.contains("command: container UNAVAILABLE"),
        "{report}"
    );
}

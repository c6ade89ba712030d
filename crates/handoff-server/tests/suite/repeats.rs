//! The loop guard on `execute_task`: resubmitting work that finished is not a loop; identical
//! submissions still queued or running are.

use serde_json::{Value, json};

use super::common::{TestServer, WAIT_LIMIT, start, wait_until};

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ]
}

/// One `tools/call` as `agent-a` (a plain 2026-07-28 request: a `sync` call waits).
async fn call(server: &TestServer, tool: &str, arguments: Value) -> Value {
    let reply = server
        .stateless_with(
            1,
            "tools/call",
            Some(tool),
            json!({"name": tool, "arguments": arguments}),
            &[("x-agent-id", "agent-a")],
            json!({}),
        )
        .await;
    let result = reply.body["result"].clone();
    assert!(result.is_object(), "{:?}", reply.body);
    result
}

fn structured(result: &Value) -> &Value {
    assert_eq!(result["isError"], false, "{result}");
    &result["structuredContent"]
}

fn error(result: &Value) -> Value {
    assert_eq!(result["isError"], true, "{result}");
    result["_meta"]["handoff/error"].clone()
}

async fn wait_completed(server: &TestServer, task_id: &str) {
    wait_until(&format!("{task_id} to complete"), WAIT_LIMIT, async || {
        let status = call(server, "get_task_status", json!({"task_id": task_id})).await;
        match structured(&status)["status"].as_str().unwrap() {
            "completed" => Ok(()),
            "queued" | "running" => Err(status),
            other => panic!("{task_id} ended {other}: {status}"),
        }
    })
    .await;
}

#[tokio::test]
async fn finished_identical_submissions_are_not_a_loop() {
    let server = start(&env()).await;
    let args = json!({"task_description": "echo same work", "sync": true});
    for round in 1..=4 {
        let done = call(&server, "execute_task", args.clone()).await;
        assert_eq!(structured(&done)["status"], "completed", "round {round}");
    }
}

#[tokio::test]
async fn identical_submissions_still_active_are_refused_until_they_finish() {
    let server = start(&env()).await;
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; echo through",
        gate.display()
    );
    let args = json!({"task_description": script});
    let mut ids = Vec::new();
    for _ in 0..2 {
        let queued = call(&server, "execute_task", args.clone()).await;
        ids.push(structured(&queued)["task_id"].as_str().unwrap().to_owned());
    }

    let refused = error(&call(&server, "execute_task", args.clone()).await);
    assert_eq!(refused["code"], "DENIED", "{refused}");
    let message = refused["message"].as_str().unwrap();
    assert!(message.contains("loop guard"), "{message}");
    for id in &ids {
        assert!(message.contains(id.as_str()), "{message}");
    }
    // Different work is not a repeat.
    let other = json!({"task_description": format!("{script} # other")});
    let other = call(&server, "execute_task", other).await;
    ids.push(structured(&other)["task_id"].as_str().unwrap().to_owned());

    std::fs::write(&gate, "").unwrap();
    for id in &ids {
        wait_completed(&server, id).await;
    }
    let again = call(&server, "execute_task", args).await;
    let again = structured(&again)["task_id"].as_str().unwrap().to_owned();
    wait_completed(&server, &again).await;
}

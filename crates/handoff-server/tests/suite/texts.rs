//! What a client that reads only a result's text (Letta, many others) gets: words for the
//! model, the structured result beside them unchanged, and — for a Letta agent's task with
//! the integration on — the promise that no polling is needed.

use serde_json::{Value, json};

use super::common::{Reply, TestServer, call, start};

/// A Letta agent's id (`agent-<uuid>`).
const LETTA_AGENT: &str = "agent-597b5756-2915-4560-ba6b-91005f085166";

fn text(reply: &Reply) -> String {
    reply.body["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {:?}", reply.body))
        .to_owned()
}

async fn call_as(server: &TestServer, agent: &str, tool: &str, arguments: Value) -> Reply {
    let session = server.initialize(&[("x-agent-id", agent)]).await;
    server
        .session_call(
            &session,
            &[("x-agent-id", agent)],
            &call(1, tool, arguments),
        )
        .await
}

#[tokio::test]
async fn results_are_words_and_errors_carry_their_body_in_meta() {
    let server = start(&[]).await;
    let ping = call_as(&server, "agent-t", "ping", json!({"message": "hi"})).await;
    assert_eq!(ping.body["result"]["structuredContent"]["ok"], true);
    let words = text(&ping);
    assert!(words.starts_with("Handoff "), "{words}");
    assert!(words.contains("You are agent agent-t. Echo: hi"), "{words}");

    let bad = call_as(&server, "agent-t", "ping", json!({"message": 5})).await;
    let result = &bad.body["result"];
    assert_eq!(result["isError"], true, "{:?}", bad.body);
    let words = text(&bad);
    assert!(words.starts_with("Error INVALID_ARGUMENTS: "), "{words}");
    assert!(words.contains("\nFix: correct /message"), "{words}");
    let body = &result["_meta"]["handoff/error"];
    assert_eq!(body["code"], "INVALID_ARGUMENTS", "{result}");
    assert_eq!(body["pointer"], "/message", "{result}");

    let missing = call_as(
        &server,
        "agent-t",
        "get_task_status",
        json!({"task_id": "task_abcdefghijklmnopqrstuvwxyz"}),
    )
    .await;
    let words = text(&missing);
    assert!(words.starts_with("Error NOT_FOUND: "), "{words}");
    assert!(words.contains("list_tasks shows your tasks"), "{words}");
}

#[tokio::test]
async fn only_a_letta_agent_with_notifications_on_is_told_not_to_poll() {
    // Nothing listens there: the integration keeps retrying its writes in the background,
    // which is all this test needs of it.
    let server = start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("LETTA_API_URL", "http://127.0.0.1:9"),
    ])
    .await;
    let submit = |agent: &'static str, notify: bool| {
        let server = &server;
        async move {
            let arguments = json!({"task_description": "sleep 30", "notify": notify});
            let reply = call_as(server, agent, "execute_task", arguments).await;
            let id = reply.body["result"]["structuredContent"]["task_id"]
                .as_str()
                .unwrap_or_else(|| panic!("no task: {:?}", reply.body))
                .to_owned();
            (id, text(&reply))
        }
    };

    let (letta_task, words) = submit(LETTA_AGENT, true).await;
    assert!(
        words.starts_with(&format!("Task {letta_task} is ")),
        "{words}"
    );
    assert!(
        words.contains("You will get a message when it ends; no need to poll."),
        "{words}"
    );
    assert!(words.contains(&format!("handoff_{letta_task}")), "{words}");
    let status = call_as(
        &server,
        LETTA_AGENT,
        "get_task_status",
        json!({"task_id": letta_task}),
    )
    .await;
    assert!(
        text(&status).contains("no need to poll"),
        "{}",
        text(&status)
    );

    let (quiet_task, words) = submit(LETTA_AGENT, false).await;
    assert!(!words.contains("no need to poll"), "{words}");
    assert!(words.contains("No message comes when it ends"), "{words}");

    let (plain_task, words) = submit("agent-plain", true).await;
    assert!(!words.contains("memory block"), "{words}");
    assert!(
        words.contains(&format!(
            "Call get_task_status {{\"task_id\":\"{plain_task}\"}} for progress."
        )),
        "{words}"
    );

    for (agent, task) in [
        (LETTA_AGENT, &letta_task),
        (LETTA_AGENT, &quiet_task),
        ("agent-plain", &plain_task),
    ] {
        let cancelled = call_as(
            &server,
            agent,
            "send_task_control",
            json!({"task_id": task, "control": "cancel"}),
        )
        .await;
        let words = text(&cancelled);
        assert!(
            words.starts_with(&format!("Task {task} was cancelled")),
            "{words}"
        );
    }
}

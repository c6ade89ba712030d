//! The Tasks extension (`io.modelcontextprotocol/tasks`) from a raw 2026-07-28 client: task
//! handles for `execute_task`, `tasks/get|update|cancel`, authorisation, and what clients that
//! did not declare the extension get.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::common::{
    Reply, TestServer, WAIT_LIMIT, error_code, start, start_with_data, wait_until,
};

const TASKS: &str = "io.modelcontextprotocol/tasks";

fn env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_TASK_POLL_INTERVAL_MS", "250"),
    ]
}

fn declaring() -> Value {
    json!({"extensions": {TASKS: {}}})
}

/// One agent's raw 2026-07-28 client, declaring the extension or not.
struct Client<'a> {
    server: &'a TestServer,
    agent: &'a str,
    capabilities: Value,
}

impl<'a> Client<'a> {
    fn new(server: &'a TestServer, agent: &'a str) -> Self {
        Self {
            server,
            agent,
            capabilities: declaring(),
        }
    }

    fn without_tasks(server: &'a TestServer, agent: &'a str) -> Self {
        Self {
            server,
            agent,
            capabilities: json!({}),
        }
    }

    async fn request(&self, method: &str, name: Option<&str>, params: Value) -> Reply {
        self.server
            .stateless_with(
                1,
                method,
                name,
                params,
                &[("x-agent-id", self.agent)],
                self.capabilities.clone(),
            )
            .await
    }

    async fn execute(&self, description: &str) -> Value {
        let reply = self
            .request(
                "tools/call",
                Some("execute_task"),
                json!({"name": "execute_task", "arguments": {"task_description": description}}),
            )
            .await;
        reply.body["result"].clone()
    }

    async fn get(&self, task_id: &str) -> Reply {
        self.request("tasks/get", Some(task_id), json!({"taskId": task_id}))
            .await
    }

    /// Polls `tasks/get` until the status is one of `want`; each answer on the way advertises
    /// a poll interval.
    async fn poll(&self, task_id: &str, want: &[&str]) -> Value {
        let what = format!("{task_id} to become one of {want:?}");
        wait_until(&what, WAIT_LIMIT, async || {
            let reply = self.get(task_id).await;
            let result = reply.body["result"].clone();
            assert!(result.is_object(), "{:?}", reply.body);
            if want.contains(&result["status"].as_str().unwrap_or_default()) {
                return Ok(result);
            }
            assert!(result["pollIntervalMs"].is_u64(), "{result}");
            Err(result)
        })
        .await
    }
}

#[tokio::test]
async fn discover_advertises_the_extension() {
    let server = start(&env()).await;
    let reply = server
        .stateless(1, "server/discover", None, json!({}))
        .await;
    assert_eq!(
        reply.body["result"]["capabilities"]["extensions"][TASKS],
        json!({}),
        "{:?}",
        reply.body
    );
}

#[tokio::test]
async fn execute_task_returns_a_task_polled_to_the_tool_result() {
    let server = start(&env()).await;
    let client = Client::new(&server, "agent-a");
    let created = client
        .execute("sleep 0.5; echo made > out.txt; echo all done")
        .await;
    assert_eq!(created["resultType"], "task", "{created}");
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    assert!(task_id.starts_with("task_"), "{created}");
    assert_eq!(created["status"], "working");
    assert_eq!(created["pollIntervalMs"], 250);
    assert!(created["ttlMs"].as_u64().unwrap() >= 29 * 86_400_000);
    for field in ["createdAt", "lastUpdatedAt"] {
        let at = created[field].as_str().unwrap();
        assert!(at.ends_with('Z') && at.contains('T'), "{field}: {at}");
    }

    let done = client.poll(&task_id, &["completed", "failed"]).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resultType"], "complete");
    let result = &done["result"];
    assert_ne!(result["isError"], true, "{done}");
    let structured = &result["structuredContent"];
    assert_eq!(structured["task_id"], task_id.as_str());
    assert_eq!(structured["status"], "completed");
    assert_eq!(structured["output_tail"], json!(["all done"]));
    // Its text, for clients that read content only: the outcome and the output, in words.
    let text = result["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("Task {task_id} completed after ")),
        "{text}"
    );
    assert!(text.contains("Last output:\n  all done"), "{text}");
    let workdir = structured["workdir"].as_str().unwrap();
    assert_eq!(
        std::fs::read_to_string(format!("{workdir}/out.txt")).unwrap(),
        "made\n"
    );
}

#[tokio::test]
async fn a_task_that_fails_at_its_work_completes_with_the_failure() {
    let server = start(&env()).await;
    let client = Client::new(&server, "agent-a");
    let created = client.execute("echo broken; exit 3").await;
    let task_id = created["taskId"].as_str().unwrap().to_owned();
    let done = client.poll(&task_id, &["completed", "failed"]).await;
    // The run happened: a tool result saying how it ended, as a sync call would return.
    assert_eq!(done["status"], "completed", "{done}");
    let structured = &done["result"]["structuredContent"];
    assert_eq!(structured["status"], "failed");
    assert_eq!(structured["exit"]["code"], 3);
}

#[tokio::test]
async fn clients_without_the_extension_get_plain_results_and_no_tasks_api() {
    let server = start(&env()).await;
    let plain = Client::without_tasks(&server, "agent-a");
    let result = plain.execute("echo plain").await;
    assert_ne!(result["resultType"], "task", "{result}");
    let task_id = result["structuredContent"]["task_id"].as_str().unwrap();
    assert!(task_id.starts_with("task_"), "{result}");
    assert_eq!(error_code(&plain.get(task_id).await), -32021);
    // A legacy session gets the plain result too, even when it lists the extension at
    // initialize (the Inspector does, and cannot read a task handle in that era).
    let session = server
        .initialize_with(&[("x-agent-id", "agent-a")], declaring())
        .await;
    let reply = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-a")],
            &super::common::call(
                2,
                "execute_task",
                json!({"task_description": "echo legacy"}),
            ),
        )
        .await;
    assert!(
        reply.body["result"]["structuredContent"]["task_id"].is_string(),
        "{:?}",
        reply.body
    );
    assert!(reply.body["result"].get("resultType").is_none());
}

#[tokio::test]
async fn tasks_belong_to_the_agent_that_created_them() {
    let server = start(&env()).await;
    let a = Client::new(&server, "agent-a");
    let b = Client::new(&server, "agent-b");
    let created = a.execute("sleep 20").await;
    let task_id = created["taskId"].as_str().unwrap().to_owned();

    let foreign = b.get(&task_id).await;
    assert_eq!(error_code(&foreign), -32602);
    let unknown = b.get("task_aaaaaaaaaaaaaaaaaaaaaaaaaa").await;
    assert_eq!(error_code(&unknown), -32602);
    // Foreign and unknown ids read alike: nothing tells B the task exists.
    assert_eq!(
        foreign.body["error"]["message"]
            .as_str()
            .unwrap()
            .replace(&task_id, "ID"),
        unknown.body["error"]["message"]
            .as_str()
            .unwrap()
            .replace("task_aaaaaaaaaaaaaaaaaaaaaaaaaa", "ID")
    );
    assert_eq!(error_code(&b.get("not-a-task-id").await), -32602);
    let cancel = b
        .request("tasks/cancel", Some(&task_id), json!({"taskId": task_id}))
        .await;
    assert_eq!(error_code(&cancel), -32602);
    let update = b
        .request(
            "tasks/update",
            Some(&task_id),
            json!({"taskId": task_id, "inputResponses": {}}),
        )
        .await;
    assert_eq!(error_code(&update), -32602);
    for method in ["tasks/list", "tasks/result"] {
        let reply = a
            .request(method, Some(&task_id), json!({"taskId": task_id}))
            .await;
        assert_eq!(error_code(&reply), -32601, "{method}: {:?}", reply.body);
    }
    // B's attempts changed nothing.
    assert_eq!(a.get(&task_id).await.body["result"]["status"], "working");

    // tasks/cancel stops the executor; the handle ends `cancelled`.
    let ack = a
        .request("tasks/cancel", Some(&task_id), json!({"taskId": task_id}))
        .await;
    assert_eq!(
        ack.body["result"]["resultType"], "complete",
        "{:?}",
        ack.body
    );
    let started = Instant::now();
    let cancelled = a
        .poll(&task_id, &["cancelled", "completed", "failed"])
        .await;
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    assert!(started.elapsed() < Duration::from_secs(15));
    assert!(
        cancelled["statusMessage"]
            .as_str()
            .unwrap()
            .contains("tasks/cancel")
    );
    // Updates to a task that asks nothing are acknowledged and ignored.
    let update = a
        .request(
            "tasks/update",
            Some(&task_id),
            json!({"taskId": task_id, "inputResponses": {"nope": {"action": "accept"}}}),
        )
        .await;
    assert_eq!(
        update.body["result"]["resultType"], "complete",
        "{:?}",
        update.body
    );
}

#[tokio::test]
async fn a_restart_between_create_and_get_still_resolves_the_task() {
    let data = tempfile::tempdir().unwrap().keep();
    let task_id = {
        let server = start_with_data(&env(), data.clone()).await;
        let client = Client::new(&server, "agent-a");
        let created = client.execute("echo before the restart").await;
        let task_id = created["taskId"].as_str().unwrap().to_owned();
        client.poll(&task_id, &["completed"]).await;
        task_id
    };
    let server = start_with_data(&env(), data).await;
    let client = Client::new(&server, "agent-a");
    let done = client.poll(&task_id, &["completed"]).await;
    assert_eq!(
        done["result"]["structuredContent"]["output_tail"],
        json!(["before the restart"])
    );
}

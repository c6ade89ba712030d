//! Fail closed: an executor whose isolation level this host cannot provide refuses tasks with
//! the reason, and `health` says so.

use std::os::unix::fs::PermissionsExt;

use serde_json::{Value, json};

use super::common::{TestServer, WAIT_LIMIT, call, start, wait_until};

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

/// The public readiness of the `isolation` component.
async fn isolation_ready(server: &TestServer) -> (u16, bool) {
    let url = server.url.replace("/mcp", "/ready");
    let response = server.client.get(url).send().await.unwrap();
    let code = response.status().as_u16();
    let report: Value = response.json().await.unwrap();
    let component = report["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "isolation")
        .cloned()
        .unwrap_or_else(|| panic!("no isolation component: {report}"));
    (code, component["ready"] == true)
}

/// `Ok` once the isolation component is ready; else the `/ready` status.
async fn ready_isolation(server: &TestServer) -> Result<(), u16> {
    match isolation_ready(server).await {
        (_, true) => Ok(()),
        (code, false) => Err(code),
    }
}

/// A Docker daemon that does not answer does not hold the server back: it listens and serves
/// while the probe waits, says it is not ready, refuses container tasks with the reason, and
/// becomes ready when the engine answers. The Docker engine cannot run on these machines; the
/// stand-in is a `docker` client that answers `version` only once the test opens its gate.
#[tokio::test]
async fn a_slow_docker_daemon_does_not_delay_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .unwrap();
    assert!(made.success());
    let script = format!("cat '{}' >/dev/null\necho 27.3.1", gate.display());
    let server = container_server(dir.path(), &script, &[]).await;

    // Up and serving while `docker version` is still blocked on the gate.
    assert_eq!(isolation_ready(&server).await, (503, false));
    let session = server.initialize(&[("x-agent-id", "agent-d")]).await;
    let reply = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-d")],
            &call(1, "execute_task", json!({"task_description": "echo later"})),
        )
        .await;
    let message = reply.body["result"]["_meta"]["handoff/error"]["message"].to_string();
    assert!(message.contains("still being probed"), "{message}");

    // The engine answers: the level becomes available and the component ready.
    std::fs::write(&gate, b"open").unwrap();
    wait_until("the probe's answer to be taken", WAIT_LIMIT, async || {
        ready_isolation(&server).await
    })
    .await;
    let health = server
        .session_call(
            &session,
            &[("x-agent-id", "agent-d")],
            &call(2, "health", json!({})),
        )
        .await;
    let report = health.body["result"]["structuredContent"].to_string();
    assert!(report.contains("command: container"), "{report}");
    assert!(!report.contains("UNAVAILABLE"), "{report}");
}

/// A Docker engine started after Handoff is found without a restart: the probe is asked again
/// while none answers, and the container level becomes available.
#[tokio::test]
async fn a_docker_daemon_started_later_is_found() {
    let dir = tempfile::tempdir().unwrap();
    let up = dir.path().join("daemon-up");
    let script = format!(
        "[ -f '{}' ] || {{ echo 'Cannot connect to the Docker daemon' >&2; exit 1; }}\necho 27.3.1",
        up.display()
    );
    let server = container_server(dir.path(), &script, &[("HANDOFF_DOCKER_RETRY_SECS", "1")]).await;
    // The first answer: no engine.
    wait_until("the probe's first answer", WAIT_LIMIT, async || {
        let health = health_report(&server).await;
        if health.contains("Cannot connect to the Docker daemon") {
            Ok(())
        } else {
            Err(health)
        }
    })
    .await;
    assert_eq!(isolation_ready(&server).await, (503, false));

    // The daemon comes up; a later probe finds it.
    std::fs::write(&up, b"").unwrap();
    wait_until(
        "the engine started later to be found",
        WAIT_LIMIT,
        async || ready_isolation(&server).await,
    )
    .await;
    let report = health_report(&server).await;
    assert!(report.contains("command: container"), "{report}");
    assert!(!report.contains("UNAVAILABLE"), "{report}");
}

/// The `health` tool's report, as text.
async fn health_report(server: &TestServer) -> String {
    let agent = [("x-agent-id", "agent-d")];
    let session = server.initialize(&agent).await;
    let health = server
        .session_call(&session, &agent, &call(2, "health", json!({})))
        .await;
    health.body["result"]["structuredContent"].to_string()
}

/// A server whose `command` executor runs in containers, with a stand-in `docker` client in
/// `dir` running `script` (the Docker engine cannot run on these machines).
async fn container_server(
    dir: &std::path::Path,
    script: &str,
    extra: &[(&str, &str)],
) -> TestServer {
    let docker = dir.join("docker");
    std::fs::write(&docker, format!("#!/bin/sh\n{script}\n")).unwrap();
    std::fs::set_permissions(&docker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut env = vec![
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_ISOLATION", "container"),
        ("HANDOFF_RUNNER_IMAGE", "alpine:3"),
        ("HANDOFF_DOCKER", docker.to_str().unwrap()),
    ];
    env.extend_from_slice(extra);
    start(&env).await
}

//! Behaviour shared by every API: scripted errors, delays, hangs, the log, the extra routes.

use std::time::{Duration, Instant};

use handoff_scripted_model::{Api, Script, ScriptedModel};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{SCRIPT, client, post, post_json, start};

fn chat(text: &str, stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "stream": stream,
        "tools": [{"type": "function", "function": {"name": "write"}}],
        "messages": [{"role": "user", "content": text}],
    })
}

#[tokio::test]
async fn scripted_errors_take_each_providers_shape() {
    let model = start().await;
    let (status, body) =
        post_json(&model, "/v1/chat/completions", &chat("BAD-REQUEST", true)).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"error": {"message": "model mock-model does not support this", "type": "invalid_request_error", "param": null, "code": null}})
    );
    let responses = json!({"stream": true, "tools": [{"type": "function", "name": "x"}], "input": "SERVER-ERROR"});
    let (status, body) = post_json(&model, "/v1/responses", &responses).await;
    assert_eq!(status, 500);
    assert_eq!(body["error"]["type"], "server_error");
    let anthropic = json!({"stream": true, "tools": [{"name": "x"}], "messages": [{"role": "user", "content": "SERVER-ERROR"}]});
    let (status, body) = post_json(&model, "/v1/messages", &anthropic).await;
    assert_eq!(status, 500);
    assert_eq!(
        body,
        json!({"type": "error", "error": {"type": "server_error", "message": "upstream exploded"}})
    );
    let gemini = json!({"tools": [{"functionDeclarations": []}], "contents": [{"role": "user", "parts": [{"text": "BAD-REQUEST"}]}]});
    let (status, body) = post_json(&model, "/v1beta/models/g:generateContent", &gemini).await;
    assert_eq!(status, 400);
    assert_eq!(
        body,
        json!({"error": {"code": 400, "message": "model mock-model does not support this", "status": "INVALID_ARGUMENT"}})
    );
    let (status, body) = post(&model, "/v1/messages", &json!("not an object")).await;
    assert_eq!(status, 400);
    assert!(body.contains("invalid_request_error"));
    model.shutdown().await;
}

#[tokio::test]
async fn delays_before_answering() {
    let model = start().await;
    let started = Instant::now();
    let (status, body) = post_json(&model, "/v1/chat/completions", &chat("SLOW", false)).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    assert_eq!(status, 200);
    assert_eq!(body["choices"][0]["message"]["content"], "slow answer");
    model.shutdown().await;
}

#[tokio::test]
async fn a_reply_is_held_until_the_file_the_conversation_names_exists() {
    let script = json!({"scenarios": [{"match": "HOLD-UNTIL", "turns": [
        {"until_file": "{{capture:HOLD-UNTIL (/[A-Za-z0-9._/-]+)}}", "text": "released"}
    ]}]});
    let model = ScriptedModel::start(Script::from_json(&script.to_string()).unwrap(), None)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let release = dir.path().join("release");
    let asked = chat(&format!("HOLD-UNTIL {}", release.display()), false);
    let reply = tokio::spawn({
        let url = format!("{}/v1/chat/completions", model.base_url());
        async move { client().post(url).json(&asked).send().await.unwrap() }
    });
    // Held while the file is missing: the request is logged, the reply not sent.
    while model.requests().is_empty() {
        tokio::task::yield_now().await;
    }
    assert!(!reply.is_finished());
    std::fs::write(&release, "").unwrap();
    let body: Value = reply.await.unwrap().json().await.unwrap();
    assert_eq!(body["choices"][0]["message"]["content"], "released");
    model.shutdown().await;
}

#[tokio::test]
async fn a_hanging_stream_sends_its_start_and_ends_at_shutdown() {
    let model = start().await;
    let mut response = client()
        .post(format!("{}/v1/chat/completions", model.base_url()))
        .json(&chat("HANG", true))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let mut received = String::new();
    while let Ok(chunk) = tokio::time::timeout(Duration::from_millis(300), response.chunk()).await {
        received.push_str(&String::from_utf8_lossy(&chunk.unwrap().unwrap()));
    }
    assert!(received.contains("\"role\":\"assistant\""), "{received}");
    // The scripted text, streamed in pieces before the hang.
    assert!(received.contains("\"content\":\"par\""), "{received}");
    assert!(received.contains("\"content\":\"l\""), "{received}");
    assert!(!received.contains("finish_reason\":\"stop"), "{received}");
    assert!(!received.contains("[DONE]"), "{received}");
    assert!(model.wait_for_requests(1, Duration::from_secs(1)).await);

    // Shutdown must not wait for a reply scripted never to finish.
    let started = Instant::now();
    model.shutdown().await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let rest = tokio::time::timeout(Duration::from_secs(3), response.chunk())
        .await
        .unwrap();
    assert!(matches!(rest, Ok(None) | Err(_)), "{rest:?}");
}

#[tokio::test]
async fn a_client_may_abandon_a_hanging_request() {
    let model = start().await;
    let abandoned = client()
        .post(format!("{}/v1/messages", model.base_url()))
        .json(&json!({"tools": [{"name": "x"}], "messages": [{"role": "user", "content": "HANG"}]}))
        .timeout(Duration::from_millis(300))
        .send()
        .await;
    assert!(abandoned.unwrap_err().is_timeout());
    let (status, _) = post_json(&model, "/v1/chat/completions", &chat("hello", false)).await;
    assert_eq!(status, 200);
    let started = Instant::now();
    model.shutdown().await;
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn logs_every_request_to_memory_and_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("requests.jsonl");
    let model = ScriptedModel::start(Script::from_json(SCRIPT).unwrap(), Some(path.clone()))
        .await
        .unwrap();
    let body = json!({
        "stream": true,
        "tools": [{"name": "Write"}],
        "system": "Primary working directory: /tmp/logged",
        "messages": [{"role": "user", "content": "CREATE-FILE"}],
    });
    post(&model, "/v1/messages", &body).await;
    client()
        .get(format!("{}/health", model.base_url()))
        .send()
        .await
        .unwrap();
    post(&model, "/nowhere", &json!({"x": 1})).await;
    assert!(model.wait_for_requests(2, Duration::from_secs(1)).await);
    assert!(!model.wait_for_requests(3, Duration::from_millis(100)).await);

    let log = model.requests();
    let first = &log[0];
    assert_eq!(first.api, Api::Anthropic);
    assert_eq!(first.method, "POST");
    assert_eq!(first.path, "/v1/messages");
    assert_eq!(first.scenario.as_deref(), Some("CREATE-FILE"));
    assert_eq!(first.turn, 0);
    assert!(first.tooled && first.stream);
    assert_eq!(first.cwd.as_deref(), Some("/tmp/logged"));
    assert_eq!(first.user_message.as_deref(), Some("CREATE-FILE"));
    assert_eq!(first.body, body);
    assert_eq!(log[1].api, Api::Unknown);
    assert_eq!(log[1].path, "/nowhere");

    let lines: Vec<Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["api"], "anthropic");
    assert_eq!(lines[0]["scenario"], "CREATE-FILE");
    assert_eq!(lines[0]["cwd"], "/tmp/logged");
    assert_eq!(lines[0]["body"], body);
    assert!(lines[0]["ts_ms"].as_u64().unwrap() > 0);
    model.shutdown().await;
}

#[tokio::test]
async fn lists_models_and_answers_health_and_not_found() {
    let model = start().await;
    let get = |path: &str| {
        let url = format!("{}{path}", model.base_url());
        async move {
            let response = client().get(url).send().await.unwrap();
            (response.status(), response.json::<Value>().await.unwrap())
        }
    };
    let (status, models) = get("/v1/models").await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = models["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, vec!["mock-model", "other-model"]);
    assert_eq!(models["object"], "list");
    let (status, health) = get("/health").await;
    assert_eq!((status.as_u16(), health), (200, json!({"status": "ok"})));
    let (status, missing) = get("/v1/chat/completions").await;
    assert_eq!(status, 404);
    assert_eq!(missing["error"]["type"], "not_found_error");
    model.shutdown().await;
}

#[tokio::test]
async fn rejects_invalid_scripts_and_unreadable_files() {
    let bad = Script::new(vec![handoff_scripted_model::Scenario::new(
        "x",
        vec![handoff_scripted_model::Turn::error(302, "redirect", "no")],
    )]);
    assert!(ScriptedModel::start(bad, None).await.is_err());
    assert!(Script::from_file("/nonexistent/script.json").is_err());
}

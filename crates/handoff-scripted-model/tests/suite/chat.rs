//! OpenAI Chat Completions, as OpenCode calls it.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{parse_sse, post, post_json, start};

fn tools() -> Value {
    json!([{"type": "function", "function": {"name": "write", "parameters": {"type": "object"}}}])
}

fn request(messages: Value, stream: bool) -> Value {
    json!({
        "model": "mock-model",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "tools": tools(),
        "messages": messages,
    })
}

/// Chunks' JSON, checking the stream ends with a usage chunk and `[DONE]`.
fn parse_chunks(body: &str) -> Vec<Value> {
    let frames = parse_sse(body);
    let (done, chunks) = frames.split_last().unwrap();
    assert_eq!(done.data, "[DONE]");
    assert!(frames.iter().all(|f| f.event.is_none()));
    let chunks: Vec<Value> = chunks.iter().map(|f| f.json()).collect();
    let usage = chunks.last().unwrap();
    assert_eq!(usage["choices"], json!([]));
    let u = &usage["usage"];
    assert_eq!(
        u["total_tokens"].as_u64().unwrap(),
        u["prompt_tokens"].as_u64().unwrap() + u["completion_tokens"].as_u64().unwrap()
    );
    for chunk in &chunks {
        assert_eq!(chunk["object"], "chat.completion.chunk");
        assert_eq!(chunk["model"], "mock-model");
        assert!(chunk["id"].as_str().unwrap().starts_with("chatcmpl-"));
    }
    chunks
}

fn deltas_of(chunks: &[Value]) -> Vec<&Value> {
    chunks
        .iter()
        .filter_map(|c| c["choices"].get(0))
        .map(|choice| &choice["delta"])
        .collect()
}

fn finish_reasons(chunks: &[Value]) -> Vec<&str> {
    chunks
        .iter()
        .filter_map(|c| c["choices"].get(0)?["finish_reason"].as_str())
        .collect()
}

#[tokio::test]
async fn streams_a_tool_call_then_text() {
    let model = start().await;
    let mut messages = json!([
        {"role": "system", "content": "You are opencode.\n<env>\n  Working directory: /tmp/proj\n</env>"},
        {"role": "user", "content": "\"CREATE-FILE please\""}
    ]);
    let (status, body) = post(
        &model,
        "/v1/chat/completions",
        &request(messages.clone(), true),
    )
    .await;
    assert_eq!(status, 200);
    let chunks = parse_chunks(&body);
    let deltas = deltas_of(&chunks);
    assert_eq!(deltas[0]["role"], "assistant");
    let calls: Vec<&Value> = deltas
        .iter()
        .filter_map(|d| d["tool_calls"].as_array())
        .flatten()
        .collect();
    assert_eq!(calls[0]["index"], 0);
    assert_eq!(calls[0]["id"], "call_2_0");
    assert_eq!(calls[0]["type"], "function");
    assert_eq!(calls[0]["function"]["name"], "write");
    let arguments: String = calls
        .iter()
        .map(|c| c["function"]["arguments"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"filePath": "/tmp/proj/hello.txt", "content": "hello\n"})
    );
    assert_eq!(finish_reasons(&chunks), vec!["tool_calls"]);

    let messages_array = messages.as_array_mut().unwrap();
    messages_array.push(json!({"role": "assistant", "content": null, "tool_calls": [
        {"id": "call_2_0", "type": "function", "function": {"name": "write", "arguments": arguments}}]}));
    messages_array.push(
        json!({"role": "tool", "tool_call_id": "call_2_0", "content": "Wrote file successfully."}),
    );
    let (_, body) = post(&model, "/v1/chat/completions", &request(messages, true)).await;
    let chunks = parse_chunks(&body);
    let text: String = deltas_of(&chunks)
        .iter()
        .filter_map(|d| d["content"].as_str())
        .collect();
    assert_eq!(text, "Created hello.txt in /tmp/proj.");
    assert!(
        deltas_of(&chunks)
            .iter()
            .filter(|d| d["content"].as_str().is_some_and(|c| !c.is_empty()))
            .count()
            > 1,
        "text should arrive in several chunks"
    );
    assert_eq!(finish_reasons(&chunks), vec!["stop"]);

    let log = model.requests();
    assert_eq!(log.len(), 2);
    assert_eq!((log[0].turn, log[1].turn), (0, 1));
    assert_eq!(log[1].scenario.as_deref(), Some("CREATE-FILE"));
    assert_eq!(log[1].cwd.as_deref(), Some("/tmp/proj"));
    model.shutdown().await;
}

#[tokio::test]
async fn parallel_calls_get_distinct_indexes_and_ids() {
    let model = start().await;
    let (_, body) = post(
        &model,
        "/v1/chat/completions",
        &request(
            json!([{"role": "user", "content": [{"type": "text", "text": "PARALLEL"}]}]),
            true,
        ),
    )
    .await;
    let chunks = parse_chunks(&body);
    let heads: Vec<(u64, String)> = deltas_of(&chunks)
        .iter()
        .filter_map(|d| d["tool_calls"].as_array())
        .flatten()
        .filter_map(|c| Some((c["index"].as_u64()?, c["id"].as_str()?.to_string())))
        .collect();
    assert_eq!(
        heads,
        vec![(0, "call_1_0".to_string()), (1, "call_1_1".to_string())]
    );
    model.shutdown().await;
}

#[tokio::test]
async fn answers_without_streaming() {
    let model = start().await;
    let (status, reply) = post_json(
        &model,
        "/v1/chat/completions",
        &request(json!([{"role": "user", "content": "CREATE-FILE"}]), false),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reply["object"], "chat.completion");
    let choice = &reply["choices"][0];
    assert_eq!(choice["finish_reason"], "tool_calls");
    assert_eq!(choice["message"]["role"], "assistant");
    // No working directory in the request: the placeholder stays.
    assert_eq!(
        choice["message"]["tool_calls"][0]["function"]["arguments"],
        json!({"filePath": "{{cwd}}/hello.txt", "content": "hello\n"}).to_string()
    );
    assert!(reply["usage"]["prompt_tokens"].as_u64().unwrap() > 0);
    model.shutdown().await;
}

#[tokio::test]
async fn requests_without_tools_get_the_untooled_reply() {
    let model = start().await;
    let body = json!({
        "model": "mock-model",
        "messages": [
            {"role": "system", "content": "You are a title generator."},
            {"role": "user", "content": "\"CREATE-FILE please\""}
        ],
    });
    let (_, reply) = post_json(&model, "/v1/chat/completions", &body).await;
    assert_eq!(reply["choices"][0]["message"]["content"], "Scripted title");
    assert_eq!(reply["choices"][0]["finish_reason"], "stop");
    let log = model.requests();
    assert!(!log[0].tooled);
    assert_eq!(log[0].scenario, None);
    model.shutdown().await;
}

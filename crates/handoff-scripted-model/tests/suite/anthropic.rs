//! Anthropic Messages, as Claude Code calls it.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{Frame, parse_sse, post, post_json, start};

fn request(messages: Value, stream: bool) -> Value {
    json!({
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": stream,
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "tools": [{"name": "Write", "input_schema": {"type": "object"}}],
        "messages": messages,
    })
}

fn user_prompt(text: &str) -> Value {
    json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAs you answer...\n</system-reminder>"},
        {"type": "text", "text": text}
    ]})
}

fn environment() -> Value {
    json!({"role": "system", "content": "# Environment\n - Primary working directory: /tmp/claude\n - Is a git repository: false"})
}

fn checked_frames(body: &str) -> Vec<Frame> {
    let frames = parse_sse(body);
    for frame in &frames {
        assert_eq!(frame.event.as_deref(), frame.json()["type"].as_str());
    }
    frames
}

fn kinds(frames: &[Frame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            let data = f.json();
            match data["type"].as_str().unwrap() {
                "content_block_start" => {
                    format!("start:{}", data["content_block"]["type"].as_str().unwrap())
                }
                "content_block_delta" => {
                    format!("delta:{}", data["delta"]["type"].as_str().unwrap())
                }
                other => other.to_string(),
            }
        })
        .collect()
}

#[tokio::test]
async fn streams_tool_use_then_text() {
    let model = start().await;
    let mut messages = vec![user_prompt("CREATE-FILE please"), environment()];
    let (status, body) = post(
        &model,
        "/v1/messages?beta=true",
        &request(json!(messages), true),
    )
    .await;
    assert_eq!(status, 200);
    let frames = checked_frames(&body);
    assert_eq!(
        kinds(&frames),
        vec![
            "message_start",
            "ping",
            "start:tool_use",
            "delta:input_json_delta",
            "delta:input_json_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let start = frames[0].json();
    assert_eq!(start["message"]["role"], "assistant");
    assert_eq!(start["message"]["model"], "claude-sonnet-4-5");
    assert!(start["message"]["usage"]["input_tokens"].as_u64().unwrap() > 0);
    let block = &frames[2].json()["content_block"];
    assert_eq!(block["id"], "toolu_2_0");
    assert_eq!(block["name"], "write");
    assert_eq!(block["input"], json!({}));
    let partial: String = frames[3..5]
        .iter()
        .map(|f| {
            f.json()["delta"]["partial_json"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let input: Value = serde_json::from_str(&partial).unwrap();
    assert_eq!(
        input,
        json!({"filePath": "/tmp/claude/hello.txt", "content": "hello\n"})
    );
    let delta = frames[6].json();
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert!(delta["usage"]["output_tokens"].as_u64().unwrap() > 0);

    messages.push(json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_2_0", "name": "write", "input": input}]}));
    // Claude Code puts reminders next to tool results; this is still not a user prompt.
    messages.push(json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_2_0", "content": "File created successfully"},
        {"type": "text", "text": "<system-reminder>file changed</system-reminder>"}]}));
    let (_, body) = post(&model, "/v1/messages", &request(json!(messages), true)).await;
    let frames = checked_frames(&body);
    assert_eq!(
        kinds(&frames),
        vec![
            "message_start",
            "ping",
            "start:text",
            "delta:text_delta",
            "delta:text_delta",
            "delta:text_delta",
            "content_block_stop",
            "message_delta",
            "message_stop",
        ]
    );
    let text: String = frames[3..6]
        .iter()
        .map(|f| f.json()["delta"]["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Created hello.txt in /tmp/claude.");
    assert_eq!(frames[7].json()["delta"]["stop_reason"], "end_turn");
    let log = model.requests();
    assert_eq!(log[1].turn, 1);
    assert_eq!(log[1].path, "/v1/messages");
    model.shutdown().await;
}

#[tokio::test]
async fn text_and_parallel_tool_uses_are_separate_blocks() {
    let model = start().await;
    let (_, body) = post(
        &model,
        "/v1/messages",
        &request(json!([user_prompt("PARALLEL")]), true),
    )
    .await;
    let frames = checked_frames(&body);
    let starts: Vec<(u64, String)> = frames
        .iter()
        .map(Frame::json)
        .filter(|d| d["type"] == "content_block_start")
        .map(|d| {
            (
                d["index"].as_u64().unwrap(),
                d["content_block"]["type"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        starts,
        vec![
            (0, "text".to_string()),
            (1, "tool_use".to_string()),
            (2, "tool_use".to_string())
        ]
    );
    model.shutdown().await;
}

#[tokio::test]
async fn answers_without_streaming_and_counts_tokens() {
    let model = start().await;
    let (status, reply) = post_json(
        &model,
        "/v1/messages",
        &request(json!([user_prompt("hi")]), false),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(reply["type"], "message");
    assert_eq!(
        reply["content"],
        json!([{"type": "text", "text": "No scenario matched."}])
    );
    assert_eq!(reply["stop_reason"], "end_turn");

    let (status, counted) = post_json(
        &model,
        "/v1/messages/count_tokens",
        &json!({"model": "claude-sonnet-4-5", "messages": [{"role": "user", "content": "hi"}]}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(counted["input_tokens"].as_u64().unwrap() > 0);
    model.shutdown().await;
}

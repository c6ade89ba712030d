//! The OpenAI Responses API, as Codex calls it.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{Frame, parse_sse, post, post_json, start};

fn user(text: &str) -> Value {
    json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
}

fn request(input: Value) -> Value {
    json!({
        "model": "mock-model",
        "stream": true,
        "tools": [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}],
        "input": input,
    })
}

/// Frames, checking each names its type in both places and is numbered in order.
fn checked_frames(body: &str) -> Vec<Frame> {
    let frames = parse_sse(body);
    for (n, frame) in frames.iter().enumerate() {
        let data = frame.json();
        assert_eq!(frame.event.as_deref(), data["type"].as_str());
        assert_eq!(data["sequence_number"], n);
    }
    frames
}

fn kinds(frames: &[Frame]) -> Vec<&str> {
    frames.iter().map(|f| f.event.as_deref().unwrap()).collect()
}

#[tokio::test]
async fn streams_a_function_call_then_a_message() {
    let model = start().await;
    let mut input = vec![
        json!({"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "rules"}]}),
        user("<environment_context>\n  <cwd>/tmp/codex</cwd>\n</environment_context>"),
        user("CREATE-FILE please"),
    ];
    let (status, body) = post(&model, "/v1/responses", &request(json!(input))).await;
    assert_eq!(status, 200);
    let frames = checked_frames(&body);
    assert_eq!(
        kinds(&frames),
        vec![
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let item = &frames[6].json()["item"];
    assert_eq!(item["type"], "function_call");
    assert_eq!(item["call_id"], "call_3_0");
    assert_eq!(item["name"], "write");
    let arguments = item["arguments"].as_str().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(arguments).unwrap(),
        json!({"filePath": "/tmp/codex/hello.txt", "content": "hello\n"})
    );
    let deltas: String = frames[3..5]
        .iter()
        .map(|f| f.json()["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(deltas, arguments);
    let completed = &frames[7].json()["response"];
    assert_eq!(completed["status"], "completed");
    assert_eq!(completed["output"], json!([item]));
    assert!(completed["usage"]["input_tokens"].as_u64().unwrap() > 0);
    assert_eq!(
        completed["usage"]["output_tokens_details"]["reasoning_tokens"],
        0
    );

    input.push(item.clone());
    input.push(json!({"type": "function_call_output", "call_id": "call_3_0", "output": "ok"}));
    let (_, body) = post(&model, "/v1/responses", &request(json!(input))).await;
    let frames = checked_frames(&body);
    assert_eq!(
        kinds(&frames)[2..],
        [
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let text: String = frames
        .iter()
        .filter(|f| f.event.as_deref() == Some("response.output_text.delta"))
        .map(|f| f.json()["delta"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(text, "Created hello.txt in /tmp/codex.");
    let message = &frames[9].json()["item"];
    assert_eq!(message["type"], "message");
    assert_eq!(message["role"], "assistant");
    assert_eq!(
        message["content"][0],
        json!({"type": "output_text", "text": text, "annotations": [], "logprobs": []})
    );
    assert_eq!(model.requests()[1].turn, 1);
    model.shutdown().await;
}

#[tokio::test]
async fn a_message_and_parallel_calls_are_one_turn() {
    let model = start().await;
    let (_, body) = post(&model, "/v1/responses", &request(json!([user("PARALLEL")]))).await;
    let frames = checked_frames(&body);
    let done: Vec<Value> = frames
        .iter()
        .filter(|f| f.event.as_deref() == Some("response.output_item.done"))
        .map(|f| f.json())
        .collect();
    let summary: Vec<(u64, &str)> = done
        .iter()
        .map(|d| {
            (
                d["output_index"].as_u64().unwrap(),
                d["item"]["type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![(0, "message"), (1, "function_call"), (2, "function_call")]
    );

    // As Codex records it: message, both calls, then both outputs.
    let mut input = vec![user("PARALLEL")];
    input.extend(done.iter().map(|d| d["item"].clone()));
    input.push(json!({"type": "function_call_output", "call_id": "call_1_0", "output": "ok"}));
    input.push(json!({"type": "function_call_output", "call_id": "call_1_1", "output": "ok"}));
    let (_, body) = post(&model, "/v1/responses", &request(json!(input))).await;
    assert!(
        body.contains("No scenario matched."),
        "scenario has one turn: {body}"
    );
    assert_eq!(model.requests()[1].turn, 1);
    model.shutdown().await;
}

#[tokio::test]
async fn custom_tools_get_custom_tool_calls() {
    let model = start().await;
    let body = json!({
        "model": "mock-model",
        "stream": true,
        "tools": [{"type": "custom", "name": "write"}],
        "input": "CREATE-FILE",
    });
    let (_, text) = post(&model, "/v1/responses", &body).await;
    let frames = checked_frames(&text);
    assert_eq!(
        kinds(&frames)[2..7],
        [
            "response.output_item.added",
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.delta",
            "response.custom_tool_call_input.done",
            "response.output_item.done",
        ]
    );
    let item = &frames[6].json()["item"];
    assert_eq!(item["type"], "custom_tool_call");
    assert_eq!(item["call_id"], "call_1_0");
    assert_eq!(
        serde_json::from_str::<Value>(item["input"].as_str().unwrap()).unwrap(),
        json!({"filePath": "{{cwd}}/hello.txt", "content": "hello\n"})
    );
    model.shutdown().await;
}

#[tokio::test]
async fn answers_without_streaming() {
    let model = start().await;
    let mut body = request(json!([user("nothing scripted")]));
    body["stream"] = json!(false);
    let (status, reply) = post_json(&model, "/v1/responses", &body).await;
    assert_eq!(status, 200);
    assert_eq!(reply["object"], "response");
    assert_eq!(reply["status"], "completed");
    assert_eq!(
        reply["output"][0]["content"][0]["text"],
        "No scenario matched."
    );
    model.shutdown().await;
}

//! Gemini generateContent and streamGenerateContent.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::common::{parse_sse, post, post_json, start};

fn request(contents: Value) -> Value {
    json!({
        "systemInstruction": {"parts": [{"text": "Working directory: /tmp/gem"}]},
        "tools": [{"functionDeclarations": [{"name": "write"}]}],
        "contents": contents,
    })
}

#[tokio::test]
async fn generates_a_function_call_then_streams_text() {
    let model = start().await;
    let mut contents = vec![json!({"role": "user", "parts": [{"text": "CREATE-FILE"}]})];
    let (status, reply) = post_json(
        &model,
        "/v1beta/models/gemini-2.5-pro:generateContent",
        &request(json!(contents)),
    )
    .await;
    assert_eq!(status, 200);
    let candidate = &reply["candidates"][0];
    assert_eq!(candidate["finishReason"], "STOP");
    assert_eq!(candidate["content"]["role"], "model");
    let call = candidate["content"]["parts"][0].clone();
    assert_eq!(
        call,
        json!({"functionCall": {"name": "write", "args": {"filePath": "/tmp/gem/hello.txt", "content": "hello\n"}}})
    );
    assert_eq!(reply["modelVersion"], "gemini-2.5-pro");
    assert!(reply["usageMetadata"]["totalTokenCount"].as_u64().unwrap() > 0);

    contents.push(json!({"role": "model", "parts": [call]}));
    contents.push(json!({"role": "user", "parts": [{"functionResponse": {"name": "write", "response": {"ok": true}}}]}));
    let (status, body) = post(
        &model,
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        &request(json!(contents)),
    )
    .await;
    assert_eq!(status, 200);
    let chunks: Vec<Value> = parse_sse(&body).iter().map(|f| f.json()).collect();
    assert_eq!(chunks.len(), 3);
    let text: String = chunks
        .iter()
        .map(|c| {
            c["candidates"][0]["content"]["parts"][0]["text"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(text, "Created hello.txt in /tmp/gem.");
    let finishes: Vec<&Value> = chunks
        .iter()
        .map(|c| &c["candidates"][0]["finishReason"])
        .collect();
    assert_eq!(finishes, vec![&Value::Null, &Value::Null, &json!("STOP")]);
    assert!(chunks[2]["usageMetadata"].is_object());
    let log = model.requests();
    assert_eq!(log[1].turn, 1);
    assert!(log[1].stream);
    model.shutdown().await;
}

#[tokio::test]
async fn unknown_gemini_methods_are_not_found() {
    let model = start().await;
    let (status, _) = post_json(
        &model,
        "/v1beta/models/gemini-2.5-pro:embedContent",
        &json!({}),
    )
    .await;
    assert_eq!(status, 404);
    let (status, counted) = post_json(
        &model,
        "/v1beta/models/gemini-2.5-pro:countTokens",
        &json!({"contents": []}),
    )
    .await;
    assert_eq!(status, 200);
    assert!(counted["totalTokens"].as_u64().unwrap() > 0);
    model.shutdown().await;
}

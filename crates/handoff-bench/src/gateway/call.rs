//! One streamed Chat Completions call of a fixed size, read to its last byte, and the checks
//! that what came back is the whole scripted answer.

use axum::body::Bytes;
use reqwest::{Client, header};
use serde_json::{Value, json};

/// The answer's text.
pub(super) const TEXT: &str = "The gateway bench's answer, streamed to the last byte.";
/// Tool calls in the answer: each is three frames of the stream, so the answer is ~50 frames.
pub(super) const TOOL_CALLS: usize = 16;
/// The provider key the scripted model accepts: a direct call carries it, a gateway call
/// carries the task's token and Handoff adds the key.
pub(super) const PROVIDER_KEY: &str = "sk-bench-provider-key-0b7e";
/// What selects the answer in the user message.
const MATCH: &str = "GATEWAY-BENCH";

/// The scripted model's script: every bench call gets the same answer.
pub(super) fn script() -> Value {
    let calls: Vec<Value> = (0..TOOL_CALLS)
        .map(|i| json!({"name": "write", "arguments": {"filePath": format!("f{i}.txt"), "content": "bench\n"}}))
        .collect();
    json!({
        // `untooled`: the request offers no tools (tools in it would only add request bytes).
        "scenarios": [{"match": MATCH, "untooled": true, "turns": [{"text": TEXT, "tool_calls": calls}]}],
        "api_key": PROVIDER_KEY
    })
}

/// The request, serialised once: both paths send the same bytes. It asks for the usage chunk
/// itself, so the gateway (which adds that option to streams) forwards an unchanged request.
pub(super) fn body() -> Bytes {
    let body = json!({
        "model": "mock-model",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": format!("{MATCH}: answer with the usual stream")}]
    });
    Bytes::from(body.to_string())
}

/// Where calls go and the key they carry.
#[derive(Debug, Clone)]
pub(super) struct Endpoint {
    /// The `…/chat/completions` URL.
    pub url: String,
    /// The bearer key: the provider's, or a task's token.
    pub key: String,
}

/// Sends one call and reads its answer to the last byte; an HTTP error status is an error.
pub(super) async fn send(http: &Client, to: &Endpoint, body: &Bytes) -> Result<Bytes, String> {
    let answer = http
        .post(&to.url)
        .bearer_auth(&to.key)
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "text/event-stream")
        .body(body.clone())
        .send()
        .await
        .map_err(|e| format!("sending: {e}"))?;
    let status = answer.status();
    let bytes = answer.bytes().await.map_err(|e| format!("reading: {e}"))?;
    if !status.is_success() {
        let text: String = String::from_utf8_lossy(&bytes).chars().take(300).collect();
        return Err(format!("HTTP {status}: {text}"));
    }
    Ok(bytes)
}

/// The check made on every measured call, cheap enough not to weigh on the client's CPU: as
/// many frames as the reference answer (each frame is one `data:` line and a blank line, and
/// its JSON holds no raw newline) and the end marker last.
pub(super) fn whole(body: &[u8], frames: usize) -> Result<(), String> {
    let newlines = body.iter().filter(|b| **b == b'\n').count();
    if newlines != 2 * frames || !body.ends_with(b"data: [DONE]\n\n") {
        return Err(format!(
            "a cut answer: {newlines} newlines where {frames} frames have {}, end {:?}",
            2 * frames,
            String::from_utf8_lossy(&body[body.len().saturating_sub(40)..])
        ));
    }
    Ok(())
}

/// The full check, as an agent reads a stream: every frame parsed, the text and the tool calls
/// put together, the usage chunk and the end marker present. Its frame count when whole.
pub(super) fn check(body: &[u8]) -> Result<usize, String> {
    let text = std::str::from_utf8(body).map_err(|e| format!("not UTF-8: {e}"))?;
    let frames: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .collect();
    if frames.last() != Some(&"[DONE]") {
        return Err("no [DONE] at the end".to_owned());
    }
    let (mut said, mut calls, mut usage) = (String::new(), 0, false);
    for frame in &frames[..frames.len() - 1] {
        let chunk: Value =
            serde_json::from_str(frame).map_err(|e| format!("a frame is not JSON ({e})"))?;
        let delta = &chunk["choices"][0]["delta"];
        said.push_str(delta["content"].as_str().unwrap_or_default());
        calls += delta["tool_calls"]
            .as_array()
            .map_or(0, |c| c.iter().filter(|c| c.get("id").is_some()).count());
        usage |= chunk["usage"]["completion_tokens"].as_u64().is_some();
    }
    if said != TEXT || calls != TOOL_CALLS || !usage {
        return Err(format!(
            "not the scripted answer: text {said:?}, {calls} tool calls, usage {usage}"
        ));
    }
    Ok(frames.len())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_scripted_model::{Script, ScriptedModel};

    use super::*;

    #[tokio::test]
    async fn the_scripted_answer_is_about_fifty_frames_and_passes_both_checks() {
        let script = Script::from_json(&script().to_string()).unwrap();
        let model = ScriptedModel::start(script, None).await.unwrap();
        let to = Endpoint {
            url: format!("{}/chat/completions", model.openai_base_url()),
            key: PROVIDER_KEY.to_owned(),
        };
        let http = crate::run::http().unwrap();
        let answer = send(&http, &to, &body()).await.unwrap();
        let frames = check(&answer).unwrap();
        assert!((50..=60).contains(&frames), "{frames} frames");
        whole(&answer, frames).unwrap();
        assert!(whole(&answer, frames + 1).is_err());
        let cut = &answer[..answer.len() - 20];
        assert!(whole(cut, frames).is_err() && check(cut).is_err());

        let wrong = Endpoint {
            key: "sk-other".to_owned(),
            ..to
        };
        let refused = send(&http, &wrong, &body()).await.unwrap_err();
        assert!(refused.starts_with("HTTP 401"), "{refused}");
        model.shutdown().await;
    }
}

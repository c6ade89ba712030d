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
/// What selects the answer in the user message; the colon keeps it from matching the paced
/// prompt (the scripted model plays the first scenario whose `match` is in the message).
const MATCH: &str = "GATEWAY-BENCH:";
/// What selects the same answer after the provider's time to first token.
const PACED_MATCH: &str = "GATEWAY-BENCH-PACED:";
/// The paced answer's time to first token, ms: the scripted model sends nothing, not even the
/// status line, for this long after reading the request, then the whole stream at once.
pub(super) const TTFT_MS: u64 = 200;
/// The file the agent baseline's `read` calls read, in the agent's working directory.
pub(super) const AGENT_FILE: &str = "bench-read.txt";
/// The agent baseline's answer once its tool turns are done.
const AGENT_TEXT: &str = "Read it, done.";

/// The scripted model's script: every bench call gets the same answer, a paced call after
/// [`TTFT_MS`]; an agent prompt for each of `agent_turns` gets that many `read` turns, then a
/// text turn.
pub(super) fn script(agent_turns: [usize; 2]) -> Value {
    let calls: Vec<Value> = (0..TOOL_CALLS)
        .map(|i| json!({"name": "write", "arguments": {"filePath": format!("f{i}.txt"), "content": "bench\n"}}))
        .collect();
    let answer = json!({"text": TEXT, "tool_calls": calls});
    let mut paced = answer.clone();
    // The scripted model sleeps `delay_ms` once it has read and logged the request, before it
    // builds the response (`respond` in its server.rs): no status line, header or frame until
    // then, and then the whole stream at its full speed. So a time to first byte, as a
    // provider's time to first token; the frames after it come as fast as the plain answer's.
    paced["delay_ms"] = json!(TTFT_MS);
    // `untooled`: the request offers no tools (tools in it would only add request bytes).
    let bench =
        |matches: &str, turn: Value| json!({"match": matches, "untooled": true, "turns": [turn]});
    let scenarios: Vec<Value> = [bench(MATCH, answer), bench(PACED_MATCH, paced)]
        .into_iter()
        .chain(agent_turns.iter().map(|&k| agent_scenario(k)))
        .collect();
    json!({"scenarios": scenarios, "api_key": PROVIDER_KEY})
}

/// What selects the agent scenario of `turns` tool turns; the colon keeps `…-2:` from
/// matching a prompt of `…-22:`.
pub(super) fn agent_match(turns: usize) -> String {
    format!("BENCH-AGENT-{turns}:")
}

/// `turns` calls of OpenCode's `read` on a one-line file (cheap and the same every time), then
/// a text turn that ends the run.
fn agent_scenario(turns: usize) -> Value {
    let read = json!({"tool_calls": [
        {"name": "read", "arguments": {"filePath": format!("{{{{cwd}}}}/{AGENT_FILE}")}}
    ]});
    let script: Vec<Value> = std::iter::repeat_n(read, turns)
        .chain(std::iter::once(json!({"text": AGENT_TEXT})))
        .collect();
    json!({"match": agent_match(turns), "turns": script})
}

/// The request, serialised once: both paths send the same bytes.
pub(super) fn body() -> Bytes {
    request(MATCH)
}

/// The paced request: the same answer, after [`TTFT_MS`].
pub(super) fn paced_body() -> Bytes {
    request(PACED_MATCH)
}

/// A request whose prompt holds `matches`. It asks for the usage chunk itself, so the gateway
/// (which adds that option to streams) forwards an unchanged request.
fn request(matches: &str) -> Bytes {
    let body = json!({
        "model": "mock-model",
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": format!("{matches} answer with the usual stream")}]
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
    use std::time::{Duration, Instant};

    use handoff_scripted_model::{Scenario, Script, ScriptedModel, Turn};

    use super::*;

    /// The scenario the scripted model plays for `prompt`. Its rule: the first scenario whose
    /// `match` is in the message.
    fn chosen<'a>(script: &'a Script, prompt: &str) -> &'a Scenario {
        let chosen = script
            .scenarios
            .iter()
            .find(|s| prompt.contains(&s.matches));
        chosen.unwrap_or_else(|| panic!("no scenario for {prompt:?}"))
    }

    /// The user message of a bench request.
    fn prompt(body: &Bytes) -> String {
        let body: Value = serde_json::from_slice(body).unwrap();
        body["messages"][0]["content"].as_str().unwrap().to_owned()
    }

    #[test]
    fn each_prompt_selects_its_own_scenario() {
        let script = Script::from_json(&script([2, 22]).to_string()).unwrap();
        for k in [2, 22] {
            let prompt = format!("{} read the file", agent_match(k));
            let turns = &chosen(&script, &prompt).turns;
            assert_eq!(turns.len(), k + 1, "{prompt}");
            assert!(turns[..k].iter().all(|t| t.tool_calls[0].name == "read"));
            assert_eq!(turns[k].text.as_deref(), Some(AGENT_TEXT));
        }
        let plain = chosen(&script, &prompt(&body()));
        let paced = chosen(&script, &prompt(&paced_body()));
        assert_eq!((&*plain.matches, &*paced.matches), (MATCH, PACED_MATCH));
        let ([plain], [paced]) = (&plain.turns[..], &paced.turns[..]) else {
            panic!("one turn each: {plain:?} {paced:?}");
        };
        assert_eq!((plain.delay_ms, paced.delay_ms), (None, Some(TTFT_MS)));
        // The same answer, so the same frames: only the delay differs.
        assert_eq!(
            Turn {
                delay_ms: None,
                ..paced.clone()
            },
            *plain
        );
        assert_eq!(plain.text.as_deref(), Some(TEXT));
        assert_eq!(plain.tool_calls.len(), TOOL_CALLS);
    }

    #[tokio::test]
    async fn the_scripted_answer_is_about_fifty_frames_and_passes_both_checks() {
        let script = Script::from_json(&script([1, 4]).to_string()).unwrap();
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

        // The paced call: the same frames, after the time to first token.
        let at = Instant::now();
        let paced = send(&http, &to, &paced_body()).await.unwrap();
        assert!(at.elapsed() >= Duration::from_millis(TTFT_MS));
        assert_eq!(check(&paced).unwrap(), frames);
        let played: Vec<Option<String>> =
            model.requests().into_iter().map(|r| r.scenario).collect();
        assert_eq!(
            played,
            [Some(MATCH.to_owned()), Some(PACED_MATCH.to_owned())]
        );

        let wrong = Endpoint {
            key: "sk-other".to_owned(),
            ..to
        };
        let refused = send(&http, &wrong, &body()).await.unwrap_err();
        assert!(refused.starts_with("HTTP 401"), "{refused}");
        model.shutdown().await;
    }
}

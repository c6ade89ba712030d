//! A call's request body as the gateway reads and forwards it. Agents resend their whole
//! conversation on every call (hundreds of KB late in a task), so the body is not parsed into
//! a tree and written out again: the few fields the gateway needs are read in one validating
//! pass that skips the rest, and the bytes go on unchanged unless something must change — the
//! usage option of an OpenAI stream (added in place when absent) or a model named by its
//! provider's prefix (then, rarely, the body is rewritten whole).

use bytes::{Bytes, BytesMut};
use handoff_llm::CallWire;
use serde::Deserialize;
use serde_json::Value;

/// The fields of a request the gateway reads; every other field is skipped unparsed. Each is
/// a loose `Value` so a field of an odd type reaches the provider to be judged there.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Peek {
    #[serde(default)]
    model: Option<Value>,
    #[serde(default)]
    stream: Option<Value>,
    #[serde(default)]
    stream_options: Option<Value>,
    #[serde(default)]
    max_tokens: Option<Value>,
    #[serde(default)]
    max_completion_tokens: Option<Value>,
    #[serde(default)]
    max_output_tokens: Option<Value>,
}

impl Peek {
    /// The fields of `body`, a JSON object; `None` when it is not one.
    pub(super) fn read(body: &[u8]) -> Option<Peek> {
        // A struct also deserializes from a JSON array, by position: only an object is a request.
        let first = body.iter().find(|b| !b.is_ascii_whitespace())?;
        if *first != b'{' {
            return None;
        }
        serde_json::from_slice(body).ok()
    }

    /// The model asked for.
    pub(super) fn model(&self) -> Option<&str> {
        self.model.as_ref().and_then(Value::as_str)
    }

    /// Whether the answer is to stream.
    pub(super) fn streaming(&self) -> bool {
        self.stream.as_ref().and_then(Value::as_bool) == Some(true)
    }

    /// What the call may take at most, when it says (`max_tokens` and its wire's variants).
    pub(super) fn expected_tokens(&self) -> u64 {
        [
            &self.max_tokens,
            &self.max_completion_tokens,
            &self.max_output_tokens,
        ]
        .into_iter()
        .filter_map(|v| v.as_ref().and_then(Value::as_u64))
        .max()
        .unwrap_or(0)
    }

    /// Whether an OpenAI Chat stream must be asked for its usage (it carries none otherwise).
    fn needs_usage(&self, wire: CallWire) -> bool {
        let asked = self
            .stream_options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool);
        wire == CallWire::OpenAiChat && self.streaming() && asked != Some(true)
    }
}

/// The body to send the provider: `body` itself when nothing changes; with the usage option
/// added in place when the stream lacks one; rewritten whole when the model is `rewritten` or
/// the existing `stream_options` must change.
pub(super) fn outgoing(body: Bytes, wire: CallWire, peek: &Peek, rewritten: Option<&str>) -> Bytes {
    let needs_usage = peek.needs_usage(wire);
    if rewritten.is_none() && !needs_usage {
        return body;
    }
    if rewritten.is_none()
        && peek.stream_options.is_none()
        && let Some(spliced) = with_usage_option(&body)
    {
        return spliced;
    }
    let Ok(mut request) = serde_json::from_slice::<Value>(&body) else {
        return body;
    };
    if let Some(model) = rewritten {
        request["model"] = Value::String(model.to_owned());
    }
    if needs_usage {
        if !request["stream_options"].is_object() {
            request["stream_options"] = Value::Object(serde_json::Map::new());
        }
        request["stream_options"]["include_usage"] = Value::Bool(true);
    }
    Bytes::from(request.to_string())
}

/// `body` (an object without `stream_options`) with `"stream_options":{"include_usage":true}`
/// as its first member.
fn with_usage_option(body: &[u8]) -> Option<Bytes> {
    const MEMBER: &[u8] = br#""stream_options":{"include_usage":true}"#;
    let open = body.iter().position(|b| *b == b'{')?;
    let rest = &body[open + 1..];
    let empty = rest
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|b| *b == b'}');
    let mut out = BytesMut::with_capacity(body.len() + MEMBER.len() + 1);
    out.extend_from_slice(&body[..=open]);
    out.extend_from_slice(MEMBER);
    if !empty {
        out.extend_from_slice(b",");
    }
    out.extend_from_slice(rest);
    Some(out.freeze())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::*;

    fn sent(body: &str, wire: CallWire, rewritten: Option<&str>) -> (Bytes, Value) {
        let bytes = Bytes::from(body.to_owned());
        let peek = Peek::read(&bytes).unwrap();
        let out = outgoing(bytes, wire, &peek, rewritten);
        let value = serde_json::from_slice(&out).unwrap();
        (out, value)
    }

    #[test]
    fn a_body_that_needs_nothing_goes_on_byte_for_byte() {
        let body =
            r#" {"model": "m",  "stream": false, "messages": [{"role": "user", "content": "x"}]}"#;
        let (out, _) = sent(body, CallWire::OpenAiChat, None);
        assert_eq!(out, body.as_bytes());
        let streamed = r#"{"model":"m","stream":true,"stream_options":{"include_usage":true}}"#;
        assert_eq!(
            sent(streamed, CallWire::OpenAiChat, None).0,
            streamed.as_bytes()
        );
        let anthropic = r#"{"model":"m","stream":true,"max_tokens":9}"#;
        assert_eq!(
            sent(anthropic, CallWire::Anthropic, None).0,
            anthropic.as_bytes()
        );
    }

    #[test]
    fn an_openai_stream_is_asked_for_its_usage_and_a_prefixed_model_loses_its_prefix() {
        let (_, value) = sent(
            r#"{"model":"m","stream":true,"n":1}"#,
            CallWire::OpenAiChat,
            None,
        );
        assert_eq!(
            value,
            json!({"stream_options": {"include_usage": true}, "model": "m", "stream": true, "n": 1})
        );
        let (_, value) = sent(
            r#"{"model":"m","stream":true,"stream_options":{"x":1}}"#,
            CallWire::OpenAiChat,
            None,
        );
        assert_eq!(
            value["stream_options"],
            json!({"x": 1, "include_usage": true})
        );
        let (_, value) = sent(
            r#"{"model":"local/q","stream":true}"#,
            CallWire::OpenAiChat,
            Some("q"),
        );
        assert_eq!(value["model"], "q");
        assert_eq!(value["stream_options"]["include_usage"], true);
    }

    #[test]
    fn only_an_object_is_a_request_and_odd_field_types_pass() {
        assert!(Peek::read(b"[\"m\", true]").is_none());
        assert!(Peek::read(b"\"m\"").is_none());
        assert!(Peek::read(b"{\"model\": ").is_none(), "truncated");
        let peek = Peek::read(
            br#"{"model": 7, "stream": "yes", "max_tokens": 5, "max_output_tokens": 9}"#,
        )
        .unwrap();
        assert_eq!(
            (peek.model(), peek.streaming(), peek.expected_tokens()),
            (None, false, 9)
        );
        let empty = with_usage_option(b"{ }").unwrap();
        assert_eq!(
            serde_json::from_slice::<Value>(&empty).unwrap(),
            json!({"stream_options": {"include_usage": true}})
        );
    }
}

//! What a model call cost, read from the provider's answer as it passes through a proxy: the
//! usage fields of a JSON answer or of a server-sent event stream, per wire, without holding
//! the stream (only the current line, and a bounded JSON body, are kept).

use serde_json::Value;

/// The wire a call speaks, which says where its usage is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallWire {
    /// OpenAI Chat Completions (`usage.prompt_tokens` / `completion_tokens`).
    OpenAiChat,
    /// OpenAI Responses (`usage.input_tokens` / `output_tokens`, in `response.completed`).
    OpenAiResponses,
    /// Anthropic Messages (`message_start` input, `message_delta` output).
    Anthropic,
}

/// Tokens one call used, as the provider reported them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CallUsage {
    /// The model that answered, when the answer names it.
    pub model: Option<String>,
    /// Input tokens (cached ones included).
    pub input_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Input tokens read from the provider's cache.
    pub cached_tokens: u64,
    /// The answer carried usage at all.
    pub reported: bool,
}

/// The largest JSON answer scanned whole; a longer one is passed on uncounted.
const MAX_JSON_BYTES: usize = 8 << 20;
/// The longest server-sent event line kept; a longer one is skipped.
const MAX_LINE_BYTES: usize = 4 << 20;

/// Reads usage from an answer fed to it in pieces.
#[derive(Debug)]
pub struct UsageScanner {
    wire: CallWire,
    streaming: bool,
    /// A JSON answer so far, or the current event line.
    buffer: Vec<u8>,
    /// The current line ran past [`MAX_LINE_BYTES`]: skip to its end.
    skipping: bool,
    usage: CallUsage,
}

impl UsageScanner {
    /// A scanner for an answer on `wire`; `streaming`: server-sent events, else one JSON body.
    pub fn new(wire: CallWire, streaming: bool) -> Self {
        Self {
            wire,
            streaming,
            buffer: Vec::new(),
            skipping: false,
            usage: CallUsage::default(),
        }
    }

    /// Takes the next piece of the answer.
    pub fn feed(&mut self, bytes: &[u8]) {
        if !self.streaming {
            if self.buffer.len() + bytes.len() <= MAX_JSON_BYTES {
                self.buffer.extend_from_slice(bytes);
            } else {
                self.skipping = true;
            }
            return;
        }
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            let ends = piece.ends_with(b"\n");
            if !self.skipping {
                if self.buffer.len() + piece.len() > MAX_LINE_BYTES {
                    self.skipping = true;
                    self.buffer.clear();
                } else {
                    self.buffer.extend_from_slice(piece);
                }
            }
            if ends {
                if !self.skipping {
                    let line = std::mem::take(&mut self.buffer);
                    self.line(&line);
                }
                self.skipping = false;
            }
        }
    }

    /// What the whole answer reported.
    pub fn finish(mut self) -> CallUsage {
        if self.streaming {
            let line = std::mem::take(&mut self.buffer);
            if !self.skipping {
                self.line(&line);
            }
        } else if !self.skipping
            && let Ok(body) = serde_json::from_slice::<Value>(&self.buffer)
        {
            self.answer(&body);
        }
        self.usage
    }

    /// One event-stream line: only `data:` lines with JSON count.
    fn line(&mut self, line: &[u8]) {
        let Some(data) = line.strip_prefix(b"data:") else {
            return;
        };
        // Most events are text deltas: only one with usage, or the model while it is unknown,
        // is worth parsing (parsing every frame was the gateway's largest cost, measured).
        let wanted = contains(data, b"\"usage\"")
            || (self.usage.model.is_none() && contains(data, b"\"model\""));
        if !wanted {
            return;
        }
        if let Ok(event) = serde_json::from_slice::<Value>(data.trim_ascii()) {
            self.event(&event);
        }
    }

    /// One streamed event.
    fn event(&mut self, event: &Value) {
        match self.wire {
            CallWire::OpenAiChat => self.answer(event),
            CallWire::OpenAiResponses => {
                if let Some(response) = event.get("response") {
                    self.answer(response);
                }
            }
            CallWire::Anthropic => match event["type"].as_str() {
                Some("message_start") => self.answer(&event["message"]),
                Some("message_delta") => {
                    // The output count is cumulative; the input may be restated.
                    self.take_usage(&event["usage"]);
                }
                _ => {}
            },
        }
    }

    /// A whole answer (or the answer object of an event): its model and usage.
    fn answer(&mut self, body: &Value) {
        if let Some(model) = body.get("model").and_then(Value::as_str) {
            self.usage.model = Some(model.to_owned());
        }
        if let Some(usage) = body.get("usage").filter(|u| u.is_object()) {
            self.take_usage(usage);
        }
    }

    /// A usage object of this wire.
    fn take_usage(&mut self, usage: &Value) {
        let at = |path: &str| usage.pointer(path).and_then(Value::as_u64);
        let (input, output, cached) = match self.wire {
            CallWire::OpenAiChat => (
                at("/prompt_tokens"),
                at("/completion_tokens"),
                at("/prompt_tokens_details/cached_tokens"),
            ),
            CallWire::OpenAiResponses => (
                at("/input_tokens"),
                at("/output_tokens"),
                at("/input_tokens_details/cached_tokens"),
            ),
            CallWire::Anthropic => {
                // Anthropic counts cache reads and writes apart from `input_tokens`.
                let cached = at("/cache_read_input_tokens");
                let written = at("/cache_creation_input_tokens").unwrap_or(0);
                let input = at("/input_tokens").map(|i| i + cached.unwrap_or(0) + written);
                (input, at("/output_tokens"), cached)
            }
        };
        if input.is_none() && output.is_none() {
            return;
        }
        self.usage.reported = true;
        if let Some(input) = input {
            self.usage.input_tokens = input;
        }
        if let Some(output) = output {
            self.usage.output_tokens = output;
        }
        if let Some(cached) = cached {
            self.usage.cached_tokens = cached;
        }
    }
}

/// Whether `needle` occurs in `haystack`.
fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn scan(wire: CallWire, streaming: bool, text: &str, piece: usize) -> CallUsage {
        let mut scanner = UsageScanner::new(wire, streaming);
        for chunk in text.as_bytes().chunks(piece) {
            scanner.feed(chunk);
        }
        scanner.finish()
    }

    #[test]
    fn openai_chat_answers_and_streams_report_their_usage() {
        let body = r#"{"model":"gpt-x","usage":{"prompt_tokens":12,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":4}}}"#;
        let usage = scan(CallWire::OpenAiChat, false, body, 7);
        assert_eq!(
            (
                usage.model.as_deref(),
                usage.input_tokens,
                usage.output_tokens,
                usage.cached_tokens
            ),
            (Some("gpt-x"), 12, 5, 4)
        );
        let stream = "data: {\"model\":\"gpt-x\",\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n\
                      data: {\"model\":\"gpt-x\",\"choices\":[],\"usage\":{\"prompt_tokens\":30,\"completion_tokens\":9}}\n\n\
                      data: [DONE]\n\n";
        for piece in [1, 3, 1000] {
            let usage = scan(CallWire::OpenAiChat, true, stream, piece);
            assert_eq!(
                (usage.input_tokens, usage.output_tokens),
                (30, 9),
                "{piece}"
            );
            assert!(usage.reported);
        }
    }

    #[test]
    fn anthropic_streams_add_the_start_and_the_last_delta() {
        let stream = "event: message_start\n\
                      data: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-x\",\"usage\":{\"input_tokens\":20,\"cache_read_input_tokens\":100,\"output_tokens\":1}}}\n\n\
                      event: message_delta\n\
                      data: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":42}}\n\n";
        let usage = scan(CallWire::Anthropic, true, stream, 5);
        assert_eq!(usage.model.as_deref(), Some("claude-x"));
        assert_eq!(
            (usage.input_tokens, usage.output_tokens, usage.cached_tokens),
            (120, 42, 100)
        );
    }

    #[test]
    fn responses_report_in_their_completed_event() {
        let stream = "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"model\":\"gpt-y\"}}\n\n\
                      event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":{\"model\":\"gpt-y\",\"usage\":{\"input_tokens\":7,\"output_tokens\":3}}}\n\n";
        let usage = scan(CallWire::OpenAiResponses, true, stream, 11);
        assert_eq!((usage.input_tokens, usage.output_tokens), (7, 3));
    }

    #[test]
    fn an_answer_without_usage_or_past_the_caps_is_not_counted() {
        let usage = scan(
            CallWire::OpenAiChat,
            false,
            r#"{"error":{"message":"no"}}"#,
            4,
        );
        assert!(!usage.reported);
        let mut scanner = UsageScanner::new(CallWire::OpenAiChat, true);
        scanner.feed(b"data: ");
        scanner.feed(&vec![b'x'; MAX_LINE_BYTES + 1]);
        scanner.feed(b"\ndata: {\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":2}}\n");
        let usage = scanner.finish();
        assert_eq!((usage.input_tokens, usage.output_tokens), (1, 2));
    }
}

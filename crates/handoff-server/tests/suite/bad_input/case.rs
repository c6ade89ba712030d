//! One bad input, how it is sent, and what every answer to it must be.

use serde_json::Value;

use super::{fixture::Answer, marker::Marker};

/// Largest answer a refusal may be: a clear error, never the payload back.
pub const MAX_ANSWER: usize = 4096;
/// Longest stretch of the payload an error may quote.
pub const MAX_ECHO: usize = 64;

/// How a case reaches the server.
#[derive(Debug, Clone)]
pub enum Send {
    /// A POST to `/mcp` through the HTTP client.
    Post {
        /// Every header, in order.
        headers: Vec<(String, String)>,
        /// The body bytes (not necessarily JSON, not necessarily UTF-8).
        body: Vec<u8>,
    },
    /// Raw bytes on a fresh TCP connection: what an HTTP client refuses to send.
    Raw(Vec<u8>),
}

/// What a refusal must look like beyond the common rules.
#[derive(Debug, Clone, Default)]
pub struct Expect {
    /// JSON-RPC codes accepted (empty: any standard or server-error code).
    pub codes: &'static [i64],
    /// A tool result with `isError: true` counts as the refusal too (tool arguments).
    pub tool_error: bool,
    /// A word the error message must contain (the field at fault).
    pub mentions: Option<&'static str>,
}

impl Expect {
    /// Any JSON-RPC error in the standard or server-error ranges.
    pub fn any() -> Self {
        Self::default()
    }

    /// One of these JSON-RPC codes.
    pub fn codes(codes: &'static [i64]) -> Self {
        Self {
            codes,
            ..Self::default()
        }
    }

    /// Requires the message to name `word`.
    pub fn naming(mut self, word: &'static str) -> Self {
        self.mentions = Some(word);
        self
    }

    /// A tool-argument refusal: a tool error, or `-32602`.
    pub fn tool() -> Self {
        Self {
            codes: &[-32602],
            tool_error: true,
            mentions: None,
        }
    }
}

/// One bad input.
#[derive(Debug, Clone)]
pub struct Case {
    /// Where it belongs, for the summary of failures (`legacy/tools/wrong-type`…).
    pub group: String,
    /// Its full name.
    pub name: String,
    /// How it is sent.
    pub send: Send,
    /// What the refusal must look like.
    pub expect: Expect,
}

/// JSON-RPC's own codes and the implementation-defined server-error range.
fn standard(code: i64) -> bool {
    code == -32700 || (-32603..=-32600).contains(&code) || (-32099..=-32000).contains(&code)
}

/// Judges an answer: a clear refusal, bounded, without the payload. `Err` says what is wrong.
pub fn judge(expect: &Expect, answer: &Answer, marker: &Marker) -> Result<(), String> {
    let status = answer.status;
    if status >= 500 {
        return Err(format!("HTTP {status}"));
    }
    if answer.text.trim().is_empty() {
        return Err(format!("empty body (HTTP {status})"));
    }
    let echo = marker.longest_echo(&answer.text);
    if echo > MAX_ECHO {
        return Err(format!(
            "echoes {echo} bytes of the payload (HTTP {status})"
        ));
    }
    let Some(message) = &answer.message else {
        return Err(format!(
            "not a JSON-RPC message ({} bytes, HTTP {status})",
            answer.text.len()
        ));
    };
    let text = refusal_text(expect, message)?;
    if answer.text.len() > MAX_ANSWER {
        return Err(format!("{}-byte answer (HTTP {status})", answer.text.len()));
    }
    if text.trim().is_empty() {
        return Err("empty error message".into());
    }
    if let Some(word) = expect.mentions
        && !text.to_lowercase().contains(&word.to_lowercase())
    {
        return Err(format!("message does not name `{word}`"));
    }
    Ok(())
}

/// The refusal's message, or why the answer is not a refusal of the expected kind.
fn refusal_text(expect: &Expect, message: &Value) -> Result<String, String> {
    if message["jsonrpc"] != "2.0" {
        return Err("no `jsonrpc: \"2.0\"`".into());
    }
    if let Some(error) = message.get("error") {
        let code = error["code"]
            .as_i64()
            .ok_or_else(|| "error without an integer code".to_owned())?;
        let allowed = if expect.codes.is_empty() {
            standard(code)
        } else {
            expect.codes.contains(&code)
        };
        if !allowed {
            return Err(format!("code {code}, expected {:?}", expect.codes));
        }
        return Ok(error["message"].as_str().unwrap_or_default().to_owned());
    }
    let result = &message["result"];
    if expect.tool_error && result["isError"] == true {
        return Ok(result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_owned());
    }
    Err("accepted: the answer is a result, not a refusal".into())
}

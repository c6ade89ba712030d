//! MCP over stdin/stdout, one JSON-RPC message per line — Handoff's own transport rather than
//! rmcp's, for three reasons. Stdin is read on a thread of its own, so a shutdown never waits
//! for the client to close it (a pending read on Tokio's stdin holds up the runtime's exit). A
//! last line without a newline is still a message. And a line that is no JSON-RPC message is
//! answered with an error naming what is wrong, with `"id": null` when its id cannot be read,
//! as JSON-RPC 2.0 requires. Nothing here is durable; the reader holds at most one line.

use std::{
    io::{BufRead, BufReader, Read},
    sync::Arc,
};

use rmcp::{
    RoleServer,
    service::{RxJsonRpcMessage, TxJsonRpcMessage},
    transport::Transport,
};
use serde_json::{Value, json};
use tokio::{
    io::{AsyncWrite, AsyncWriteExt},
    sync::{Mutex, mpsc},
};

use crate::edge::{
    diagnose::{self, ParamsCheck},
    jsonrpc::{INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR},
};

/// Longest line taken as one message; rmcp's own limit, so what HTTP takes stdio takes too.
pub(crate) const MAX_LINE: usize = 16 * 1024 * 1024;

/// Lines read ahead of the service.
const READ_AHEAD: usize = 16;

/// What the reader thread hands over.
#[derive(Debug, PartialEq, Eq)]
enum Incoming {
    /// One line, without its newline (the last one may have had none).
    Line(Vec<u8>),
    /// A line longer than [`MAX_LINE`], dropped; its size so far.
    TooLong(usize),
}

/// The stdio transport: lines from a reader thread, replies written whole, one at a time.
pub(crate) struct LineTransport<W> {
    incoming: mpsc::Receiver<Incoming>,
    out: Arc<Mutex<W>>,
}

impl LineTransport<tokio::io::Stdout> {
    /// The process's own stdin and stdout.
    pub(crate) fn stdio() -> Self {
        Self::new(std::io::stdin(), tokio::io::stdout(), MAX_LINE)
    }
}

impl<W: AsyncWrite + Unpin + Send + 'static> LineTransport<W> {
    /// Reads `input` on a thread of its own (it may block for good; nobody waits for it) and
    /// writes to `output`.
    pub(crate) fn new(input: impl Read + Send + 'static, output: W, max_line: usize) -> Self {
        let (tx, incoming) = mpsc::channel(READ_AHEAD);
        let spawned = std::thread::Builder::new()
            .name("handoff-stdin".to_owned())
            .spawn(move || read_lines(BufReader::new(input), max_line, &tx));
        if let Err(e) = spawned {
            // The channel's sender is gone with the closure: the session ends as at EOF.
            tracing::error!(error = %e, "could not start the stdin reader");
        }
        Self {
            incoming,
            out: Arc::new(Mutex::new(output)),
        }
    }

    /// Writes one JSON line.
    async fn write(out: &Mutex<W>, value: &Value) -> std::io::Result<()> {
        let mut line = value.to_string().into_bytes();
        line.push(b'\n');
        let mut out = out.lock().await;
        out.write_all(&line).await?;
        out.flush().await
    }

    async fn refuse(&self, code: i64, message: String, id: Value) -> bool {
        let error =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
        match Self::write(&self.out, &error).await {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(error = %e, "stdout closed");
                false
            }
        }
    }
}

/// Reads `input` line by line into `tx` until EOF, an error, or nobody listens.
fn read_lines(mut input: impl BufRead, max_line: usize, tx: &mpsc::Sender<Incoming>) {
    let mut line = Vec::new();
    let mut dropped = 0usize;
    loop {
        let (used, newline) = match input.fill_buf() {
            Ok([]) => break,
            Ok(available) => {
                let newline = available.iter().position(|b| *b == b'\n');
                let take = newline.unwrap_or(available.len());
                if dropped > 0 || line.len() + take > max_line {
                    dropped = dropped.saturating_add(line.len() + take);
                    line.clear();
                } else {
                    line.extend_from_slice(&available[..take]);
                }
                (newline.map_or(take, |at| at + 1), newline.is_some())
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::warn!(error = %e, "reading stdin failed; ending the session");
                break;
            }
        };
        input.consume(used);
        if newline && !send_line(tx, &mut line, &mut dropped) {
            return;
        }
    }
    // EOF: a last line without a newline is a message all the same.
    if !line.is_empty() || dropped > 0 {
        send_line(tx, &mut line, &mut dropped);
    }
}

/// Hands over the line read so far (or its being too long); false when nobody listens.
fn send_line(tx: &mpsc::Sender<Incoming>, line: &mut Vec<u8>, dropped: &mut usize) -> bool {
    let item = if *dropped > 0 {
        Incoming::TooLong(std::mem::take(dropped))
    } else {
        Incoming::Line(std::mem::take(line))
    };
    tx.blocking_send(item).is_ok()
}

/// What to do with one line.
#[derive(Debug)]
enum Parsed {
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Nothing to answer (a blank line, an unknown notification).
    Skip,
    /// Answer with this error.
    Refuse {
        code: i64,
        message: String,
        id: Value,
    },
}

fn parse(line: &[u8]) -> Parsed {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Parsed::Skip;
    }
    let value: Value = match serde_json::from_slice(line) {
        Ok(value) => value,
        Err(e) => {
            return Parsed::Refuse {
                code: PARSE_ERROR,
                message: format!(
                    "Parse error: the line ({} bytes) is not JSON: {e}",
                    line.len()
                ),
                id: Value::Null,
            };
        }
    };
    match serde_json::from_value::<RxJsonRpcMessage<RoleServer>>(value.clone()) {
        Ok(message) if !is_custom_request(&message) => Parsed::Message(Box::new(message)),
        // A served method whose params do not fit lands here too: rmcp would call it unknown.
        Ok(message) => match check_params(&value) {
            Some(refused) => refused,
            None => Parsed::Message(Box::new(message)),
        },
        Err(_) => explain(&value),
    }
}

fn is_custom_request(message: &RxJsonRpcMessage<RoleServer>) -> bool {
    matches!(
        message,
        rmcp::model::JsonRpcMessage::Request(rmcp::model::JsonRpcRequest {
            request: rmcp::model::ClientRequest::CustomRequest(_),
            ..
        })
    )
}

/// The refusal of a request to a served method with params that do not fit it.
fn check_params(value: &Value) -> Option<Parsed> {
    let method = value.get("method").and_then(Value::as_str)?;
    match diagnose::params_check(method, value.get("params")) {
        ParamsCheck::Invalid(why) => Some(refuse_unless_notification(
            value,
            INVALID_PARAMS,
            why,
            diagnose::reply_id(value),
        )),
        ParamsCheck::Valid | ParamsCheck::UnknownMethod => None,
    }
}

/// Why a JSON value is no message the server takes.
fn explain(value: &Value) -> Parsed {
    if let Some(refused) = check_params(value) {
        return refused;
    }
    let id = diagnose::reply_id(value);
    if let Some(method) = value.get("method").and_then(Value::as_str)
        && value.get("id").is_none()
    {
        // Notifications are never answered; other SDKs skip unknown ones too.
        tracing::debug!(method = %diagnose::excerpt(method), "ignoring a notification that is not MCP");
        return Parsed::Skip;
    }
    let problem = match value {
        Value::Array(members) => diagnose::batch_problem(members, "line"),
        _ => diagnose::envelope_problem(value),
    };
    Parsed::Refuse {
        code: problem.code,
        message: problem.message,
        id,
    }
}

fn refuse_unless_notification(value: &Value, code: i64, message: String, id: Value) -> Parsed {
    if value.get("id").is_none() {
        tracing::debug!(message, "ignoring a malformed notification");
        return Parsed::Skip;
    }
    Parsed::Refuse { code, message, id }
}

impl<W: AsyncWrite + Unpin + Send + 'static> Transport<RoleServer> for LineTransport<W> {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut value = serde_json::to_value(&item).map_err(std::io::Error::other)?;
            // rmcp leaves `id` out of an error it cannot correlate; JSON-RPC 2.0 wants null.
            if let Some(object) = value.as_object_mut()
                && object.contains_key("error")
            {
                object.entry("id").or_insert(Value::Null);
            }
            Self::write(&out, &value).await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            let refused = match self.incoming.recv().await? {
                Incoming::Line(line) => match parse(&line) {
                    Parsed::Message(message) => return Some(*message),
                    Parsed::Skip => continue,
                    Parsed::Refuse { code, message, id } => (code, message, id),
                },
                Incoming::TooLong(size) => (
                    INVALID_REQUEST,
                    format!("the message is too large: over {size} bytes, at most {MAX_LINE}"),
                    Value::Null,
                ),
            };
            let (code, message, id) = refused;
            if !self.refuse(code, message, id).await {
                return None;
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.incoming.close();
        self.out.lock().await.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(input: &str, max: usize) -> Vec<Incoming> {
        let (tx, mut rx) = mpsc::channel(64);
        read_lines(std::io::Cursor::new(input.as_bytes().to_vec()), max, &tx);
        drop(tx);
        let mut out = Vec::new();
        while let Ok(item) = rx.try_recv() {
            out.push(item);
        }
        out
    }

    #[test]
    fn the_last_line_counts_without_a_newline_and_long_lines_are_dropped() {
        assert_eq!(
            lines("a\r\nbb\ncc", 100),
            [
                Incoming::Line(b"a\r".to_vec()),
                Incoming::Line(b"bb".to_vec()),
                Incoming::Line(b"cc".to_vec())
            ]
        );
        assert_eq!(
            lines("0123456789\nok\n0123456789", 5),
            [
                Incoming::TooLong(10),
                Incoming::Line(b"ok".to_vec()),
                Incoming::TooLong(10)
            ]
        );
        assert!(lines("", 5).is_empty());
    }

    fn refused(line: &str) -> (i64, String, Value) {
        match parse(line.as_bytes()) {
            Parsed::Refuse { code, message, id } => (code, message, id),
            other => panic!("{line} was not refused: {other:?}"),
        }
    }

    #[test]
    fn bad_lines_are_refused_with_the_id_they_carry_or_null() {
        let (code, message, id) = refused("{not json");
        assert_eq!((code, id), (PARSE_ERROR, Value::Null));
        assert!(message.starts_with("Parse error"), "{message}");
        assert_eq!(refused(r#"[1, 2]"#).2, Value::Null);
        let (code, _, id) = refused(r#"{"jsonrpc": "1.0", "id": 7, "method": "ping"}"#);
        assert_eq!((code, id), (INVALID_REQUEST, json!(7)));
        let (code, message, id) = refused(
            r#"{"jsonrpc": "2.0", "id": "x", "method": "tools/call", "params": {"name": 5}}"#,
        );
        assert_eq!((code, id), (INVALID_PARAMS, json!("x")));
        assert!(message.contains("params.name"), "{message}");
        let (_, message, _) = refused(&format!("{{\"secret\": \"{}\"", "x".repeat(10_000)));
        assert!(message.len() < 200, "the payload is echoed: {message}");
    }

    #[test]
    fn messages_pass_and_blank_lines_and_unknown_notifications_are_skipped() {
        assert!(matches!(
            parse(br#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#),
            Parsed::Message(_)
        ));
        assert!(matches!(parse(b"  \r"), Parsed::Skip));
        assert!(matches!(
            parse(br#"{"jsonrpc": "2.0", "method": "$/lsp-thing", "params": 5}"#),
            Parsed::Skip
        ));
    }

    #[tokio::test]
    async fn errors_without_a_readable_id_carry_null() {
        let (client, server) = tokio::io::duplex(4096);
        let mut transport =
            LineTransport::new(std::io::Cursor::new(b"{oops\n".to_vec()), server, MAX_LINE);
        assert!(transport.receive().await.is_none(), "EOF ends the session");
        let error = TxJsonRpcMessage::<RoleServer>::error(
            rmcp::model::ErrorData::invalid_request("bad", None),
            None,
        );
        transport.send(error).await.unwrap();
        drop(transport);
        let mut text = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut { client }, &mut text)
            .await
            .unwrap();
        let replies: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(replies.len(), 2, "{text}");
        for reply in &replies {
            assert_eq!(reply.get("id"), Some(&Value::Null), "{reply}");
        }
        assert_eq!(replies[0]["error"]["code"], PARSE_ERROR);
    }
}

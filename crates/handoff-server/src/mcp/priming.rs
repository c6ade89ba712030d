//! SSE priming events (SEP-1699: an event with an id and empty `data`, sent first so a client
//! can resume a stream cut before its first message) only for clients that read them. The
//! 2025-11-25 revision introduced them; clients of earlier revisions parse the data of every
//! event as a JSON-RPC message, so the MCP Python SDK up to 1.2x (Letta's 1.12.4 among them)
//! logs an `Error parsing SSE message` traceback for each. rmcp primes every stream it opens,
//! whatever the session negotiated; the session gate removes those events for older sessions,
//! as the official Python SDK's own server decides (`is_version_at_least(…, "2025-11-25")`).

use axum::{body::Body, response::Response};
use bytes::Bytes;
use futures::StreamExt;
use http::header;

/// The first protocol revision whose clients skip an SSE event without data.
const FIRST_PRIMED: &str = "2025-11-25";

/// Whether a session that negotiated `protocol` may be sent priming events. Revisions are
/// dated `YYYY-MM-DD`, so they order as text.
pub(crate) fn reads_priming(protocol: &str) -> bool {
    protocol >= FIRST_PRIMED
}

/// Whether the response is an SSE stream.
pub(crate) fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// The response with every event that carries no data left out; all else passes unchanged.
pub(crate) fn without_priming(response: Response) -> Response {
    let (parts, body) = response.into_parts();
    let events = body
        .into_data_stream()
        .filter(|chunk| std::future::ready(!chunk.as_ref().is_ok_and(is_dataless_event)));
    Response::from_parts(parts, Body::from_stream(events))
}

/// Whether `chunk` carries a message: neither a keep-alive comment nor a dataless event.
pub(crate) fn is_message(chunk: &Bytes) -> bool {
    !chunk.starts_with(b":") && !is_dataless_event(chunk)
}

/// Whether `chunk` is exactly one whole SSE event whose `data` lines are all empty (a priming
/// event, or rmcp's retry hint). rmcp writes one event per chunk; anything else — keep-alive
/// comments, events with a message, a chunk holding more or less than one event — is kept, so
/// a change in how events are chunked can only let a priming event through, never lose a
/// message.
fn is_dataless_event(chunk: &Bytes) -> bool {
    let Ok(text) = std::str::from_utf8(chunk) else {
        return false;
    };
    let Some(event) = text.strip_suffix("\n\n") else {
        return false;
    };
    if event.contains("\n\n") {
        return false;
    }
    let mut data_lines = 0;
    for line in event.lines() {
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        if field == "data" {
            if !value.trim().is_empty() {
                return false;
            }
            data_lines += 1;
        }
    }
    data_lines > 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataless(text: &'static str) -> bool {
        is_dataless_event(&Bytes::from_static(text.as_bytes()))
    }

    #[test]
    fn only_whole_events_without_data_are_priming() {
        assert!(dataless("data: \nid: 0\nretry: 3000\n\n"));
        assert!(dataless("data:\nid: 0/1\n\n"));
        assert!(dataless("data: \nretry: 3000\n\n"));
        assert!(!dataless("data: {\"jsonrpc\":\"2.0\"}\nid: 0\n\n"));
        assert!(!dataless(":\n\n"), "a keep-alive comment is no event");
        assert!(
            !dataless("id: 0\n\n"),
            "no data line: not an event a client parses"
        );
        assert!(!dataless("data: \nid: 0\n"), "half an event is left alone");
        assert!(
            !dataless("data: \n\ndata: {}\n\n"),
            "two events are left alone"
        );
    }

    #[test]
    fn only_events_with_data_are_messages() {
        let message = |text: &'static str| is_message(&Bytes::from_static(text.as_bytes()));
        assert!(message("data: {\"jsonrpc\":\"2.0\"}\nid: 0\n\n"));
        assert!(!message(":\n\n"), "keep-alive");
        assert!(!message("data: \nid: 0\nretry: 3000\n\n"), "priming");
    }

    #[test]
    fn revisions_from_2025_11_25_read_priming() {
        assert!(!reads_priming("2025-03-26"));
        assert!(!reads_priming("2025-06-18"));
        assert!(reads_priming("2025-11-25"));
        assert!(reads_priming("2026-07-28"));
    }
}

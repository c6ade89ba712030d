//! Server-sent events: frame encoding and the streaming response body.

use std::convert::Infallible;

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;

use crate::shutdown::Shutdown;

/// A streamed reply split where a hanging reply stops: `open` is sent either way, `close`
/// (finish reason, usage, end marker) only when the reply completes.
#[derive(Debug, Default)]
pub(crate) struct Frames {
    /// Start of the stream and all content.
    pub open: Vec<Bytes>,
    /// What completes the stream.
    pub close: Vec<Bytes>,
}

/// An `event: NAME` + `data: JSON` frame (Responses API, Anthropic).
pub(crate) fn event(name: &str, data: &Value) -> Bytes {
    Bytes::from(format!("event: {name}\ndata: {data}\n\n"))
}

/// A bare `data: …` frame (OpenAI chat, Gemini).
pub(crate) fn data(payload: &str) -> Bytes {
    Bytes::from(format!("data: {payload}\n\n"))
}

/// The streaming response. With `hang`, only `open` is sent and the body then stays open
/// until shutdown; if the client disconnects first, hyper drops the body stream, so nothing
/// is left waiting.
pub(crate) fn response(frames: Frames, hang: bool, shutdown: Shutdown) -> Response {
    let mut sent = frames.open;
    if !hang {
        sent.extend(frames.close);
    }
    let head = futures::stream::iter(sent.into_iter().map(Ok::<Bytes, Infallible>));
    let tail = futures::stream::once(async move {
        if hang {
            shutdown.wait().await;
        }
    })
    .filter_map(|()| async { None::<Result<Bytes, Infallible>> });
    let mut response = (StatusCode::OK, Body::from_stream(head.chain(tail))).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

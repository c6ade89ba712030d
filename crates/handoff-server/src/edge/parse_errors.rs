//! JSON-RPC bodies for the errors hyper answers by itself, before any route runs: a request
//! line or header it cannot parse (400: a bad `Content-Length`, a control character in a
//! header), a target too long (414), headers too large (431). hyper writes those with an empty
//! body and offers no hook, so the connection's writes are watched for exactly that head and
//! the head is replaced. Holds one pending replacement per connection, in memory.

use std::{
    io,
    pin::Pin,
    task::{Context, Poll, ready},
};

use serde_json::json;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::jsonrpc::INVALID_REQUEST;

/// A connection whose hyper-made error heads get a JSON-RPC body.
#[derive(Debug)]
pub(crate) struct ParseErrorBodies<T> {
    inner: T,
    pending: Option<Replacement>,
}

/// A head being replaced: the bytes written instead, and how many of hyper's it stands for.
#[derive(Debug)]
struct Replacement {
    bytes: Vec<u8>,
    written: usize,
    stands_for: usize,
}

impl<T> ParseErrorBodies<T> {
    /// Wraps a connection's IO.
    pub(crate) fn new(inner: T) -> Self {
        Self {
            inner,
            pending: None,
        }
    }
}

impl<T: AsyncWrite + Unpin> ParseErrorBodies<T> {
    /// Writes the pending replacement; ready with the length of what it replaced once done.
    fn drive(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        let Some(pending) = self.pending.as_mut() else {
            return Poll::Ready(Ok(0));
        };
        while pending.written < pending.bytes.len() {
            match ready!(
                Pin::new(&mut self.inner).poll_write(cx, &pending.bytes[pending.written..])
            ) {
                Ok(0) => {
                    self.pending = None;
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => pending.written += n,
                Err(error) => {
                    self.pending = None;
                    return Poll::Ready(Err(error));
                }
            }
        }
        let stands_for = pending.stands_for;
        self.pending = None;
        Poll::Ready(Ok(stands_for))
    }
}

/// The replacement for `head` when it is one of hyper's own bodiless error answers.
fn replacement(head: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(head).ok()?;
    let status = text.strip_prefix("HTTP/1.1 ")?.get(..3)?;
    let message = match status {
        "400" => {
            "Bad Request: the request line or a header could not be parsed (for example a \
             malformed Content-Length or a control character in a header)"
        }
        "414" => "URI Too Long: the request target is longer than the server accepts",
        "431" => "Request Header Fields Too Large: the request has too many or too large headers",
        _ => return None,
    };
    let lower = text.to_ascii_lowercase();
    // Exactly a head with an empty body and no content type: what hyper writes for a parse
    // error, never what a route answers.
    if !lower.ends_with("\r\n\r\n")
        || !lower.contains("\r\ncontent-length: 0\r\n")
        || lower.contains("\r\ncontent-type:")
    {
        return None;
    }
    let status_line = text.split("\r\n").next()?;
    let date = text
        .split("\r\n")
        .find(|line| line.to_ascii_lowercase().starts_with("date:"));
    let body = json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": {"code": INVALID_REQUEST, "message": message},
    })
    .to_string();
    let mut out = format!(
        "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n",
        body.len()
    );
    if let Some(date) = date {
        out.push_str(date);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.push_str(&body);
    Some(out.into_bytes())
}

impl<T: AsyncRead + Unpin> AsyncRead for ParseErrorBodies<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ParseErrorBodies<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // A pending replacement is retried with the same buffer until it is written.
        if self.pending.is_none()
            && let Some(bytes) = replacement(buf)
        {
            self.pending = Some(Replacement {
                bytes,
                written: 0,
                stands_for: buf.len(),
            });
        }
        if self.pending.is_some() {
            return self.drive(cx);
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        if self.pending.is_none() {
            // hyper writes a bodiless head as the only non-empty slice.
            let mut filled = bufs.iter().filter(|b| !b.is_empty());
            if let (Some(only), None) = (filled.next(), filled.next())
                && let Some(bytes) = replacement(only)
            {
                self.pending = Some(Replacement {
                    bytes,
                    written: 0,
                    stands_for: only.len(),
                });
            }
        }
        if self.pending.is_some() {
            return self.drive(cx);
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending.is_some() {
            ready!(self.drive(cx))?;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.pending.is_some() {
            ready!(self.drive(cx))?;
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::AsyncWriteExt;

    use super::*;

    const HYPER_431: &[u8] = b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Mon, 24 Nov 2026 03:00:00 GMT\r\n\r\n";

    #[tokio::test]
    async fn a_bodiless_parse_error_head_gets_a_json_rpc_body() {
        let mut wire = ParseErrorBodies::new(Vec::new());
        wire.write_all(HYPER_431).await.unwrap();
        let out = String::from_utf8(wire.inner).unwrap();
        let (head, body) = out.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        assert!(head.contains("date: Mon"), "{head}");
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], INVALID_REQUEST);
    }

    #[tokio::test]
    async fn other_writes_pass_untouched() {
        for bytes in [
            &b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"[..],
            b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            b"{\"jsonrpc\":\"2.0\"}",
        ] {
            let mut wire = ParseErrorBodies::new(Vec::new());
            wire.write_all(bytes).await.unwrap();
            assert_eq!(wire.inner, bytes);
        }
    }
}

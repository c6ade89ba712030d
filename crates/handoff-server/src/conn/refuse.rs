//! Refusing a connection beyond the cap: a 503 with a JSON-RPC body, then close; and a warning
//! that says so without flooding the log.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use serde_json::json;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    sync::Semaphore,
};

use crate::edge::jsonrpc::SERVER_ERROR;

/// Refusals answered at once; beyond this a refused connection is closed without an answer, so
/// refusing costs nothing a flood could pile up.
const REFUSALS_IN_FLIGHT: usize = 32;
/// How long one refusal may take (answer written, the client's request drained).
const REFUSAL_TIME: Duration = Duration::from_secs(1);
/// The most of a refused client's request read before closing.
const DRAIN_BYTES: usize = 64 << 10;

/// Answers connections the cap leaves no room for.
#[derive(Debug)]
pub(crate) struct Refuser {
    answer: Arc<[u8]>,
    slots: Arc<Semaphore>,
}

impl Refuser {
    /// A refuser naming the cap `max` in its answer.
    pub(crate) fn new(max: usize) -> Self {
        let body = json!({
            "jsonrpc": "2.0",
            "id": null,
            "error": {
                "code": SERVER_ERROR,
                "message": format!(
                    "Handoff is at its connection limit ({max} open; server.max_connections); retry shortly"
                ),
            },
        })
        .to_string();
        let answer = format!(
            "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
        Self {
            answer: answer.into_bytes().into(),
            slots: Arc::new(Semaphore::new(REFUSALS_IN_FLIGHT)),
        }
    }

    /// Answers `tcp` with the 503 and closes it, or closes it at once when many refusals are
    /// already under way.
    pub(crate) fn refuse(&self, tcp: TcpStream) {
        let Ok(slot) = self.slots.clone().try_acquire_owned() else {
            return;
        };
        let answer = self.answer.clone();
        tokio::spawn(async move {
            let _slot = slot;
            if let Err(e) = tokio::time::timeout(REFUSAL_TIME, answer_and_close(tcp, &answer)).await
            {
                tracing::debug!(error = %e, "refused connection did not close in time");
            }
        });
    }
}

async fn answer_and_close(mut tcp: TcpStream, answer: &[u8]) {
    if tcp.write_all(answer).await.is_err() || tcp.shutdown().await.is_err() {
        return;
    }
    // Closing with the client's request unread would send a reset, which can destroy the 503
    // before the client reads it: read until the client closes.
    let mut sink = [0u8; 4096];
    let mut drained = 0;
    while drained < DRAIN_BYTES {
        match tcp.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(n) => drained += n,
        }
    }
}

/// A warning logged at most once per interval, counting what it held back.
#[derive(Debug)]
pub(crate) struct Throttled {
    interval: Duration,
    last: Option<Instant>,
    held_back: u64,
}

impl Throttled {
    /// At most one warning per `interval`.
    pub(crate) fn new(interval: Duration) -> Self {
        Self {
            interval,
            last: None,
            held_back: 0,
        }
    }

    /// Whether to log now; if so, how many occurrences since the last warning (this one included).
    pub(crate) fn hit(&mut self) -> Option<u64> {
        let now = Instant::now();
        self.held_back += 1;
        if self
            .last
            .is_some_and(|at| now.duration_since(at) < self.interval)
        {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held_back))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throttled_warns_once_per_interval_and_counts_the_rest() {
        let mut warning = Throttled::new(Duration::from_secs(3600));
        assert_eq!(warning.hit(), Some(1));
        assert_eq!(warning.hit(), None);
        assert_eq!(warning.hit(), None);
        let mut immediate = Throttled::new(Duration::ZERO);
        assert_eq!(immediate.hit(), Some(1));
        assert_eq!(immediate.hit(), Some(1));
    }

    #[test]
    fn the_answer_is_a_complete_json_rpc_503() {
        let refuser = Refuser::new(7);
        let text = String::from_utf8(refuser.answer.to_vec()).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 503 "), "{head}");
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{head}"
        );
        let body: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["error"]["code"], SERVER_ERROR);
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("(7 open")
        );
    }
}

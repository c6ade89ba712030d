//! Units of work made of several requests in a fresh session, as real clients send them.

use std::{future::Future, time::Instant};

use reqwest::Client;

use crate::{
    client::{Era, McpClient},
    load::AGENT,
    measure::micros_since,
    ops::Op,
};

/// A sequence of requests that is one unit of work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pattern {
    /// Letta's tool call: a fresh session per call (initialize, initialized, GET stream,
    /// `tools/call get_task_status`, DELETE, then the stream is dropped).
    Letta,
    /// The same without the GET stream.
    LettaNoStream,
    /// A client connecting and looking around: initialize, initialized, `tools/list`, `ping`
    /// (the protocol's). Its session is ended after the step, unmeasured.
    Handshake,
}

impl Pattern {
    /// Every pattern, in report order.
    pub(crate) const ALL: [Pattern; 3] =
        [Pattern::Letta, Pattern::LettaNoStream, Pattern::Handshake];

    /// The row counting whole units.
    pub(crate) fn unit_row(self) -> &'static str {
        match self {
            Pattern::Letta => "letta/call",
            Pattern::LettaNoStream => "letta-noGET/call",
            Pattern::Handshake => "handshake/unit",
        }
    }

    /// The row counting HTTP requests.
    pub(crate) fn request_row(self) -> &'static str {
        match self {
            Pattern::Letta => "letta/req",
            Pattern::LettaNoStream => "letta-noGET/req",
            Pattern::Handshake => "handshake/req",
        }
    }

    /// HTTP requests in one unit.
    pub(crate) fn requests(self) -> usize {
        match self {
            Pattern::Letta => 5,
            Pattern::LettaNoStream | Pattern::Handshake => 4,
        }
    }
}

/// Runs `fut`, adding its latency (µs) to `latencies` when it succeeds.
async fn timed<T>(
    latencies: &mut Vec<f64>,
    fut: impl Future<Output = Result<T, String>>,
) -> Result<T, String> {
    let at = Instant::now();
    let value = fut.await?;
    latencies.push(micros_since(at));
    Ok(value)
}

/// One unit of `pattern` against `url`, each request's latency added to `latencies`. The same
/// requests go to Handoff and to the floor. A handshake's session is handed back to be ended.
pub(crate) async fn unit(
    pattern: Pattern,
    http: &Client,
    url: &str,
    task_id: &str,
    latencies: &mut Vec<f64>,
) -> Result<Option<McpClient>, String> {
    let mut client = McpClient::new(http.clone(), url, Era::Session, AGENT);
    timed(latencies, client.initialize()).await?;
    timed(latencies, client.initialized()).await?;
    if pattern == Pattern::Handshake {
        timed(latencies, client.call(Op::ToolsList, task_id)).await?;
        timed(latencies, client.call(Op::RpcPing, task_id)).await?;
        return Ok(Some(client));
    }
    // Letta's client opens the stream in the background; waiting for its answer here fixes
    // the order, so the DELETE can never overtake the GET.
    let stream = match pattern {
        Pattern::Letta => Some(timed(latencies, client.open_stream()).await?),
        _ => None,
    };
    timed(latencies, client.call(Op::GetTaskStatus, task_id)).await?;
    // Letta's client builds an HTTP client per session: its connections end with the session.
    timed(latencies, client.end_session(true)).await?;
    // As in Letta's client (the MCP Python SDK), the stream is cancelled after the DELETE.
    drop(stream);
    Ok(None)
}

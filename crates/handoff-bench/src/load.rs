//! N concurrent clients sending one op for a fixed time.

use std::time::{Duration, Instant};

use reqwest::Client;

use crate::{
    client::{Era, McpClient},
    measure::{Latency, Tally, Window, measured, micros_since},
    ops::Op,
};

/// The agent every load client calls as.
pub(crate) const AGENT: &str = "bench";

/// What one load step measured: one row of the table.
#[derive(Debug, Clone)]
pub(crate) struct LoadResult {
    /// What was counted: an op, or a pattern per unit or per request.
    pub name: &'static str,
    pub era: Era,
    pub clients: usize,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Items (requests or units) done per second.
    pub per_sec: f64,
    pub latency: Latency,
    /// Server CPU time per item, µs.
    pub cpu_us: f64,
    pub rss_after: u64,
}

impl LoadResult {
    /// The row for `tally`, whose latencies are one per item done in `window`.
    pub(crate) fn from_tally(
        name: &'static str,
        era: Era,
        clients: usize,
        tally: Tally,
        window: &Window,
    ) -> Self {
        let items = tally.latencies.len();
        Self {
            name,
            era,
            clients,
            errors: tally.errors,
            first_error: tally.first_error,
            per_sec: items as f64 / window.secs,
            cpu_us: window.cpu_us_per(items),
            latency: Latency::of(tally.latencies),
            rss_after: window.rss_after,
        }
    }
}

/// What one step sends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub era: Era,
    pub op: Op,
    pub clients: usize,
    pub duration: Duration,
}

/// One step: `clients` clients connect (not measured), then send `op` back to back until
/// `duration` has passed.
pub(crate) async fn step(
    http: &Client,
    url: &str,
    pid: u32,
    plan: Step,
    task_id: &str,
) -> LoadResult {
    let Step {
        era,
        op,
        clients,
        duration,
    } = plan;
    let (tallies, window) = measured(pid, clients, |gate| {
        let (http, url, task_id) = (http.clone(), url.to_owned(), task_id.to_owned());
        async move {
            // One agent: it owns the task `get_task_status` reads.
            let connected = McpClient::connect(http, &url, era, AGENT).await;
            gate.pass().await;
            let mut tally = Tally::default();
            let mut client = match connected {
                Ok(client) => client,
                Err(e) => {
                    tally.error(format!("connect: {e}"));
                    return tally;
                }
            };
            let until = Instant::now() + duration;
            while Instant::now() < until {
                let at = Instant::now();
                match client.call(op, &task_id).await {
                    Ok(_) => tally.latencies.push(micros_since(at)),
                    Err(e) => tally.error(e),
                }
            }
            tally
        }
    })
    .await;
    LoadResult::from_tally(op.name(), era, clients, Tally::merge(tallies), &window)
}

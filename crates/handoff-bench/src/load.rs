//! N concurrent clients sending one op for a fixed time.

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use reqwest::Client;
use tokio::sync::Barrier;

use crate::{
    client::{Era, McpClient},
    ops::Op,
    proc::ProcSample,
};

/// The agent every load client calls as.
pub(crate) const AGENT: &str = "bench";

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl Latency {
    /// Percentiles of `samples` (µs); zeros when empty.
    pub(crate) fn of(mut samples: Vec<f64>) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Self {
            p50: at(0.5),
            p90: at(0.9),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// What one load step measured.
#[derive(Debug, Clone)]
pub(crate) struct LoadResult {
    pub op: Op,
    pub era: Era,
    pub clients: usize,
    pub errors: u64,
    pub first_error: Option<String>,
    pub per_sec: f64,
    pub latency: Latency,
    /// Server CPU time per request, µs.
    pub cpu_us: f64,
    pub rss_after: u64,
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
    let ready = Arc::new(Barrier::new(clients + 1));
    let go = Arc::new(Barrier::new(clients + 1));
    let mut joins = Vec::with_capacity(clients);
    for _ in 0..clients {
        let (http, url, task_id) = (http.clone(), url.to_owned(), task_id.to_owned());
        let (ready, go) = (ready.clone(), go.clone());
        joins.push(tokio::spawn(async move {
            // One agent: it owns the task `get_task_status` reads.
            let connected = McpClient::connect(http, &url, era, AGENT).await;
            ready.wait().await;
            go.wait().await;
            let mut client = match connected {
                Ok(client) => client,
                Err(e) => return (Vec::new(), 1u64, Some(format!("connect: {e}"))),
            };
            let until = Instant::now() + duration;
            let mut latencies = Vec::new();
            let (mut errors, mut first_error) = (0u64, None);
            while Instant::now() < until {
                let at = Instant::now();
                match client.call(op, &task_id).await {
                    Ok(_) => latencies.push(at.elapsed().as_secs_f64() * 1e6),
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                }
            }
            (latencies, errors, first_error)
        }));
    }
    ready.wait().await;
    let before = ProcSample::of(pid);
    let started = Instant::now();
    go.wait().await;
    let mut latencies = Vec::new();
    let (mut errors, mut first_error) = (0, None);
    for join in joins {
        if let Ok((mut l, e, f)) = join.await {
            latencies.append(&mut l);
            errors += e;
            if first_error.is_none() {
                first_error = f;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let after = ProcSample::of(pid);
    let requests = latencies.len() as u64;
    LoadResult {
        op,
        era,
        clients,
        errors,
        first_error,
        per_sec: requests as f64 / secs,
        cpu_us: if requests == 0 {
            0.0
        } else {
            (after.cpu_secs - before.cpu_secs) * 1e6 / requests as f64
        },
        latency: Latency::of(latencies),
        rss_after: after.rss_bytes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let l = Latency::of((1..=100).map(f64::from).collect());
        assert_eq!((l.p50, l.p90, l.p99, l.max), (51.0, 90.0, 99.0, 100.0));
        assert_eq!(Latency::of(Vec::new()).max, 0.0);
    }
}

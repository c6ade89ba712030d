//! One measured window: N workers prepare unmeasured, start together, and the server's CPU time
//! is read around the time they work.

use std::{
    future::Future,
    sync::Arc,
    time::{Duration, Instant},
};

use tokio::sync::Barrier;

use crate::proc::ProcSample;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Latency {
    pub p50: f64,
    pub p90: f64,
    pub p95: f64,
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
            p95: at(0.95),
            p99: at(0.99),
            max: at(1.0),
        }
    }
}

/// Microseconds since `at`.
pub(crate) fn micros_since(at: Instant) -> f64 {
    at.elapsed().as_secs_f64() * 1e6
}

/// What one worker counted: a latency (µs) per item done, and its failures.
#[derive(Debug, Default)]
pub(crate) struct Tally {
    pub latencies: Vec<f64>,
    pub errors: u64,
    pub first_error: Option<String>,
}

impl Tally {
    /// Counts a failure; the first one is kept for the report.
    pub(crate) fn error(&mut self, error: String) {
        self.errors += 1;
        self.first_error.get_or_insert(error);
    }

    /// All workers' tallies as one.
    pub(crate) fn merge(tallies: impl IntoIterator<Item = Tally>) -> Tally {
        let mut all = Tally::default();
        for mut tally in tallies {
            all.latencies.append(&mut tally.latencies);
            all.errors += tally.errors;
            if all.first_error.is_none() {
                all.first_error = tally.first_error;
            }
        }
        all
    }
}

/// Where a worker waits until every worker has prepared and the window opens.
#[derive(Debug, Clone)]
pub(crate) struct Gate {
    ready: Arc<Barrier>,
    go: Arc<Barrier>,
}

impl Gate {
    /// Waits for the window to open (every worker must pass, even one that failed to prepare).
    pub(crate) async fn pass(&self) {
        self.ready.wait().await;
        self.go.wait().await;
    }
}

/// The server's side of one window.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Window {
    pub secs: f64,
    /// Server CPU seconds (user + system) spent in the window.
    pub cpu_secs: f64,
    pub rss_after: u64,
}

impl Window {
    /// Server CPU µs per item done; 0 with none.
    pub(crate) fn cpu_us_per(&self, items: usize) -> f64 {
        if items == 0 {
            0.0
        } else {
            self.cpu_secs * 1e6 / items as f64
        }
    }
}

/// Spawns `clients` workers made by `worker`; each prepares, passes its gate, then works. The
/// window runs from the gate opening to the last worker's end; the server is process `pid`.
pub(crate) async fn measured<T, F, Fut>(pid: u32, clients: usize, worker: F) -> (Vec<T>, Window)
where
    F: Fn(Gate) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let (outputs, windows) = measured_all(&[pid], Duration::ZERO, clients, worker).await;
    (outputs, windows.into_iter().next().unwrap_or_default())
}

/// [`measured`] with one window per process of `pids` (in that order), their CPU read `settle`
/// after the last worker's end: work a server defers past its answer (a record written once a
/// stream has closed) still counts, while `secs` stays the time the workers worked.
pub(crate) async fn measured_all<T, F, Fut>(
    pids: &[u32],
    settle: Duration,
    clients: usize,
    worker: F,
) -> (Vec<T>, Vec<Window>)
where
    F: Fn(Gate) -> Fut,
    Fut: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let gate = Gate {
        ready: Arc::new(Barrier::new(clients + 1)),
        go: Arc::new(Barrier::new(clients + 1)),
    };
    let joins: Vec<_> = (0..clients)
        .map(|_| tokio::spawn(worker(gate.clone())))
        .collect();
    gate.ready.wait().await;
    let before: Vec<ProcSample> = pids.iter().map(|pid| ProcSample::of(*pid)).collect();
    let started = Instant::now();
    gate.go.wait().await;
    let mut outputs = Vec::with_capacity(clients);
    for join in joins {
        if let Ok(output) = join.await {
            outputs.push(output);
        }
    }
    let secs = started.elapsed().as_secs_f64();
    tokio::time::sleep(settle).await;
    let windows = pids
        .iter()
        .zip(before)
        .map(|(pid, before)| {
            let after = ProcSample::of(*pid);
            Window {
                secs,
                cpu_secs: after.cpu_secs - before.cpu_secs,
                rss_after: after.rss_bytes,
            }
        })
        .collect();
    (outputs, windows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let l = Latency::of((1..=100).map(f64::from).collect());
        assert_eq!((l.p50, l.p90, l.p99, l.max), (51.0, 90.0, 99.0, 100.0));
        assert_eq!(l.p95, 95.0);
        assert_eq!(Latency::of(Vec::new()).max, 0.0);
    }

    #[test]
    fn tallies_merge_keeping_the_first_error() {
        let mut a = Tally::default();
        a.latencies.push(1.0);
        a.error("first".to_owned());
        let mut b = Tally::default();
        b.latencies.push(2.0);
        b.error("second".to_owned());
        let all = Tally::merge([a, b]);
        assert_eq!((all.latencies.len(), all.errors), (2, 2));
        assert_eq!(all.first_error.as_deref(), Some("first"));
    }
}

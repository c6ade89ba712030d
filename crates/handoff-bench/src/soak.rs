//! One session at a fixed rate for a long time: does p99 stay flat, does memory stay put?

use std::time::{Duration, Instant};

use reqwest::Client;

use crate::{
    client::{Era, McpClient},
    measure::Latency,
    ops::Op,
    proc::ProcSample,
};

/// What the soak measured.
#[derive(Debug, Clone)]
pub(crate) struct SoakResult {
    /// p99 (µs) of each window, in order.
    pub window_p99: Vec<f64>,
    pub window: Duration,
    pub requests: u64,
    pub errors: u64,
    pub rss_start: u64,
    pub rss_end: u64,
}

/// Sends `get_task_status` at `rate` per second in one session for `duration`, split into
/// `windows` equal windows.
pub(crate) async fn soak(
    http: &Client,
    url: &str,
    pid: u32,
    task_id: &str,
    rate: u32,
    duration: Duration,
    windows: u32,
) -> Result<SoakResult, String> {
    let mut client =
        McpClient::connect(http.clone(), url, Era::Session, crate::load::AGENT).await?;
    let window = duration / windows.max(1);
    let rss_start = ProcSample::of(pid).rss_bytes;
    let mut ticker = tokio::time::interval(Duration::from_secs_f64(1.0 / f64::from(rate.max(1))));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut window_p99 = Vec::new();
    let (mut requests, mut errors) = (0, 0);
    for _ in 0..windows.max(1) {
        let until = Instant::now() + window;
        let mut samples = Vec::new();
        while Instant::now() < until {
            ticker.tick().await;
            let at = Instant::now();
            match client.call(Op::GetTaskStatus, task_id).await {
                Ok(_) => samples.push(at.elapsed().as_secs_f64() * 1e6),
                Err(_) => errors += 1,
            }
            requests += 1;
        }
        window_p99.push(Latency::of(samples).p99);
    }
    Ok(SoakResult {
        window_p99,
        window,
        requests,
        errors,
        rss_start,
        rss_end: ProcSample::of(pid).rss_bytes,
    })
}

/// What abandoning sessions did to the server.
pub(crate) struct Abandoned {
    /// Sessions the server opened (the rest were refused by its limits).
    pub(crate) opened: usize,
    /// Sessions it opened when the same clients tried again after the unused-session timeout:
    /// as many as the first time when expiry freed every slot.
    pub(crate) reopened: usize,
    /// RSS (bytes) before, right after opening, after `idle` had passed, and after the second
    /// round (no growth when expired sessions' memory is reused).
    pub(crate) rss: [u64; 4],
}

/// Opens `count` sessions (initialize only) and walks away from them, waits `idle` (the
/// server's unused-session timeout plus slack), then does it again; RSS at each point.
pub(crate) async fn abandon_sessions(
    http: &Client,
    url: &str,
    pid: u32,
    count: usize,
    idle: Duration,
) -> Abandoned {
    let before = ProcSample::of(pid).rss_bytes;
    let opened = open_sessions(http, url, count).await;
    let with_them = ProcSample::of(pid).rss_bytes;
    tokio::time::sleep(idle).await;
    let after = ProcSample::of(pid).rss_bytes;
    let reopened = open_sessions(http, url, count).await;
    Abandoned {
        opened,
        reopened,
        rss: [before, with_them, after, ProcSample::of(pid).rss_bytes],
    }
}

/// Opens `count` sessions from 64 clients, 64 at a time (what is counted is the session
/// limit, not the connection limit); how many the server opened.
async fn open_sessions(http: &Client, url: &str, count: usize) -> usize {
    let mut opened = 0;
    for chunk in (0..count).collect::<Vec<_>>().chunks(64) {
        let joins: Vec<_> = chunk
            .iter()
            .map(|n| {
                let (http, url, agent) = (
                    http.clone(),
                    url.to_owned(),
                    format!("abandoned-{}", n % 64),
                );
                tokio::spawn(
                    async move { McpClient::connect(http, &url, Era::Session, &agent).await },
                )
            })
            .collect();
        for join in joins {
            if matches!(join.await, Ok(Ok(_))) {
                opened += 1;
            }
        }
    }
    opened
}

//! Pattern steps: N clients doing whole units back to back, against Handoff and against the
//! floor answering the same requests, each counted per unit and per HTTP request.

use std::time::{Duration, Instant};

use reqwest::Client;

use crate::{
    client::{Era, McpClient},
    load::LoadResult,
    measure::{Tally, measured, micros_since},
    pattern::{Pattern, unit},
    report,
    target::Target,
};

/// Patterns run at concurrency levels up to this: past it, a fresh session and connection per
/// unit on 2 cores measures the kernel's connection churn more than either server.
pub(crate) const PATTERN_MAX_CLIENTS: usize = 64;

/// What the patterns at one concurrency level run against.
pub(crate) struct PatternPlan<'a> {
    pub handoff: &'a Target,
    pub floor: &'a Target,
    pub clients: usize,
    pub duration: Duration,
    /// The task `get_task_status` reads.
    pub task_id: &'a str,
}

/// What one worker did: its units, its requests' latencies, the sessions it left open.
type WorkerOutput = (Tally, Vec<f64>, Vec<McpClient>);

/// Every pattern at `plan.clients`: each one's floor rows, Handoff's rows beside them.
pub(crate) async fn patterns_at(http: &Client, plan: &PatternPlan<'_>) -> Vec<LoadResult> {
    let mut results = Vec::new();
    for pattern in Pattern::ALL {
        let [floor_unit, floor_request] =
            pattern_step(http, plan.floor, Era::Floor, pattern, plan).await;
        let [unit, request] = pattern_step(http, plan.handoff, Era::Session, pattern, plan).await;
        report::row(&floor_unit, None);
        report::row(&unit, Some(&floor_unit));
        report::row(&floor_request, None);
        report::row(&request, Some(&floor_request));
        results.extend([floor_unit, unit, floor_request, request]);
    }
    results
}

/// One pattern against `target` for `plan.duration`: the per-unit row, then the per-request row
/// (labelled `era`). Sessions the units left open are ended afterwards, outside the window.
async fn pattern_step(
    http: &Client,
    target: &Target,
    era: Era,
    pattern: Pattern,
    plan: &PatternPlan<'_>,
) -> [LoadResult; 2] {
    let duration = plan.duration;
    let (outputs, window) = measured(target.pid, plan.clients, |gate| {
        let (http, url, task_id) = (http.clone(), target.url.clone(), plan.task_id.to_owned());
        async move {
            gate.pass().await;
            let (mut units, mut requests, mut open) = (Tally::default(), Vec::new(), Vec::new());
            let until = Instant::now() + duration;
            while Instant::now() < until {
                let at = Instant::now();
                match unit(pattern, &http, &url, &task_id, &mut requests).await {
                    Ok(left_open) => {
                        units.latencies.push(micros_since(at));
                        open.extend(left_open);
                    }
                    Err(e) => units.error(e),
                }
            }
            (units, requests, open)
        }
    })
    .await;
    let (units, requests, open) = split(outputs);
    // Unit failures are already reported on the unit row.
    let requests = Tally {
        latencies: requests,
        errors: units.errors,
        first_error: None,
    };
    end_sessions(open).await;
    [
        LoadResult::from_tally(pattern.unit_row(), era, plan.clients, units, &window),
        LoadResult::from_tally(pattern.request_row(), era, plan.clients, requests, &window),
    ]
}

/// The workers' outputs as one tally of units, every request latency, and the open sessions
/// grouped by worker.
fn split(outputs: Vec<WorkerOutput>) -> (Tally, Vec<f64>, Vec<Vec<McpClient>>) {
    let (mut units, mut requests, mut open) = (Vec::new(), Vec::new(), Vec::new());
    for (tally, mut latencies, sessions) in outputs {
        units.push(tally);
        requests.append(&mut latencies);
        open.push(sessions);
    }
    (Tally::merge(units), requests, open)
}

/// Ends the sessions, one worker's at a time per task, so no later step pays for their expiry.
async fn end_sessions(open: Vec<Vec<McpClient>>) {
    let joins: Vec<_> = open
        .into_iter()
        .map(|sessions| {
            tokio::spawn(async move {
                for mut session in sessions {
                    // Cleanup only: a session that will not end still expires when idle.
                    let _ = session.end_session(false).await;
                }
            })
        })
        .collect();
    for join in joins {
        let _ = join.await;
    }
}

/// The summary's line: server CPU per Letta call and per request, and its ratio to the floor
/// serving the same requests, at each concurrency level.
pub(crate) fn summary(results: &[LoadResult]) {
    let find = |name: &str, era: Era, clients: usize| {
        results
            .iter()
            .find(|r| r.name == name && r.era == era && r.clients == clients)
    };
    let pattern = Pattern::Letta;
    let figures: Vec<String> = results
        .iter()
        .filter(|r| r.name == pattern.unit_row() && r.era == Era::Session)
        .map(|call| {
            let floor =
                find(pattern.unit_row(), Era::Floor, call.clients).map_or(0.0, |f| f.cpu_us);
            let per_request =
                find(pattern.request_row(), Era::Session, call.clients).map_or(0.0, |r| r.cpu_us);
            format!(
                "N={} {:.0} µs per call, {:.0} µs per request, {} the floor",
                call.clients,
                call.cpu_us,
                per_request,
                report::ratio(call.cpu_us, floor)
            )
        })
        .collect();
    println!(
        "letta pattern (a fresh session per tool call, {} requests), server CPU: {}",
        pattern.requests(),
        figures.join("; ")
    );
}

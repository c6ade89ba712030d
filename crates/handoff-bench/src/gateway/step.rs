//! One measured step: N clients each make one unmeasured call (their connections open), then
//! all start together and make their share of the step's calls back to back. Read around the
//! window: `handoff serve`'s CPU time, and this process's — the client and the scripted model,
//! both in it.

use std::{
    sync::{
        Arc,
        atomic::{AtomicU32, Ordering},
    },
    time::{Duration, Instant},
};

use axum::body::Bytes;
use reqwest::Client;

use super::call::{self, Endpoint};
use crate::measure::{Latency, Tally, measured_all, micros_since};

/// After the last answer, before the CPU is read: the gateway records each call once its
/// stream has ended, and that is part of the call's cost.
const SETTLE: Duration = Duration::from_millis(250);

/// Which way the calls go, and whether the model answers at once or after its time to first
/// token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Route {
    /// Straight to the scripted model, with the provider key.
    Direct,
    /// Through `handoff serve`'s gateway, with the task's token.
    Gateway,
    /// As `Direct`, the model answering after its time to first token.
    DirectPaced,
    /// As `Gateway`, the model answering after its time to first token.
    GatewayPaced,
}

impl Route {
    /// The row's name.
    pub(super) fn name(self) -> &'static str {
        match self {
            Route::Direct => "direct",
            Route::Gateway => "gateway",
            Route::DirectPaced => "direct~",
            Route::GatewayPaced => "gateway~",
        }
    }

    /// The direct route and the gateway route, paced or not.
    pub(super) fn pair(paced: bool) -> [Route; 2] {
        if paced {
            [Route::DirectPaced, Route::GatewayPaced]
        } else {
            [Route::Direct, Route::Gateway]
        }
    }

    /// Whether the calls go through the gateway.
    pub(super) fn through_gateway(self) -> bool {
        matches!(self, Route::Gateway | Route::GatewayPaced)
    }

    /// Whether the model answers after its time to first token.
    pub(super) fn paced(self) -> bool {
        matches!(self, Route::DirectPaced | Route::GatewayPaced)
    }

    /// The direct route a gateway route is set against (paced against paced); `None` for a
    /// direct route.
    pub(super) fn against(self) -> Option<Route> {
        match self {
            Route::Gateway => Some(Route::Direct),
            Route::GatewayPaced => Some(Route::DirectPaced),
            Route::Direct | Route::DirectPaced => None,
        }
    }
}

/// What one step sends.
pub(super) struct Plan<'a> {
    pub http: &'a Client,
    pub route: Route,
    pub endpoint: &'a Endpoint,
    pub body: &'a Bytes,
    /// Frames of the whole answer (from the reference call).
    pub frames: usize,
    pub clients: usize,
    pub calls_per_client: usize,
    /// `handoff serve`'s pid.
    pub handoff: u32,
    /// How far apart the clients' first measured calls start (client `i` waits `i` times it).
    pub stagger: Duration,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub(super) struct Row {
    pub route: Route,
    pub clients: usize,
    /// Calls answered whole in the window.
    pub calls: usize,
    /// Calls that failed, the unmeasured first ones included.
    pub errors: u64,
    pub first_error: Option<String>,
    /// Latency to the answer's last byte, µs.
    pub latency: Latency,
    pub per_sec: f64,
    /// `handoff serve`'s CPU per call, µs.
    pub handoff_cpu_us: f64,
    /// This process's CPU per call (client and scripted model), µs.
    pub bench_cpu_us: f64,
}

/// Runs one step.
pub(super) async fn run(plan: &Plan<'_>) -> Row {
    let (http, endpoint, body) = (plan.http.clone(), plan.endpoint.clone(), plan.body.clone());
    let (frames, calls) = (plan.frames, plan.calls_per_client);
    let pids = [plan.handoff, std::process::id()];
    let (stagger, next_client) = (plan.stagger, Arc::new(AtomicU32::new(0)));
    let (tallies, windows) = measured_all(&pids, SETTLE, plan.clients, move |gate| {
        let (http, endpoint, body) = (http.clone(), endpoint.clone(), body.clone());
        let offset = stagger * next_client.fetch_add(1, Ordering::Relaxed);
        async move {
            let mut tally = Tally::default();
            // Fully checked, as the reference was.
            let first = call::send(&http, &endpoint, &body).await;
            match first.and_then(|answer| call::check(&answer)) {
                Ok(n) if n == frames => {}
                Ok(n) => tally.error(format!("{n} frames where the reference had {frames}")),
                Err(error) => tally.error(error),
            }
            gate.pass().await;
            // Independent agents' calls are not in step: clients that all wait the same time to
            // first token would otherwise answer all at once, a burst no real load makes.
            tokio::time::sleep(offset).await;
            for _ in 0..calls {
                let at = Instant::now();
                let answer = call::send(&http, &endpoint, &body).await;
                match answer.and_then(|answer| call::whole(&answer, frames)) {
                    Ok(()) => tally.latencies.push(micros_since(at)),
                    Err(error) => tally.error(error),
                }
            }
            tally
        }
    })
    .await;
    let tally = Tally::merge(tallies);
    let calls = tally.latencies.len();
    let [handoff, bench] = [0, 1].map(|i| windows.get(i).copied().unwrap_or_default());
    Row {
        route: plan.route,
        clients: plan.clients,
        calls,
        errors: tally.errors,
        first_error: tally.first_error,
        latency: Latency::of(tally.latencies),
        per_sec: if handoff.secs > 0.0 {
            calls as f64 / handoff.secs
        } else {
            0.0
        },
        handoff_cpu_us: handoff.cpu_us_per(calls),
        bench_cpu_us: bench.cpu_us_per(calls),
    }
}

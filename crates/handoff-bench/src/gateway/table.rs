//! The gateway bench's table: a row per route and concurrency, then what the gateway adds at
//! each concurrency against the direct calls of the same run and against the agent baseline's
//! CPU per call, next to the targets.

use super::{call::TTFT_MS, step::Row};
use crate::report;

/// The header line.
pub(super) fn header() -> String {
    format!(
        "{:<8} {:>4} {:>7} {:>6} {:>9} {:>8} {:>8} {:>11} {:>9}",
        "route", "N", "calls", "errors", "calls/s", "p50 ms", "p95 ms", "handoff µs", "bench µs"
    )
}

/// One row.
pub(super) fn line(row: &Row) -> String {
    format!(
        "{:<8} {:>4} {:>7} {:>6} {:>9.0} {:>8.3} {:>8.3} {:>11.1} {:>9.1}",
        row.route.name(),
        row.clients,
        row.calls,
        row.errors,
        row.per_sec,
        row.latency.p50 / 1e3,
        row.latency.p95 / 1e3,
        row.handoff_cpu_us,
        row.bench_cpu_us
    )
}

/// Prints `row`, and its first error if it had one.
#[allow(clippy::print_stdout)]
pub(super) fn print(row: &Row) {
    println!("{}", line(row));
    if let Some(error) = &row.first_error {
        let error: String = error.chars().take(300).collect();
        println!("{:<8} first error: {error}", "");
    }
}

/// The gateway against the direct calls at one concurrency, both paced or both not.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Added {
    pub clients: usize,
    /// The model answered after its time to first token.
    pub paced: bool,
    /// Gateway p50 minus direct p50, ms.
    pub p50_ms: f64,
    /// `handoff serve`'s CPU per gateway call as a percentage of this process's CPU per direct
    /// call (client and model); `None` when the direct CPU read as zero.
    pub cpu_pct: Option<f64>,
    /// `handoff serve`'s CPU per gateway call as a percentage of the agent's own CPU per call;
    /// `None` without an agent baseline.
    pub agent_pct: Option<f64>,
}

/// What the gateway adds at each concurrency that has both rows, paced rows set against paced
/// rows only; `agent_us` is the agent's own CPU per call, µs.
pub(super) fn added(rows: &[Row], agent_us: Option<f64>) -> Vec<Added> {
    rows.iter()
        .filter_map(|gateway| {
            let against = gateway.route.against()?;
            let direct = rows
                .iter()
                .find(|r| r.route == against && r.clients == gateway.clients)?;
            Some(Added {
                clients: gateway.clients,
                paced: gateway.route.paced(),
                p50_ms: (gateway.latency.p50 - direct.latency.p50) / 1e3,
                cpu_pct: (direct.bench_cpu_us > 0.0)
                    .then(|| gateway.handoff_cpu_us / direct.bench_cpu_us * 100.0),
                agent_pct: agent_us
                    .filter(|&us| us > 0.0)
                    .map(|us| gateway.handoff_cpu_us / us * 100.0),
            })
        })
        .collect()
}

/// The comparison lines and the targets; the agent's only with its CPU per call (`agent_us`).
/// A paced pair gives only its added p50: its CPU columns hold the idle wait for the model too.
#[allow(clippy::print_stdout)]
pub(super) fn summary(rows: &[Row], agent_us: Option<f64>) {
    println!();
    for row in added(rows, agent_us) {
        if row.paced {
            paced(&row);
        } else {
            saturated(&row);
        }
    }
}

/// The lines of a pair whose model answers at once: the machine is busy with the calls alone.
fn saturated(row: &Added) {
    let pct = row
        .cpu_pct
        .map_or_else(|| "-".to_owned(), |p| format!("{p:.1} %"));
    added_p50(&format!("N={}", row.clients), row);
    report::target(
        &format!(
            "gateway: CPU per call / the bench's client+model, N={}",
            row.clients
        ),
        pct,
        "<= 5 %",
        row.cpu_pct.is_some_and(|p| p <= 5.0),
    );
    if let Some(pct) = row.agent_pct {
        report::target(
            &format!(
                "gateway: CPU per call / the agent's own (opencode), N={}",
                row.clients
            ),
            format!("{pct:.2} %"),
            "<= 5 %",
            pct <= 5.0,
        );
    }
}

/// The line of a pair whose model answers after its time to first token.
fn paced(row: &Added) {
    let which = format!("provider-paced (TTFT {TTFT_MS} ms), N={}", row.clients);
    added_p50(&which, row);
}

/// The added-p50 line of `row`, `which` saying its pair, against the 2 ms target.
fn added_p50(which: &str, row: &Added) {
    report::target(
        &format!("gateway: added p50 per call, {which}"),
        format!("{:.3} ms", row.p50_ms),
        "<= 2 ms",
        row.p50_ms <= 2.0,
    );
}

/// The legend under the table; `paced_calls` per client in each paced step.
#[allow(clippy::print_stdout)]
pub(super) fn legend(frames: usize, calls: usize, paced_calls: usize) {
    println!(
        "each call: one streamed Chat Completions answer of {frames} SSE frames, timed to its last byte; {calls} calls a step, split over N clients; direct = to the scripted model with the provider key, gateway = through handoff serve's /gateway with a task's token; handoff µs = handoff serve's CPU per call, bench µs = this process's (the client and the scripted model) per call"
    );
    println!(
        "direct~ / gateway~ = provider-paced: the same answer, sent after a time to first token of {TTFT_MS} ms (nothing, not even the headers, before it), {paced_calls} calls per client, the clients starting {TTFT_MS}/N ms apart (as independent agents, not all in step), so the machine is not saturated and the added p50 is the gateway's own"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{gateway::step::Route, measure::Latency};

    fn row(route: Route, clients: usize, p50_us: f64, handoff: f64, bench: f64) -> Row {
        Row {
            route,
            clients,
            calls: 100,
            errors: 0,
            first_error: None,
            latency: Latency {
                p50: p50_us,
                p95: p50_us * 2.0,
                ..Latency::default()
            },
            per_sec: 1234.4,
            handoff_cpu_us: handoff,
            bench_cpu_us: bench,
        }
    }

    #[test]
    fn the_gateway_is_set_against_the_direct_row_of_its_concurrency() {
        let rows = [
            row(Route::Direct, 1, 300.0, 1.0, 200.0),
            row(Route::Gateway, 1, 800.0, 50.0, 210.0),
            row(Route::Direct, 16, 2000.0, 0.5, 0.0),
            row(Route::Gateway, 16, 4500.0, 60.0, 220.0),
            row(Route::Gateway, 64, 9000.0, 60.0, 220.0),
        ];
        let added = added(&rows, Some(1000.0));
        assert_eq!(
            added,
            [
                Added {
                    clients: 1,
                    paced: false,
                    p50_ms: 0.5,
                    cpu_pct: Some(25.0),
                    agent_pct: Some(5.0)
                },
                Added {
                    clients: 16,
                    paced: false,
                    p50_ms: 2.5,
                    cpu_pct: None,
                    agent_pct: Some(6.0)
                }
            ]
        );
        assert!(
            super::added(&rows, None)
                .iter()
                .all(|a| a.agent_pct.is_none())
        );
    }

    #[test]
    fn paced_rows_are_set_against_paced_rows_only() {
        let rows = [
            row(Route::Direct, 1, 300.0, 1.0, 200.0),
            row(Route::Gateway, 1, 800.0, 50.0, 210.0),
            row(Route::Direct, 16, 2000.0, 1.0, 200.0),
            row(Route::Gateway, 16, 4500.0, 60.0, 220.0),
            row(Route::DirectPaced, 1, 200_300.0, 1.0, 100.0),
            row(Route::GatewayPaced, 1, 200_700.0, 50.0, 110.0),
            // No paced direct row at N=16: the plain one must not stand in for it.
            row(Route::GatewayPaced, 16, 201_000.0, 60.0, 220.0),
        ];
        let added = added(&rows, None);
        let pairs: Vec<(usize, bool)> = added.iter().map(|a| (a.clients, a.paced)).collect();
        assert_eq!(pairs, [(1, false), (16, false), (1, true)]);
        assert_eq!((added[0].p50_ms, added[1].p50_ms), (0.5, 2.5));
        assert!((added[2].p50_ms - 0.4).abs() < 1e-9, "{:?}", added[2]);
        assert_eq!(added[2].cpu_pct, Some(50.0));
    }

    #[test]
    fn a_row_lines_up_under_the_header() {
        let shown = line(&row(Route::Gateway, 16, 812.0, 61.24, 220.0));
        let cells: Vec<&str> = shown.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "gateway", "16", "100", "0", "1234", "0.812", "1.624", "61.2", "220.0"
            ]
        );
        assert_eq!(shown.chars().count(), header().chars().count());
        let paced = line(&row(Route::GatewayPaced, 16, 200_812.0, 61.24, 220.0));
        assert!(paced.starts_with("gateway~ "), "{paced}");
        assert_eq!(paced.chars().count(), header().chars().count());
    }
}

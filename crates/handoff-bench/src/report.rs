//! Printing: one table, every Handoff row beside the floor row of the same concurrency.

use crate::load::LoadResult;

fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// `ours / base` as `2.5x`; `-` without a base.
pub(crate) fn ratio(ours: f64, base: f64) -> String {
    if base > 0.0 {
        format!("{:.1}x", ours / base)
    } else {
        "-".to_owned()
    }
}

/// The table header.
pub(crate) fn header() {
    println!(
        "{:<16} {:<9} {:>5} {:>9} {:>8} {:>8} {:>8} {:>8} {:>6} {:>8} {:>7} {:>9} {:>9} {:>9}",
        "op",
        "era",
        "N",
        "req/s",
        "p50 ms",
        "p90 ms",
        "p99 ms",
        "max ms",
        "errors",
        "cpu µs",
        "RSS MB",
        "p50/floor",
        "rps/floor",
        "cpu/floor"
    );
}

/// One row; `floor` is the floor's row for the same work at the same concurrency.
pub(crate) fn row(result: &LoadResult, floor: Option<&LoadResult>) {
    let [p50_ratio, rps_ratio, cpu_ratio] = match floor {
        Some(f) => [
            ratio(result.latency.p50, f.latency.p50),
            ratio(result.per_sec, f.per_sec),
            ratio(result.cpu_us, f.cpu_us),
        ],
        None => ["-".to_owned(), "-".to_owned(), "-".to_owned()],
    };
    println!(
        "{:<16} {:<9} {:>5} {:>9.0} {:>8.3} {:>8.3} {:>8.3} {:>8.3} {:>6} {:>8.1} {:>7.1} {:>9} {:>9} {:>9}",
        result.name,
        result.era.name(),
        result.clients,
        result.per_sec,
        result.latency.p50 / 1e3,
        result.latency.p90 / 1e3,
        result.latency.p99 / 1e3,
        result.latency.max / 1e3,
        result.errors,
        result.cpu_us,
        mib(result.rss_after),
        p50_ratio,
        rps_ratio,
        cpu_ratio
    );
    if let Some(error) = &result.first_error {
        println!(
            "{:<16} first error: {}",
            "",
            error.chars().take(200).collect::<String>()
        );
    }
}

/// A labelled figure with its target.
pub(crate) fn target(what: &str, value: String, target: &str, met: bool) {
    println!(
        "{:<52} {:>14}   target {:<14} {}",
        what,
        value,
        target,
        if met { "met" } else { "MISSED" }
    );
}

/// Megabytes, for targets.
pub(crate) fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", mib(bytes))
}

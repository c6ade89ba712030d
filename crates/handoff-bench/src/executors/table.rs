//! The executor benchmark's table: one row per measured variant, p50s next to the bare CLI's
//! and their ratios.

use super::Sample;

/// One variant's measurements.
pub(super) struct Row {
    /// The variant's name.
    pub label: String,
    /// The isolation level the agent's process started at (`-` when Handoff started none).
    pub isolation: String,
    /// Through Handoff.
    pub handoff: Vec<Sample>,
    /// The agent's own CLI.
    pub bare: Vec<Sample>,
}

/// The median of one interval.
pub(super) fn p50(samples: &[Sample], pick: fn(&Sample) -> f64) -> f64 {
    let mut values: Vec<f64> = samples.iter().map(pick).collect();
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(f64::NAN)
}

/// `handoff / bare`, shown as `3.5x` (`-` when the bare figure is not positive).
fn ratio(handoff: f64, bare: f64) -> String {
    if bare > 0.0 && handoff.is_finite() {
        format!("{:.2}x", handoff / bare)
    } else {
        "-".to_owned()
    }
}

const HEADER: [&str; 10] = [
    "executor",
    "isolation",
    "handoff start",
    "bare start",
    "start x",
    "handoff tail",
    "bare tail",
    "handoff total",
    "bare total",
    "total x",
];

fn line(cells: &[String; 10]) -> String {
    let [label, isolation, rest @ ..] = cells;
    let widths = [14, 11, 8, 13, 10, 14, 11, 8];
    let mut out = format!("{label:24} {isolation:9}");
    for (cell, width) in rest.iter().zip(widths) {
        out.push_str(&format!(" {cell:>width$}"));
    }
    out
}

/// The table's header line.
pub(super) fn header() -> String {
    line(&HEADER.map(str::to_owned))
}

/// One row: p50s in whole milliseconds, ratios to the bare CLI.
pub(super) fn format_row(row: &Row) -> String {
    let ms = |samples: &[Sample], pick: fn(&Sample) -> f64| format!("{:.0}", p50(samples, pick));
    let both = |pick: fn(&Sample) -> f64| (p50(&row.handoff, pick), p50(&row.bare, pick));
    let (start, bare_start) = both(|s| s.start);
    let (total, bare_total) = both(|s| s.total);
    line(&[
        row.label.clone(),
        row.isolation.clone(),
        ms(&row.handoff, |s| s.start),
        ms(&row.bare, |s| s.start),
        ratio(start, bare_start),
        ms(&row.handoff, |s| s.tail),
        ms(&row.bare, |s| s.tail),
        ms(&row.handoff, |s| s.total),
        ms(&row.bare, |s| s.total),
        ratio(total, bare_total),
    ])
}

/// Prints the table.
#[allow(clippy::print_stdout)]
pub(super) fn print(rows: &[Row], tasks: usize) {
    println!("\nexecutor overhead, p50 over {tasks} tasks (ms); bare = the agent's own CLI");
    println!("{}", header());
    for row in rows {
        println!("{}", format_row(row));
    }
    println!(
        "start: execute_task (bare: process spawn) → first model request; tail: the agent's last event (bare: last model request) → completed (bare: process exit); x = handoff / bare"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(start: f64, tail: f64, total: f64) -> Sample {
        Sample { start, tail, total }
    }

    #[test]
    fn a_row_shows_p50s_and_their_ratios_under_the_header() {
        let row = Row {
            label: "opencode-acp pool 1".to_owned(),
            isolation: "sandbox".to_owned(),
            handoff: vec![
                sample(900.0, 80.0, 1500.0),
                sample(1000.0, 90.0, 1600.0),
                sample(5000.0, 70.0, 9000.0),
            ],
            bare: vec![sample(3000.0, 150.0, 3200.0), sample(3100.0, 160.0, 3400.0)],
        };
        let shown = format_row(&row);
        let cells: Vec<&str> = shown.split_whitespace().collect();
        assert_eq!(
            cells,
            [
                "opencode-acp",
                "pool",
                "1",
                "sandbox",
                "1000",
                "3100",
                "0.32x",
                "80",
                "160",
                "1600",
                "3400",
                "0.47x"
            ]
        );
        // Every column ends where its header does.
        let header = header();
        assert_eq!(shown.len(), header.len());
        assert!(header.ends_with("total x") && shown.ends_with("0.47x"));
        let at = header.find("bare start").unwrap() + "bare start".len();
        assert_eq!(&shown[at - 4..at], "3100");
    }

    #[test]
    fn ratios_without_a_baseline_are_a_dash() {
        assert_eq!(ratio(881.0, 3124.0), "0.28x");
        assert_eq!(ratio(550.0, 0.0), "-");
        assert_eq!(ratio(f64::NAN, 10.0), "-");
        assert!(p50(&[], |s| s.start).is_nan());
    }
}

//! How client commands print: JSON documents for `--json`, otherwise plain lines and tables
//! (the same on a terminal and in a pipe; only the live progress line needs a terminal).

use std::time::{SystemTime, UNIX_EPOCH};

use handoff_protocol::{EventView, TaskView};
use serde::Serialize;

use super::{ClientError, terminal::visible};

/// Prints `value` as one JSON document.
pub fn print_json(value: &impl Serialize) -> Result<(), ClientError> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| ClientError::BadReply(format!("cannot print JSON: {e}")))?;
    super::terminal::print_line(&super::terminal::json_visible(&text));
    Ok(())
}

/// Now, in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// A duration for people: `850ms`, `12s`, `1m 52s`, `2h 03m`.
pub fn duration(ms: i64) -> String {
    let ms = ms.max(0);
    let secs = ms / 1000;
    match secs {
        0 => format!("{ms}ms"),
        1..=59 => format!("{secs}s"),
        60..=3599 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, (secs % 3600) / 60),
    }
}

/// How long ago `at_ms` was: `5s ago`, `3m 10s ago`.
pub fn ago(at_ms: i64) -> String {
    format!("{} ago", duration(now_ms() - at_ms))
}

/// The first line of `text`, at most `max` characters (an ellipsis marks a cut).
pub fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or_default();
    let cut = line.chars().count() > max || text.lines().nth(1).is_some();
    let mut shown: String = line.chars().take(max).collect();
    if cut {
        shown.push('…');
    }
    shown
}

/// One event as a log line: time since the task was submitted, kind, message (further lines
/// of the message indented below it).
pub fn event_line(event: &EventView, origin_ms: i64) -> String {
    let offset = (event.at_ms - origin_ms).max(0) / 1000;
    let head = format!(
        "{:>3}:{:02} {:<8} ",
        offset / 60,
        offset % 60,
        event.kind.as_str()
    );
    let indent = " ".repeat(head.chars().count());
    let mut lines = event.message.lines();
    let mut out = format!("{head}{}", lines.next().unwrap_or_default());
    for line in lines {
        out.push('\n');
        out.push_str(&indent);
        out.push_str(line);
    }
    out
}

/// The one-line state of a task: `task_… completed in 1m 52s` / `… failed after 3s: why`.
pub fn outcome_line(task: &TaskView) -> String {
    let took = task.duration_ms.map(duration).unwrap_or_default();
    let mut line = match (task.status.is_terminal(), took.is_empty()) {
        (true, false) if task.status == handoff_protocol::TaskStatus::Completed => {
            format!("{} completed in {took}", task.task_id)
        }
        (true, false) => format!("{} {} after {took}", task.task_id, task.status),
        _ => format!("{} {}", task.task_id, task.status),
    };
    if let Some(error) = &task.error {
        line.push_str(": ");
        line.push_str(error);
    }
    line
}

/// Aligns `rows` under `headers`; the last column is not padded.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    // Escaped before measuring, so a control character in a cell cannot skew the columns.
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|c| visible(c).into_owned()).collect())
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let last = cells.len().saturating_sub(1);
        let padded: Vec<String> = cells
            .iter()
            .enumerate()
            .map(|(i, c)| {
                if i == last {
                    (*c).to_owned()
                } else {
                    format!("{c:<width$}", width = widths[i])
                }
            })
            .collect();
        padded.join("  ").trim_end().to_owned()
    };
    let mut out = vec![line(headers.to_vec())];
    out.extend(
        rows.iter()
            .map(|r| line(r.iter().map(String::as_str).collect())),
    );
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use handoff_protocol::EventKind;
    use serde_json::json;

    use super::*;

    #[test]
    fn durations_read_like_a_person_would_say_them() {
        assert_eq!(duration(850), "850ms");
        assert_eq!(duration(12_400), "12s");
        assert_eq!(duration(112_000), "1m 52s");
        assert_eq!(duration(7_380_000), "2h 03m");
        assert_eq!(duration(-5), "0ms");
    }

    #[test]
    fn events_are_one_line_with_continuations_indented() {
        let event = EventView {
            seq: 3,
            at_ms: 1_072_000,
            kind: EventKind::Text,
            message: "first\nsecond".to_owned(),
            data: json!({}),
        };
        assert_eq!(
            event_line(&event, 1_000_000),
            "  1:12 text     first\n                second"
        );
    }

    #[test]
    fn tables_align_all_but_the_last_column() {
        let rows = vec![
            vec!["task_a".to_owned(), "running".to_owned(), "x".to_owned()],
            vec![
                "t".to_owned(),
                "completed".to_owned(),
                "longer text".to_owned(),
            ],
        ];
        assert_eq!(
            table(&["ID", "STATUS", "WHAT"], &rows),
            "ID      STATUS     WHAT\ntask_a  running    x\nt       completed  longer text"
        );
        assert_eq!(one_line("abc\ndef", 10), "abc…");
        assert_eq!(one_line("abcdef", 3), "abc…");
        assert_eq!(one_line("abc", 3), "abc");
    }
}

//! The hard cap: Letta accepts values longer than a block's limit, so Handoff makes sure it
//! never sends one. Events go first (oldest first, counted by the pruned marker), then the
//! outputs list, the evaluator's detail, pending questions, and finally the summary shrinks.

use serde_json::json;

use super::{WorkspaceValue, clip_chars};

/// The serialized value, at most `limit` characters long (`limit` ≥ the configured minimum).
pub fn fit_value(mut value: WorkspaceValue, limit: usize) -> String {
    loop {
        let text = render(&value);
        if text.chars().count() <= limit {
            return text;
        }
        if value.prune_oldest() {
            continue;
        }
        if value.artifacts_index.pop().is_some() {
            continue;
        }
        if value.evaluator.take().is_some() {
            continue;
        }
        if value.pending_input.len() > 1 {
            value.pending_input.truncate(1);
            continue;
        }
        if value.pending_input.pop().is_some() {
            continue;
        }
        let chars = value.summary.chars().count();
        if chars > 40 {
            value.summary = clip_chars(&value.summary, chars / 2);
            continue;
        }
        return minimal(&value, limit);
    }
}

fn render(value: &WorkspaceValue) -> String {
    // Serializing plain strings, numbers and lists cannot fail.
    serde_json::to_string(value).unwrap_or_default()
}

/// The last resort for a limit too small for anything else.
fn minimal(value: &WorkspaceValue, limit: usize) -> String {
    let text = json!({
        "version": value.version,
        "task_id": value.task_id,
        "status": value.status,
        "round": value.round,
        "updated_at": value.updated_at,
    })
    .to_string();
    if text.chars().count() <= limit {
        text
    } else {
        json!({ "task_id": value.task_id }).to_string()
    }
}

#[cfg(test)]
mod tests {
    use handoff_task::TaskStatus;
    use serde_json::Value;

    use super::*;
    use handoff_integration::PendingRequest;

    use crate::fixtures::snapshot;

    fn parsed(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn a_small_value_is_left_whole() {
        let value = WorkspaceValue::from_snapshot(&snapshot(TaskStatus::Running, "fix it", 3));
        let text = fit_value(value, 6_000);
        let v = parsed(&text);
        assert_eq!(v["version"], 1);
        assert_eq!(v["status"], "running");
        assert_eq!(v["recent_events"].as_array().unwrap().len(), 3);
        assert_eq!(v["artifacts_index"][0]["name"], "output");
        assert_eq!(v["artifacts_index"][0]["size"], 5_000_000);
    }

    #[test]
    fn events_are_pruned_oldest_first_with_a_marker() {
        let value = WorkspaceValue::from_snapshot(&snapshot(TaskStatus::Running, "fix it", 5_000));
        let text = fit_value(value, 2_000);
        assert!(text.chars().count() <= 2_000, "{}", text.len());
        let v = parsed(&text);
        let events = v["recent_events"].as_array().unwrap();
        let pruned = events[0]["pruned"].as_u64().unwrap();
        assert!(
            events[0]["note"]
                .as_str()
                .unwrap()
                .contains("get_task_history")
        );
        // What is shown is the newest, in order, and the marker counts everything else.
        let seqs: Vec<i64> = events[1..]
            .iter()
            .map(|e| e["seq"].as_i64().unwrap())
            .collect();
        assert_eq!(*seqs.last().unwrap(), 5_000);
        assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
        assert_eq!(pruned + seqs.len() as u64, 5_000);
    }

    #[test]
    fn every_limit_is_respected_whatever_the_content() {
        let huge = "ü".repeat(1 << 20);
        for status in [
            TaskStatus::Running,
            TaskStatus::Failed,
            TaskStatus::Completed,
        ] {
            let mut s = snapshot(status, &huge, 100_000);
            s.task.error = Some(huge.clone());
            s.pending_input = (0..50)
                .map(|i| PendingRequest {
                    id: format!("k{i}"),
                    kind: "question".into(),
                    title: huge.clone(),
                })
                .collect();
            s.completion = Some(serde_json::json!({"status": "not_done", "reason": huge}));
            for limit in [1_000, 1_500, 2_000, 4_000, 6_000, 50_000] {
                let text = fit_value(WorkspaceValue::from_snapshot(&s), limit);
                assert!(
                    text.chars().count() <= limit,
                    "{status:?} {limit}: {}",
                    text.len()
                );
                let v = parsed(&text);
                assert_eq!(v["task_id"], "task_abcdefghijklmnopqrstuvwxyz");
                assert_eq!(v["status"], status.as_str());
            }
        }
    }

    #[test]
    fn a_long_description_is_clipped_in_the_summary() {
        let description = format!("Fix the failing test\n{}", "details ".repeat(100_000));
        let value =
            WorkspaceValue::from_snapshot(&snapshot(TaskStatus::Completed, &description, 2));
        let v = parsed(&fit_value(value, 6_000));
        let summary = v["summary"].as_str().unwrap();
        assert!(
            summary.starts_with("Fix the failing test — Completed in 12.4 s"),
            "{summary}"
        );
        assert!(!summary.contains("details"));
    }
}

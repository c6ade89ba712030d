//! What the evaluator looks at after a turn: the verify commands' results (run confined like
//! the task), the diff against Handoff's own baseline, the executor's last message, todos and
//! token usage from the event stream, and the stuck detector over its steps.

use std::path::Path;

use handoff_completion::{
    checks::CheckInput,
    cutoff::{self, AnswerRule},
    stuck::{self, Step},
};
use handoff_task::{EventKind, TaskEvent};
use serde_json::Value;

use crate::{EngineError, driver::Driver, plan::CompletionPlan};

/// Events looked at (the most recent ones).
const EVENT_WINDOW: u32 = 2000;
/// Most bytes of the patch shown to the judge.
const PATCH_MAX: usize = 20 * 1024;

/// The evidence of one cycle.
pub(crate) struct Evidence {
    pub checks: CheckInput,
    pub diff: String,
    pub final_message: String,
    pub todos: Vec<String>,
    pub todo_counts: (usize, usize),
    pub executor_tokens: u64,
    pub executor_cost: f64,
}

impl Evidence {
    /// `git diff --stat`-like lines: each file with its added and removed lines.
    pub fn diff_stat(&self) -> String {
        let mut lines = Vec::new();
        let (mut file, mut added, mut removed) = (None::<String>, 0, 0);
        let mut flush = |file: &mut Option<String>, added: &mut usize, removed: &mut usize| {
            if let Some(name) = file.take() {
                lines.push(format!("{name} | +{added} -{removed}"));
            }
            *added = 0;
            *removed = 0;
        };
        for line in self.diff.lines() {
            if let Some(rest) = line.strip_prefix("diff --git a/") {
                flush(&mut file, &mut added, &mut removed);
                file = Some(rest.split(" b/").next().unwrap_or(rest).to_owned());
            } else if line.starts_with('+') && !line.starts_with("+++") {
                added += 1;
            } else if line.starts_with('-') && !line.starts_with("---") {
                removed += 1;
            }
        }
        flush(&mut file, &mut added, &mut removed);
        lines.join("\n")
    }

    /// The patch, cut for the judge.
    pub fn patch(&self) -> String {
        if self.diff.len() <= PATCH_MAX {
            return self.diff.clone();
        }
        let mut end = PATCH_MAX;
        while !self.diff.is_char_boundary(end) {
            end -= 1;
        }
        format!(
            "{}\n… ({} more bytes)",
            &self.diff[..end],
            self.diff.len() - end
        )
    }

    /// A stable hash of the diff (for the stall counter).
    pub fn diff_hash(&self) -> u64 {
        self.diff.bytes().fold(0xcbf2_9ce4_8422_2325, |h: u64, b| {
            (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
        })
    }
}

/// Gathers the evidence for the driven task now, under `settings`; `judged`: a judge will weigh
/// what the checks flag.
pub(crate) async fn gather(
    d: &Driver<'_>,
    settings: &CompletionPlan,
    judged: bool,
) -> Result<Evidence, EngineError> {
    let (inner, task) = (d.inner, d.task);
    let workdir = Path::new(&task.workdir);
    // Before the commands run: what the coder left, not what a check may rewrite.
    let protected_changes = super::integrity::protected_changes(inner, task, settings).await;
    let test_changes = super::tests_changed::test_changes(inner, task).await;
    let commands = super::integrity::run_commands(d, settings).await;
    let diff = inner
        .snapshots
        .diff(&task.id, workdir, None)
        .await
        .ok()
        .flatten()
        .unwrap_or_default();
    let events = inner.store.recent_events(&task.id, EVENT_WINDOW).await?;
    let final_message = events
        .iter()
        .rev()
        .find(|e| e.kind == EventKind::Text)
        .map(|e| e.message.clone())
        .unwrap_or_default();
    let (todos, open, counts) = todos(&events);
    let (executor_tokens, executor_cost) = usage(&events);
    let steps = steps(&events);
    let diff_empty = diff.trim().is_empty();
    let mut turn = super::turn::signals(&events);
    turn.diff_empty = diff_empty;
    turn.answer = if settings.answer_only {
        AnswerRule::AnswerOnly
    } else if judged {
        AnswerRule::Judged
    } else {
        AnswerRule::Unsaid
    };
    Ok(Evidence {
        checks: CheckInput {
            commands,
            requires_changes: settings.requires_changes,
            diff_empty,
            open_todos: open,
            stuck: stuck::detect(&steps).map(|rule| rule.describe().to_owned()),
            cut_off: cutoff::detect(&turn),
            protected_changes,
            test_changes,
            changes_expected: settings.protected_changes_expected,
            judged,
            answer_note: cutoff::answer_note(&turn),
            tests_before: super::integrity::tests_before(inner, task).await,
        },
        diff,
        final_message,
        todos,
        todo_counts: counts,
        executor_tokens,
        executor_cost,
    })
}

/// The last todo list: every item with its state, the open ones, and (done, total).
fn todos(events: &[TaskEvent]) -> (Vec<String>, Vec<String>, (usize, usize)) {
    let Some(list) = events
        .iter()
        .rev()
        .find_map(|e| e.data.get("todos").and_then(Value::as_array))
    else {
        return (Vec::new(), Vec::new(), (0, 0));
    };
    let mut all = Vec::new();
    let mut open = Vec::new();
    let mut done = 0;
    for item in list {
        let content = item["content"].as_str().unwrap_or_default().to_owned();
        let status = item["status"].as_str().unwrap_or("pending");
        all.push(format!("[{status}] {content}"));
        match status {
            "completed" => done += 1,
            "cancelled" => {}
            _ => open.push(content),
        }
    }
    let total = list.len();
    (all, open, (done, total))
}

/// Tokens and cost the executor reported.
fn usage(events: &[TaskEvent]) -> (u64, f64) {
    let mut usage = crate::usage::Usage::default();
    for event in events {
        usage.add(&event.data);
    }
    (usage.tokens, usage.cost_usd)
}

/// The executor's steps for the stuck detector: finished tool calls and its messages.
fn steps(events: &[TaskEvent]) -> Vec<Step> {
    events
        .iter()
        .filter_map(|e| match e.kind {
            EventKind::Tool => {
                let status = e.data["status"].as_str()?;
                if status != "completed" && status != "error" {
                    return None;
                }
                let tool = e.data["tool"].as_str().unwrap_or_default();
                let output = e.data["output"].as_str().unwrap_or(&e.message);
                Some(Step::action(
                    tool,
                    &e.data["input"],
                    output,
                    status == "error",
                ))
            }
            EventKind::Text => Some(Step::message(&e.message)),
            _ => None,
        })
        .collect()
}

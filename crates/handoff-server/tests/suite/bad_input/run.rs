//! Runs a corpus against the fixture in bounded concurrent batches and reports every failure:
//! each case must be refused clearly without echo, the server must answer a ping after it, and
//! no batch may change the number of tasks.

use std::collections::BTreeMap;

use futures::{StreamExt, stream};

use super::{
    case::{Case, Send, judge},
    fixture::{Fixture, excerpt},
    marker::Marker,
    raw::exchange,
};

/// Cases in flight at once.
const CONCURRENCY: usize = 8;
/// Cases between two task counts.
const BATCH: usize = 64;

/// One failed case (or batch).
#[derive(Debug)]
struct Failure {
    group: String,
    name: String,
    why: String,
    answer: String,
}

/// What a corpus run found.
#[derive(Debug, Default)]
pub struct Report {
    total: usize,
    /// Cases per group.
    groups: BTreeMap<String, usize>,
    failures: Vec<Failure>,
}

/// Sends one case and judges the answer and the server's health after it.
async fn one(fx: &Fixture, marker: &Marker, case: &Case) -> Option<Failure> {
    let answer = match &case.send {
        Send::Post { headers, body } => fx.post(headers, body.clone()).await,
        Send::Raw(bytes) => exchange(fx.addr, bytes).await,
    };
    let (why, text) = match answer {
        Err(why) => (Some(why), String::new()),
        // The JSON-RPC message when there is one: an SSE frame's head says nothing.
        Ok(answer) => (
            judge(&case.expect, &answer, marker).err(),
            answer.message.map_or(answer.text, |m| m.to_string()),
        ),
    };
    let why = match (why, fx.alive().await) {
        (None, Ok(())) => return None,
        (Some(why), Ok(())) => why,
        (None, Err(dead)) => format!("server not alive after it: {dead}"),
        (Some(why), Err(dead)) => format!("{why}; server not alive after it: {dead}"),
    };
    Some(Failure {
        group: case.group.clone(),
        name: case.name.clone(),
        why,
        answer: excerpt(&text),
    })
}

/// Runs every case; never panics on a failed case (the report does).
pub async fn run(fx: &Fixture, marker: &Marker, cases: &[Case]) -> Report {
    let mut report = Report {
        total: cases.len(),
        ..Report::default()
    };
    for case in cases {
        *report.groups.entry(case.group.clone()).or_default() += 1;
    }
    let mut tasks = fx.task_count().await;
    for batch in cases.chunks(BATCH) {
        let failed: Vec<Failure> = stream::iter(batch)
            .map(|case| one(fx, marker, case))
            .buffer_unordered(CONCURRENCY)
            .filter_map(|f| async move { f })
            .collect()
            .await;
        report.failures.extend(failed);
        let now = fx.task_count().await;
        if now != tasks {
            let names: Vec<&str> = batch
                .iter()
                .filter(|c| c.name.contains("execute_task"))
                .map(|c| c.name.as_str())
                .take(8)
                .collect();
            report.failures.push(Failure {
                group: "tasks-created".into(),
                name: format!("batch starting at {}", batch[0].name),
                why: format!("{} task(s) created by refused input", now.abs_diff(tasks)),
                answer: format!("execute_task cases in the batch: {names:?}"),
            });
            tasks = now;
        }
    }
    if let Err(dead) = fx.session_alive().await {
        report.failures.push(Failure {
            group: "session".into(),
            name: "the shared legacy session after the corpus".into(),
            why: dead,
            answer: String::new(),
        });
    }
    report
}

impl Report {
    /// Prints the counts and every failure, then fails the test if any case failed.
    pub fn finish(self, title: &str) {
        let failed_cases = self.failures.len();
        let passed = self.total.saturating_sub(
            self.failures
                .iter()
                .filter(|f| f.group != "tasks-created" && f.group != "session")
                .count(),
        );
        eprintln!(
            "bad-input {title}: {} cases, {passed} passed, {} failed",
            self.total,
            self.total - passed
        );
        let mut by_group: BTreeMap<&str, usize> = BTreeMap::new();
        for failure in &self.failures {
            *by_group.entry(failure.group.as_str()).or_default() += 1;
        }
        let mut summary = String::new();
        for (group, failed) in &by_group {
            let total = self.groups.get(*group).copied().unwrap_or(1);
            summary.push_str(&format!("  {group}: {failed} of {total} failed\n"));
        }
        for failure in &self.failures {
            eprintln!(
                "FAIL {}: {} | {}",
                failure.name, failure.why, failure.answer
            );
        }
        assert!(
            failed_cases == 0,
            "bad-input {title}: {} of {} cases passed; failures by group:\n{summary}(each failure is listed above)",
            passed,
            self.total
        );
    }
}

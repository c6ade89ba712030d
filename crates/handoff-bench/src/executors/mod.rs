//! `handoff bench --executors`: the time Handoff adds to a real coding agent's run. Each task
//! creates a file through the agent's own tool against the scripted model server; measured per
//! task are the time from `execute_task` to the agent's first model request ("start") and from
//! the agent's last event to `completed` ("tail"), p50 over N tasks — next to the same agent
//! run bare from its own command line, in the same run. `opencode-acp` is measured twice:
//! one `opencode acp` started per task, and with a pool of one started ahead of tasks.

mod agents;
mod bare;
mod pool;
mod table;

use std::{
    path::{Path, PathBuf},
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use handoff_scripted_model::{LoggedRequest, Script, ScriptedModel};
use serde_json::{Value, json};

use self::{
    agents::{Variant, variants},
    table::Row,
};
use crate::{
    BenchError,
    client::{Era, McpClient},
    target::Target,
};

/// Which agents, and how many tasks each.
#[derive(Debug, Clone)]
pub struct ExecutorBenchOptions {
    /// Executor names (`opencode`, `opencode-acp`, `claude`, `codex-acp`).
    pub executors: Vec<String>,
    /// Tasks per executor (and bare runs per agent).
    pub tasks: usize,
}

/// One run's three intervals, in milliseconds.
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    start: f64,
    tail: f64,
    total: f64,
}

/// One task through Handoff: its intervals, and the isolation its agent process started at.
struct Measured {
    sample: Sample,
    isolation: Option<String>,
}

fn now_ms() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

/// Requests the agent working in `cwd` made, in arrival order.
fn requests_in(model: &ScriptedModel, cwd: &str) -> Vec<LoggedRequest> {
    model
        .requests()
        .into_iter()
        .filter(|r| r.cwd.as_deref() == Some(cwd))
        .collect()
}

/// Runs the executor benchmark and prints its table.
pub async fn run_executors(exe: &Path, options: &ExecutorBenchOptions) -> Result<(), BenchError> {
    // Every name is checked before the first agent starts.
    let mut all = Vec::new();
    for name in &options.executors {
        all.extend(variants(name)?);
    }
    // A row that fails does not cost the others their figures: the table shows what was
    // measured, and the run fails after it, naming each row that did not run.
    let mut rows = Vec::with_capacity(all.len());
    let mut failed = Vec::new();
    for variant in &all {
        match measure(exe, variant, options.tasks).await {
            Ok(row) => rows.push(row),
            Err(error) => failed.push(format!("{}: {error}", variant.label)),
        }
    }
    if !rows.is_empty() {
        table::print(&rows, options.tasks);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(BenchError::Setup(format!(
            "{} of {} rows not measured: {}",
            failed.len(),
            all.len(),
            failed.join("; ")
        )))
    }
}

/// One row: `variant` through Handoff, then its agent's own CLI, against one scripted model.
async fn measure(exe: &Path, variant: &Variant, tasks: usize) -> Result<Row, BenchError> {
    let script = Script::from_json(&variant.kind.script().to_string())
        .map_err(|e| BenchError::Setup(e.to_string()))?;
    let model = ScriptedModel::start(script, None)
        .await
        .map_err(|e| BenchError::Setup(format!("scripted model: {e}")))?;
    let home = tempfile::tempdir().map_err(|source| BenchError::Io {
        context: "creating a home dir",
        source,
    })?;
    let result = async {
        let (handoff, isolation) =
            through_handoff(exe, variant, &model, &home.path().join("handoff"), tasks).await?;
        let bare = bare::runs(variant.kind, &model, &home.path().join("bare"), tasks).await?;
        Ok(Row {
            label: variant.label.clone(),
            isolation: isolation.unwrap_or_else(|| "-".to_owned()),
            handoff,
            bare,
        })
    }
    .await;
    model.shutdown().await;
    result
}

async fn through_handoff(
    exe: &Path,
    variant: &Variant,
    model: &ScriptedModel,
    home: &Path,
    tasks: usize,
) -> Result<(Vec<Sample>, Option<String>), BenchError> {
    let env = agents::handoff_env(variant, model, home)?;
    let target = Target::handoff(exe, &env).await?;
    let result = async {
        let http = crate::run::http()?;
        let metrics = crate::metrics::url(&target.url);
        let pool = variant.pool.filter(|size| *size > 0);
        let mut client =
            McpClient::connect(http.clone(), &target.url, Era::Stateless, "bench-executors")
                .await
                .map_err(BenchError::Setup)?;
        let mut samples = Vec::with_capacity(tasks);
        let mut isolation = None;
        // Task 0 is warm-up: it starts OpenCode's server, or an agent's first start creates
        // its database; it is not overhead per task.
        for i in 0..=tasks {
            if let Some(size) = pool {
                // Outside the measured interval: a pooled task should find its agent waiting.
                pool::wait_full(&http, &metrics, variant.kind.executor(), size).await?;
            }
            let measured = one_task(&mut client, model, i).await?;
            isolation = measured.isolation.or(isolation);
            if i > 0 {
                samples.push(measured.sample);
            }
        }
        Ok((samples, isolation))
    }
    .await;
    target.stop().await;
    result
}

async fn one_task(
    client: &mut McpClient,
    model: &ScriptedModel,
    i: usize,
) -> Result<Measured, BenchError> {
    let submitted = now_ms();
    let task = client
        .tool(
            "execute_task",
            json!({"task_description": format!("CREATE-FILE bench {i}")}),
        )
        .await
        .map_err(BenchError::Setup)?;
    let id = task["task_id"].as_str().unwrap_or_default().to_owned();
    let status = wait_completed(client, &id).await?;
    let history = client
        .tool(
            "get_task_history",
            json!({"task_id": id, "events_limit": 1000}),
        )
        .await
        .map_err(BenchError::Setup)?;
    let events = history["events"].as_array().cloned().unwrap_or_default();
    let completed = status["completed_at_ms"].as_f64().unwrap_or(0.0);
    let cwd = status["workdir"].as_str().unwrap_or_default();
    let first_request = requests_in(model, cwd)
        .first()
        .map_or(0.0, |r| r.ts_ms as f64);
    Ok(Measured {
        sample: Sample {
            start: first_request - submitted,
            tail: completed - last_agent_event(&events),
            total: completed - submitted,
        },
        isolation: isolation(&events),
    })
}

/// Polls the task until it completes; any other end, or two minutes, fails the benchmark.
pub(crate) async fn wait_completed(client: &mut McpClient, id: &str) -> Result<Value, BenchError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        let status = client
            .tool("get_task_status", json!({"task_id": id}))
            .await
            .map_err(BenchError::Setup)?;
        match status["status"].as_str() {
            Some("completed") => return Ok(status),
            Some("failed" | "cancelled" | "timeout") => {
                return Err(BenchError::Setup(format!("bench task ended: {status}")));
            }
            _ if tokio::time::Instant::now() > deadline => {
                return Err(BenchError::Setup(format!("bench task stuck: {status}")));
            }
            _ => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

/// When the agent last spoke: the last event that is not Handoff's own bookkeeping (states,
/// notes, the completion checks' verdict, permission decisions, messages and controls).
fn last_agent_event(events: &[Value]) -> f64 {
    events
        .iter()
        .filter(|e| {
            !matches!(
                e["kind"].as_str(),
                Some("status" | "log" | "verdict" | "input" | "message" | "control")
            )
        })
        .filter_map(|e| e["at_ms"].as_f64())
        .fold(0.0, f64::max)
}

/// The isolation level of the task's agent process, from its `process started` event.
fn isolation(events: &[Value]) -> Option<String> {
    events
        .iter()
        .filter(|e| e["message"] == "process started")
        .find_map(|e| e["data"]["isolation"].as_str())
        .map(str::to_owned)
}

fn canonical(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| PathBuf::from(path))
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agents_last_word_skips_handoffs_bookkeeping() {
        let events = [
            json!({"kind": "tool", "at_ms": 100.0}),
            json!({"kind": "text", "at_ms": 250.0}),
            json!({"kind": "message", "at_ms": 260.0}),
            json!({"kind": "status", "at_ms": 300.0}),
            json!({"kind": "log", "at_ms": 400.0}),
            json!({"kind": "verdict", "at_ms": 2300.0}),
            json!({"kind": "status", "at_ms": 2301.0}),
        ];
        assert_eq!(last_agent_event(&events), 250.0);
    }

    #[test]
    fn the_isolation_comes_from_the_process_started_event() {
        let events = [
            json!({"kind": "log", "message": "queued"}),
            json!({"kind": "log", "message": "process started", "data": {"isolation": "sandbox"}}),
        ];
        assert_eq!(isolation(&events).as_deref(), Some("sandbox"));
        assert_eq!(isolation(&events[..1]), None);
    }
}

//! Task engine figures, each beside a baseline measured in the same run:
//! - submit → executor-started latency vs. spawning the same process directly;
//! - `status` latency with 10,000 tasks stored vs. a bare store read;
//! - submissions per second vs. bare store inserts;
//! - what the completion evaluator adds without a judge (policy `checks`, `requires_changes`)
//!   to submit → completed, vs. the same task with policy `none`.
//!
//! Run: `cargo bench -p handoff-engine --bench engine` (prints a table; asserts nothing).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use handoff_config::{Config, LoadOptions};
use handoff_engine::{Engine, EngineMetrics, SubmitRequest};
use handoff_runner::{CommandConfig, CommandExecutor, ExecutorRegistry, PromptVia};
use handoff_store::{ClaimLimits, InsertOutcome, SqliteStore, StatusChange, Store, TaskStore};
use handoff_task::{AgentId, EventKind, NewTask, TaskId, TaskOptions, TaskStatus, unix_millis_now};
use serde_json::json;

const LATENCY_RUNS: usize = 200;
const STORED_TASKS: usize = 10_000;
const STATUS_CALLS: usize = 2_000;
const SUBMISSIONS: usize = 2_000;
const EVALUATED_RUNS: usize = 50;
/// Prints the process's own start time in microseconds since the epoch.
const STAMP: &str = "echo $EPOCHREALTIME";

fn config(dir: &std::path::Path) -> Arc<Config> {
    let env: BTreeMap<String, String> = [
        ("HANDOFF_DATA_DIR", dir.display().to_string()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".into()),
        ("HANDOFF_MAX_QUEUED_TASKS", "100000".into()),
        ("HANDOFF_MAX_CONCURRENT_TASKS", "4".into()),
        ("HANDOFF_LOG_LEVEL", "error".into()),
        // The bench registers only the command executor; the server's default is an agent.
        ("HANDOFF_DEFAULT_EXECUTOR", "command".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    Arc::new(
        Config::load(LoadOptions {
            env,
            ..LoadOptions::default()
        })
        .unwrap(),
    )
}

async fn engine(config: &Arc<Config>, store: Arc<dyn Store>) -> Engine {
    let mut executors = ExecutorRegistry::new();
    executors.register(Arc::new(
        CommandExecutor::new(CommandConfig {
            argv: vec!["bash".into(), "-c".into(), "{prompt}".into()],
            prompt_via: PromptVia::Argument,
            messages_via_stdin: false,
            env: Vec::new(),
            message_format: Default::default(),
            isolation: None,
        })
        .unwrap(),
    ));
    Engine::start(
        config.clone(),
        store,
        executors,
        EngineMetrics::unregistered(),
    )
    .await
    .unwrap()
}

fn now_us() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
        * 1e6
}

fn stamp_us(line: &str) -> f64 {
    line.trim().replace(',', ".").parse::<f64>().unwrap() * 1e6
}

struct Summary {
    p50: f64,
    p99: f64,
}

fn summarize(mut samples: Vec<f64>) -> Summary {
    samples.sort_by(f64::total_cmp);
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Summary {
        p50: at(0.5),
        p99: at(0.99),
    }
}

fn row(what: &str, value: &Summary, baseline: &Summary, unit: &str) {
    println!(
        "{what:<44} p50 {:>9.3} {unit}  p99 {:>9.3} {unit}   baseline p50 {:>9.3} {unit}  p99 {:>9.3} {unit}   ratio(p50) {:>6.1}x",
        value.p50,
        value.p99,
        baseline.p50,
        baseline.p99,
        value.p50 / baseline.p50
    );
}

/// Submit → the executor's process is running, sequentially, one task at a time.
async fn start_latency(engine: &Engine) -> (Summary, Summary) {
    let agent = AgentId::parse("bench").unwrap();
    let mut engine_ms = Vec::with_capacity(LATENCY_RUNS);
    let mut direct_ms = Vec::with_capacity(LATENCY_RUNS);
    for _ in 0..LATENCY_RUNS {
        let before = now_us();
        let output = tokio::process::Command::new("bash")
            .args(["-c", STAMP])
            .output()
            .await
            .unwrap();
        direct_ms.push((stamp_us(&String::from_utf8_lossy(&output.stdout)) - before) / 1e3);

        let before = now_us();
        let submitted = engine
            .submit(
                &agent,
                SubmitRequest {
                    description: STAMP.into(),
                    ..SubmitRequest::default()
                },
            )
            .await
            .unwrap();
        let task = engine
            .wait(
                &handoff_task::Principal::Agent(agent.clone()),
                &submitted.task.id,
                Duration::from_secs(30),
            )
            .await
            .unwrap();
        assert_eq!(task.status, TaskStatus::Completed);
        let history = engine
            .history(
                &handoff_task::Principal::Agent(agent.clone()),
                &task.id,
                0,
                100,
                false,
            )
            .await
            .unwrap();
        let line = history
            .events
            .iter()
            .find(|e| e.kind == EventKind::Output)
            .unwrap();
        engine_ms.push((stamp_us(&line.message) - before) / 1e3);
    }
    (summarize(engine_ms), summarize(direct_ms))
}

/// Submit → completed for a task that writes a file, with `completion` as given.
async fn completed_ms(engine: &Engine, completion: handoff_task::CompletionSpec) -> f64 {
    let agent = AgentId::parse("bench").unwrap();
    let at = Instant::now();
    let submitted = engine
        .submit(
            &agent,
            SubmitRequest {
                description: "echo changed > changed.txt".into(),
                completion: Some(completion),
                ..SubmitRequest::default()
            },
        )
        .await
        .unwrap();
    let task = engine
        .wait(
            &handoff_task::Principal::Agent(agent),
            &submitted.task.id,
            Duration::from_secs(30),
        )
        .await
        .unwrap();
    assert_eq!(task.status, TaskStatus::Completed, "{:?}", task.error);
    at.elapsed().as_secs_f64() * 1e3
}

/// Submit → completed with the evaluator (checks, changes required, no judge) vs. without it,
/// alternating so both see the same machine load.
async fn evaluator_latency(engine: &Engine) -> (Summary, Summary) {
    use handoff_task::{CompletionPolicy, CompletionSpec};
    let mut evaluated = Vec::with_capacity(EVALUATED_RUNS);
    let mut plain = Vec::with_capacity(EVALUATED_RUNS);
    for _ in 0..EVALUATED_RUNS {
        let checks = CompletionSpec {
            policy: Some(CompletionPolicy::Checks),
            requires_changes: Some(true),
            ..CompletionSpec::default()
        };
        evaluated.push(completed_ms(engine, checks).await);
        let none = CompletionSpec {
            policy: Some(CompletionPolicy::None),
            ..CompletionSpec::default()
        };
        plain.push(completed_ms(engine, none).await);
    }
    (summarize(evaluated), summarize(plain))
}

fn stored_task(agent: &AgentId, i: usize) -> NewTask {
    NewTask {
        id: TaskId::generate().unwrap(),
        agent_id: agent.clone(),
        description: format!("stored task {i}"),
        executor: "command".into(),
        options: TaskOptions {
            timeout_ms: 60_000,
            ..TaskOptions::default()
        },
        priority: 0,
        workdir: "/nonexistent".into(),
        created_at: unix_millis_now(),
        idempotency_key: None,
        metadata: json!({}),
        repeat_guard: None,
    }
}

/// Fills the store with finished tasks (each with its status events and a few output lines).
async fn fill(store: &SqliteStore, agent: &AgentId) -> Vec<TaskId> {
    let limits = ClaimLimits {
        max_active: u32::MAX,
        max_active_per_agent: u32::MAX,
    };
    let mut ids = Vec::with_capacity(STORED_TASKS);
    for i in 0..STORED_TASKS {
        let InsertOutcome::Created(task) = store
            .insert_task(&stored_task(agent, i), None, u32::MAX)
            .await
            .unwrap()
        else {
            unreachable!()
        };
        let claimed = store
            .claim_next(limits, unix_millis_now())
            .await
            .unwrap()
            .unwrap();
        let lines: Vec<_> = (0..3)
            .map(|n| handoff_task::NewEvent::new(EventKind::Output, format!("line {n}")))
            .collect();
        store
            .append_events(&claimed.id, unix_millis_now(), &lines)
            .await
            .unwrap();
        store
            .set_status(
                &claimed.id,
                &StatusChange {
                    from: TaskStatus::Running,
                    to: TaskStatus::Completed,
                    at: unix_millis_now(),
                    exit: None,
                    error: None,
                    reason: "completed".into(),
                },
            )
            .await
            .unwrap();
        ids.push(task.id);
    }
    ids
}

async fn status_latency(
    engine: &Engine,
    store: &SqliteStore,
    ids: &[TaskId],
) -> (Summary, Summary) {
    let agent = AgentId::parse("bench").unwrap();
    let mut engine_ms = Vec::with_capacity(STATUS_CALLS);
    let mut store_ms = Vec::with_capacity(STATUS_CALLS);
    for i in 0..STATUS_CALLS {
        let id = &ids[(i * 7919) % ids.len()];
        let at = Instant::now();
        store.get_task(id).await.unwrap().unwrap();
        store_ms.push(at.elapsed().as_secs_f64() * 1e3);
        let at = Instant::now();
        engine
            .status(&handoff_task::Principal::Agent(agent.clone()), id)
            .await
            .unwrap();
        engine_ms.push(at.elapsed().as_secs_f64() * 1e3);
    }
    (summarize(engine_ms), summarize(store_ms))
}

/// `list_tasks` first pages (50 rows) with 10,000 tasks stored, vs. a bare store page.
async fn list_latency(engine: &Engine, store: &SqliteStore) -> (Summary, Summary) {
    let agent = AgentId::parse("bench").unwrap();
    let mut engine_ms = Vec::with_capacity(200);
    let mut store_ms = Vec::with_capacity(200);
    for _ in 0..200 {
        let at = Instant::now();
        store
            .list_tasks(&handoff_store::TaskFilter {
                agent_id: Some(agent.clone()),
                statuses: vec![],
                limit: 50,
                before_seq: None,
                text: None,
            })
            .await
            .unwrap();
        store_ms.push(at.elapsed().as_secs_f64() * 1e3);
        let at = Instant::now();
        engine
            .list(
                &handoff_task::Principal::Agent(agent.clone()),
                vec![],
                50,
                None,
            )
            .await
            .unwrap();
        engine_ms.push(at.elapsed().as_secs_f64() * 1e3);
    }
    (summarize(engine_ms), summarize(store_ms))
}

/// Submissions per second from 16 concurrent callers, vs. bare inserts into a separate store
/// file (so the engine's scheduler does not pick the baseline's rows up).
async fn throughput(engine: &Engine) -> (f64, f64) {
    let agent = AgentId::parse("throughput").unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let store = Arc::new(
        SqliteStore::open(&scratch.path().join("baseline.db"))
            .await
            .unwrap(),
    );
    let at = Instant::now();
    let mut joins = Vec::new();
    for worker in 0..16 {
        let store = store.clone();
        let agent = agent.clone();
        joins.push(tokio::spawn(async move {
            for i in 0..SUBMISSIONS / 16 {
                store
                    .insert_task(&stored_task(&agent, worker * 1000 + i), None, u32::MAX)
                    .await
                    .unwrap();
            }
        }));
    }
    for join in joins {
        join.await.unwrap();
    }
    let raw = (SUBMISSIONS / 16 * 16) as f64 / at.elapsed().as_secs_f64();

    let at = Instant::now();
    let mut joins = Vec::new();
    for _ in 0..16 {
        let engine = engine.clone();
        let agent = agent.clone();
        joins.push(tokio::spawn(async move {
            for _ in 0..SUBMISSIONS / 16 {
                engine
                    .submit(
                        &agent,
                        SubmitRequest {
                            description: "true".into(),
                            ..SubmitRequest::default()
                        },
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for join in joins {
        join.await.unwrap();
    }
    let engine_rate = (SUBMISSIONS / 16 * 16) as f64 / at.elapsed().as_secs_f64();
    (engine_rate, raw)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let config = config(dir.path());
        let store = Arc::new(SqliteStore::open(&config.database_path()).await.unwrap());
        let agent = AgentId::parse("bench").unwrap();
        let filling = Instant::now();
        let ids = fill(&store, &agent).await;
        println!(
            "stored {STORED_TASKS} finished tasks in {:.1} s",
            filling.elapsed().as_secs_f64()
        );
        let engine = engine(&config, store.clone()).await;

        let (start, spawn) = start_latency(&engine).await;
        row("submit -> executor process started", &start, &spawn, "ms");
        println!("{:<44} (baseline: spawning `bash -c` directly)", "");
        let (status, read) = status_latency(&engine, &store, &ids).await;
        row(
            &format!("get_task_status, {STORED_TASKS} tasks stored"),
            &status,
            &read,
            "ms",
        );
        println!("{:<44} (baseline: one bare store read of the task row)", "");
        let (list, page) = list_latency(&engine, &store).await;
        row(
            &format!("list_tasks page of 50, {STORED_TASKS} tasks"),
            &list,
            &page,
            "ms",
        );
        println!(
            "{:<44} (baseline: the same page read from the store directly)",
            ""
        );
        let (evaluated, plain) = evaluator_latency(&engine).await;
        row(
            "submit -> completed, evaluator (no judge)",
            &evaluated,
            &plain,
            "ms",
        );
        println!(
            "{:<44} (baseline: policy `none`; evaluator adds p50 {:.1} ms, p99 {:.1} ms)",
            "",
            evaluated.p50 - plain.p50,
            evaluated.p99 - plain.p99
        );
        let (rate, raw) = throughput(&engine).await;
        println!(
            "{:<44} {rate:>9.0} /s   baseline {raw:>9.0} /s (bare store inserts)   ratio {:>5.2}x",
            "submissions (16 concurrent callers)",
            raw / rate
        );
        engine.shutdown().await;
    });
}

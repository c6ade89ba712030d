//! Letta writes and bytes per task, coalesced (Handoff's writer: at most one block write per
//! `min_update_interval`, status changes at once) against one write per event (the older
//! server's design), for tasks emitting 10, 1,000 and 100,000 events over the same 5 s, in the
//! same run, against a REAL Letta server (`HANDOFF_TEST_LETTA_URL`, or the one
//! `scripts/letta/up.sh` starts).
//!
//! The baseline sends its writes for 10 and 1,000 events; for 100,000 it builds the same
//! values and counts them without sending (at the measured write rate that would take longer
//! than the whole run).
//!
//! Run: `cargo bench -p handoff-letta --bench writes` (prints a table; asserts nothing).
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::{
    sync::Arc,
    time::{Duration, Instant},
};

use async_trait::async_trait;
use handoff_config::LettaConfig;
use handoff_integration::{SourceError, TaskOverview, TaskSource};
use handoff_letta::{
    BLOCK_DESCRIPTION, LettaClient, NewBlock, NoMeter, WorkspaceSync, WorkspaceValue, fit_value,
};
use handoff_store::{SqliteStore, StatusChange, Store, WorkspaceStore};
use handoff_task::{
    AgentId, BlockPhase, EventKind, NewEvent, NewTask, Task, TaskEvent, TaskId, TaskOptions,
    TaskStatus, unix_millis_now,
};
use serde_json::json;

/// Every task emits its events over this long.
const EMIT_FOR: Duration = Duration::from_secs(5);
/// Events are appended in this many batches.
const BATCHES: u64 = 250;
/// The baseline sends its writes up to this many events.
const SEND_UP_TO: u64 = 1_000;
const LIMIT: u32 = 6_000;

/// Snapshots straight from the store (the engine's source adds live pending requests).
struct StoreSource(Arc<dyn Store>);

#[async_trait]
impl TaskSource for StoreSource {
    async fn overview(&self, id: &TaskId, n: u32) -> Result<Option<TaskOverview>, SourceError> {
        let err = |e: handoff_store::StoreError| SourceError(e.to_string());
        let Some(task) = self.0.get_task(id).await.map_err(err)? else {
            return Ok(None);
        };
        Ok(Some(TaskOverview {
            recent_events: self.0.recent_events(id, n).await.map_err(err)?,
            total_events: self.0.events(id, 0, 0).await.map_err(err)?.1,
            artifacts: Vec::new(),
            pending_input: Vec::new(),
            completion: None,
            model_usage: None,
            at: unix_millis_now(),
            task,
        }))
    }

    async fn note(&self, id: &TaskId, event: NewEvent) {
        let _ = self.0.append_events(id, unix_millis_now(), &[event]).await;
    }
}

fn config(url: &str) -> LettaConfig {
    LettaConfig {
        api_url: Some(url.to_owned()),
        block_limit: LIMIT,
        notify: false,
        sweep_interval: Duration::from_secs(1),
        ..LettaConfig::off()
    }
}

async fn running_task(store: &dyn Store, agent: &AgentId) -> Task {
    let id = TaskId::generate().unwrap();
    let new = NewTask {
        id: id.clone(),
        agent_id: agent.clone(),
        description: "emit events".into(),
        executor: "command".into(),
        options: TaskOptions::default(),
        priority: 0,
        workdir: "/tmp".into(),
        created_at: unix_millis_now(),
        idempotency_key: None,
        metadata: json!({}),
        repeat_guard: None,
    };
    store.insert_task(&new, None, 1_000).await.unwrap();
    change(store, &id, TaskStatus::Queued, TaskStatus::Running).await
}

async fn change(store: &dyn Store, id: &TaskId, from: TaskStatus, to: TaskStatus) -> Task {
    let change = StatusChange {
        from,
        to,
        at: unix_millis_now(),
        exit: None,
        error: None,
        reason: to.as_str().into(),
    };
    store.set_status(id, &change).await.unwrap().unwrap()
}

fn line(i: u64) -> String {
    format!("compiling crate {i} of the workspace: ok ({} ms)", i % 997)
}

/// Coalesced: the real writer against the real server; writes and bytes from its record.
async fn coalesced(
    url: &str,
    agent: &AgentId,
    dir: &std::path::Path,
    n: u64,
) -> (u64, u64, Duration) {
    let sqlite = Arc::new(
        SqliteStore::open(&dir.join(format!("c{n}.db")))
            .await
            .unwrap(),
    );
    let store: Arc<dyn Store> = sqlite.clone();
    let sync = WorkspaceSync::start(
        config(url),
        sqlite.clone(),
        Arc::new(StoreSource(store.clone())),
        Arc::new(NoMeter),
        Duration::from_secs(3600),
    )
    .unwrap();
    let task = running_task(store.as_ref(), agent).await;
    let start = Instant::now();
    sync.task_started(&task).await.unwrap();
    let per_batch = n.div_ceil(BATCHES);
    let mut emitted = 0;
    for b in 0..BATCHES {
        let events: Vec<NewEvent> = (emitted..(emitted + per_batch).min(n))
            .map(|i| NewEvent::new(EventKind::Output, line(i)))
            .collect();
        emitted += events.len() as u64;
        if !events.is_empty() {
            store
                .append_events(&task.id, unix_millis_now(), &events)
                .await
                .unwrap();
            sync.touch(&task.id, false);
        }
        tokio::time::sleep_until(
            tokio::time::Instant::from_std(start)
                + EMIT_FOR.mul_f64((b + 1) as f64 / BATCHES as f64),
        )
        .await;
    }
    change(
        store.as_ref(),
        &task.id,
        TaskStatus::Running,
        TaskStatus::Completed,
    )
    .await;
    sync.touch(&task.id, true);
    let record = loop {
        let r = sqlite.workspace(&task.id).await.unwrap().unwrap();
        if r.phase == BlockPhase::Final {
            break r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let took = start.elapsed();
    if let Some(block) = &record.block_id {
        let client = sync.client();
        let _ = client.detach_block(agent.as_str(), block).await;
        let _ = client.delete_block(block).await;
    }
    sync.shutdown().await;
    (record.writes, record.bytes_written, took)
}

/// One write per event: the value after each event, built the same way; sent (one PATCH per
/// event, in order) up to [`SEND_UP_TO`] events.
async fn per_event(url: &str, agent: &AgentId, n: u64) -> (u64, u64, Option<Duration>) {
    let template = TaskOverview {
        task: Task {
            id: TaskId::generate().unwrap(),
            agent_id: agent.clone(),
            description: "emit events".into(),
            executor: "command".into(),
            options: TaskOptions::default(),
            status: TaskStatus::Running,
            priority: 0,
            queue_seq: 1,
            workdir: "/tmp".into(),
            created_at: unix_millis_now(),
            started_at: Some(unix_millis_now()),
            completed_at: None,
            exit: None,
            error: None,
            idempotency_key: None,
            metadata: json!({}),
            runner_state: None,
            result_delivered_at: None,
            lease: None,
            fence: 0,
        },
        recent_events: Vec::new(),
        total_events: 0,
        artifacts: Vec::new(),
        pending_input: Vec::new(),
        completion: None,
        model_usage: None,
        at: unix_millis_now(),
    };
    let send = n <= SEND_UP_TO;
    // The older design had no rate limit of its own: do not hold the baseline to ours.
    let client = LettaClient::new(&LettaConfig {
        requests_per_second: 100_000,
        ..config(url)
    })
    .unwrap();
    let block = if send {
        let block = client
            .create_block(&NewBlock {
                label: format!("handoff_bench_{}", template.task.id),
                description: BLOCK_DESCRIPTION.into(),
                value: "{}".into(),
                limit: LIMIT,
                metadata: json!({}),
                tags: vec!["handoff-bench".into()],
            })
            .await
            .unwrap();
        client
            .attach_block(agent.as_str(), &block.id)
            .await
            .unwrap();
        Some(block.id)
    } else {
        None
    };
    let start = Instant::now();
    let mut snapshot = template;
    let mut bytes = 0;
    for i in 0..n {
        snapshot.recent_events.push(TaskEvent {
            task_id: snapshot.task.id.clone(),
            seq: i as i64 + 1,
            at: unix_millis_now(),
            kind: EventKind::Output,
            message: line(i),
            data: json!({}),
        });
        if snapshot.recent_events.len() > 30 {
            snapshot.recent_events.remove(0);
        }
        snapshot.total_events = i + 1;
        let value = fit_value(WorkspaceValue::from_snapshot(&snapshot), LIMIT as usize);
        bytes += value.len() as u64;
        if let Some(block) = &block {
            client.update_block(block, &value).await.unwrap();
        }
    }
    let took = start.elapsed();
    if let Some(block) = &block {
        let _ = client.detach_block(agent.as_str(), block).await;
        let _ = client.delete_block(block).await;
    }
    (n, bytes, send.then_some(took))
}

fn main() {
    let url = handoff_letta::testing::letta_url();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let dir = tempfile::tempdir().unwrap();
        let agent = AgentId::parse(&handoff_letta::testing::create_agent(&url, "bench").await).unwrap();
        println!("Letta at {url}; block limit {LIMIT} chars; events emitted over {EMIT_FOR:?}; interval 1 s");
        println!(
            "{:>8} | {:>16} {:>12} {:>8} | {:>16} {:>12} {:>10} | {:>9} {:>9}",
            "events", "coalesced writes", "bytes", "wall", "per-event writes", "bytes", "wall", "writes ×", "bytes ×"
        );
        for n in [10u64, 1_000, 100_000] {
            let (cw, cb, ct) = coalesced(&url, &agent, dir.path(), n).await;
            let (bw, bb, bt) = per_event(&url, &agent, n).await;
            let wall = bt.map_or_else(|| "not sent".to_owned(), |t| format!("{:.1} s", t.as_secs_f64()));
            println!(
                "{n:>8} | {cw:>16} {cb:>12} {:>6.1} s | {bw:>16} {bb:>12} {wall:>10} | {:>8.1}× {:>8.1}×",
                ct.as_secs_f64(),
                bw as f64 / cw.max(1) as f64,
                bb as f64 / cb.max(1) as f64,
            );
        }
    });
}

//! Several instances under the faults they exist for (issue 39), with real `handoff serve`
//! processes and bash agents that keep their own ledger: every run appends `<pid> <time>`
//! lines to its task's ledger file while it works. A run frozen or killed writes nothing, so
//! the ledgers prove what the store cannot: that no two runs of one task were ever working at
//! the same time, and whether a task ran more than once.
//!
//! - The database stopped (and started again) for several lease expiries while every instance
//!   stays up: every run freezes, thaws when its lease is re-won, and completes — no task
//!   fails, none runs twice.
//! - An instance SIGSTOPped past its lease: its run keeper freezes its runs before another
//!   instance may take them over; a cancel sent meanwhile through the other instance is
//!   withdrawn and answered `UNAVAILABLE` with a retry hint, and applied when retried; when
//!   the stopped instance wakes, it kills its frozen runs without writing a word about them.

use std::{
    collections::BTreeMap,
    path::Path,
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::{
    harness::{Server, start},
    mcp::{call, err, ok, task_id},
    pg_cluster::OwnCluster,
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    scale::psql,
};

/// Short heartbeats and leases, so every fault plays out within seconds.
const FAST: [(&str, &str); 6] = [
    ("HANDOFF_HEARTBEAT_MS", "200"),
    ("HANDOFF_LEASE_EXPIRY_MS", "1000"),
    ("HANDOFF_CLOCK_SKEW_MS", "300"),
    ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
    ("HANDOFF_COMMAND_ISOLATION", "process"),
    ("HANDOFF_CANCEL_GRACE_MS", "300"),
];

/// A task whose run writes `ticks` ledger lines, one every 0.1 s, into `ledger`.
fn ledgered(ledger: &Path, ticks: u32, requeue: bool) -> Value {
    json!({
        "task_description": format!(
            "for n in $(seq 1 {ticks}); do echo \"$$ $EPOCHREALTIME\" >> {}; sleep 0.1; done",
            ledger.display()
        ),
        "sync": false,
        "requeue_on_restart": requeue,
    })
}

/// Each run's first and last ledger line (seconds), by pid.
fn runs(ledger: &Path) -> BTreeMap<u32, (f64, f64)> {
    let text = std::fs::read_to_string(ledger).unwrap_or_default();
    let mut runs: BTreeMap<u32, (f64, f64)> = BTreeMap::new();
    for line in text.lines() {
        let Some((pid, at)) = line.split_once(' ') else {
            continue;
        };
        let (Ok(pid), Ok(at)) = (pid.parse(), at.trim().parse::<f64>()) else {
            continue;
        };
        let span = runs.entry(pid).or_insert((at, at));
        span.0 = span.0.min(at);
        span.1 = span.1.max(at);
    }
    runs
}

/// No two runs in `ledger` were working at the same time.
fn assert_no_overlap(ledger: &Path) {
    let mut spans: Vec<(f64, f64, u32)> = runs(ledger)
        .into_iter()
        .map(|(pid, (a, b))| (a, b, pid))
        .collect();
    spans.sort_by(|x, y| x.0.total_cmp(&y.0));
    for pair in spans.windows(2) {
        assert!(
            pair[1].0 > pair[0].1,
            "{}: run {} wrote from {} to {} while run {} started at {}",
            ledger.display(),
            pair[0].2,
            pair[0].0,
            pair[0].1,
            pair[1].2,
            pair[1].0
        );
    }
}

/// Lines in `ledger`.
fn lines(ledger: &Path) -> usize {
    std::fs::read_to_string(ledger).map_or(0, |t| t.lines().count())
}

/// Waits for `fact`, for at most `limit`.
fn wait_for(what: &str, limit: Duration, mut fact: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !fact() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether every ledger stays unchanged across a heartbeat's time (its runs are frozen).
fn all_still(ledgers: &[std::path::PathBuf]) -> bool {
    let before: Vec<usize> = ledgers.iter().map(|l| lines(l)).collect();
    std::thread::sleep(Duration::from_millis(400));
    ledgers.iter().map(|l| lines(l)).collect::<Vec<_>>() == before
}

#[test]
fn a_database_outage_fails_no_task_and_no_run_overlaps_another() {
    let cluster = OwnCluster::up();
    let url = cluster.url();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.extend(FAST);
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));
    let servers = [start(&env), start(&env)];
    let dir = tempfile::tempdir().unwrap();
    let ledgers: Vec<_> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
    let ids: Vec<String> = ledgers
        .iter()
        .enumerate()
        .map(|(i, ledger)| {
            // Half opted in to re-running: neither kind may fail for the outage.
            task_id(&call(
                &servers[i % 2],
                "agent-a",
                "execute_task",
                ledgered(ledger, 60, i % 2 == 0),
            ))
        })
        .collect();
    wait_for("every run working", Duration::from_secs(30), || {
        ledgers.iter().all(|l| lines(l) >= 3)
    });

    let outage = Instant::now();
    cluster.stop();
    // Every run freezes once its lease can no longer be renewed.
    wait_for("every run frozen", Duration::from_secs(10), || {
        all_still(&ledgers)
    });
    // Down for four lease expiries, well past every lease and the skew allowance.
    std::thread::sleep(Duration::from_secs(4).saturating_sub(outage.elapsed()));
    for server in &servers {
        let health = health(server);
        let store = health["components"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["name"] == "store"))
            .cloned();
        assert_eq!(
            store.map(|s| s["ready"].clone()),
            Some(json!(false)),
            "the store is not ready while it is down: {health}"
        );
    }
    cluster.start();

    let done = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    wait_for("every task finished", Duration::from_secs(60), || {
        psql(
            &url,
            &format!(
                "SELECT COUNT(*) FROM tasks WHERE id IN ({done}) AND status IN \
                 ('completed','failed','cancelled','timeout')"
            ),
        ) == ids.len().to_string()
    });
    let outcomes = psql(
        &url,
        &format!(
            "SELECT string_agg(id || ' ' || status || ' ' || COALESCE(error, ''), ' | ') \
             FROM tasks WHERE id IN ({done}) AND status <> 'completed'"
        ),
    );
    assert_eq!(outcomes, "", "tasks that did not complete");
    let requeued = psql(
        &url,
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id IN ({done}) AND kind = 'status' \
             AND data::json->>'to' = 'queued' AND seq > 1"
        ),
    );
    assert_eq!(requeued, "0", "no task went back to the queue");
    for ledger in &ledgers {
        assert_eq!(runs(ledger).len(), 1, "{}: one run", ledger.display());
        assert_eq!(lines(ledger), 60, "{}: the run did all its work", ledger.display());
    }
    drop(servers);
}

/// `/health` of a server, as JSON.
fn health(server: &Server) -> Value {
    let base = server.url.trim_end_matches("/mcp");
    let out = std::process::Command::new("curl")
        .args(["-s", "-m", "5", &format!("{base}/health")])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

#[test]
fn a_stopped_instance_is_fenced_before_its_tasks_are_taken_over() {
    let url = fresh_database();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.extend(FAST);
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));
    // The instance to stop starts alone, so the tasks are its own.
    let stopped = start(&env);
    let dir = tempfile::tempdir().unwrap();
    let ledgers: Vec<_> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
    let ids: Vec<String> = ledgers
        .iter()
        .map(|ledger| {
            task_id(&call(
                &stopped,
                "agent-a",
                "execute_task",
                ledgered(ledger, 40, true),
            ))
        })
        .collect();
    wait_for("every run working", Duration::from_secs(30), || {
        ledgers.iter().all(|l| lines(l) >= 3)
    });
    let other = start(&env);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(stopped.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();

    // The holder is unreachable: a cancel is withdrawn, not left to be applied later.
    let doomed = &ids[3];
    let refused = call(
        &other,
        "agent-a",
        "send_task_control",
        json!({"task_id": doomed, "control": "cancel"}),
    );
    let body = err(&refused);
    assert_eq!(body["code"], "UNAVAILABLE", "{refused}");
    let retry = body["retry_after_ms"].as_u64().expect("a retry hint");

    // The other instance re-queues the tasks and runs them again, after the stopped one's
    // keeper froze its runs.
    let rerun = &ledgers[..3];
    wait_for("every task re-run", Duration::from_secs(30), || {
        rerun.iter().all(|l| runs(l).len() == 2)
    });
    std::thread::sleep(Duration::from_millis(retry));
    let cancelled = call(
        &other,
        "agent-a",
        "send_task_control",
        json!({"task_id": doomed, "control": "cancel"}),
    );
    assert_eq!(ok(&cancelled)["status"], "cancelled", "{cancelled}");

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    let done = ids[..3]
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    wait_for("the re-runs complete", Duration::from_secs(60), || {
        psql(
            &url,
            &format!("SELECT COUNT(*) FROM tasks WHERE id IN ({done}) AND status = 'completed'"),
        ) == "3"
    });
    for ledger in &ledgers {
        assert_no_overlap(ledger);
    }
    // The woken instance wrote nothing about the runs it lost.
    let lost = psql(
        &url,
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id IN ({done}) \
             AND message LIKE '%lost the task%'"
        ),
    );
    assert_eq!(lost, "0");
    let history = psql(
        &url,
        &format!(
            "SELECT string_agg(message, ' | ' ORDER BY seq) FROM task_events \
             WHERE task_id = '{doomed}' AND kind = 'log'"
        ),
    );
    assert!(history.contains("cancel not applied"), "{history}");
    drop((stopped, other));
}

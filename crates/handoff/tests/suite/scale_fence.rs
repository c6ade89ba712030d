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
//!   instance may take them over; a cancel sent meanwhile through the other instance is either
//!   withdrawn and answered `UNAVAILABLE` with a retry hint (and applied when retried) or
//!   honoured by the instance that takes the task over — never both, never lost; when the
//!   stopped instance wakes, it kills its frozen runs without writing a word about them.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use serde_json::{Value, json};

use super::{
    harness::{Server, start},
    mcp::{call, calls, err, ok, task_id},
    pg_cluster::OwnCluster,
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    process::wait_frozen,
    scale::psql,
    wait::{PATIENCE, wait_until},
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

/// A task whose run writes a ledger line into `ledger` every 0.1 s until the file `stop`
/// exists (the test ends the runs when it has seen what it waits for).
fn ledgered(ledger: &Path, stop: &Path, requeue: bool) -> Value {
    json!({
        "name": "execute_task",
        "arguments": {
            "task_description": format!(
                "while [ ! -e {} ]; do echo \"$$ $EPOCHREALTIME\" >> {}; sleep 0.1; done",
                stop.display(),
                ledger.display()
            ),
            "sync": false,
            "requeue_on_restart": requeue,
        },
    })
}

/// Submits one ledgered task per ledger to `server` in one client session; their ids.
fn submit_all(server: &Server, ledgers: &[PathBuf], stop: &Path, requeue: bool) -> Vec<String> {
    let batch: Vec<Value> = ledgers
        .iter()
        .map(|ledger| ledgered(ledger, stop, requeue))
        .collect();
    calls(server, "agent-a", json!(batch))
        .iter()
        .map(task_id)
        .collect()
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

/// The run writing each ledger (its latest writer).
fn writers(ledgers: &[PathBuf]) -> Vec<i32> {
    ledgers
        .iter()
        .map(|ledger| {
            std::fs::read_to_string(ledger)
                .unwrap_or_default()
                .lines()
                .last()
                .and_then(|line| line.split_once(' ')?.0.parse().ok())
                .unwrap_or_else(|| panic!("{}: no run wrote there", ledger.display()))
        })
        .collect()
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
    let stop = dir.path().join("stop");
    let ledgers: Vec<_> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
    // Through both instances; half opted in to re-running: neither kind may fail for the outage.
    let mut ids = submit_all(&servers[0], &ledgers[..2], &stop, true);
    ids.extend(submit_all(&servers[1], &ledgers[2..], &stop, false));
    wait_until("every run working", PATIENCE, || {
        ledgers.iter().all(|l| lines(l) >= 3)
    });

    let outage = Instant::now();
    cluster.stop();
    // Every run freezes once its lease can no longer be renewed.
    wait_frozen("every run", &writers(&ledgers));
    // The fault itself, not a wait for an outcome: the database stays down for four lease
    // expiries, well past every lease and the skew allowance, whatever happens meanwhile.
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
    // Every run thaws and works on.
    let frozen_at: Vec<usize> = ledgers.iter().map(|l| lines(l)).collect();
    wait_until("every run thawed", PATIENCE, || {
        ledgers
            .iter()
            .zip(&frozen_at)
            .all(|(l, n)| lines(l) > n + 2)
    });
    std::fs::write(&stop, "").unwrap();

    let done = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    wait_until("every task finished", PATIENCE, || {
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
    // A lease long enough that the cancel below reaches the instance while the stopped holder's
    // lease still runs, whatever the load: the cancel must be posted to it, not applied here.
    env.push(("HANDOFF_LEASE_EXPIRY_MS", "4000"));
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));
    // The instance to stop starts alone, so the tasks are its own.
    let stopped = start(&env);
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("stop");
    let ledgers: Vec<_> = (0..4).map(|i| dir.path().join(format!("t{i}"))).collect();
    let ids = submit_all(&stopped, &ledgers, &stop, true);
    wait_until("every run working", PATIENCE, || {
        ledgers.iter().all(|l| lines(l) >= 3)
    });
    let other = start(&env);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(stopped.child.id()).unwrap());
    let stopped_at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();

    // The holder is unreachable: the cancel is posted for it, and either withdrawn when the
    // caller stops waiting (`UNAVAILABLE`, applied when retried) or taken, with the task, by
    // the instance that takes it over, which honours it — never both, never lost.
    let doomed = &ids[3];
    let cancel = || {
        call(
            &other,
            "agent-a",
            "send_task_control",
            json!({"task_id": doomed, "control": "cancel"}),
        )
    };
    let first = cancel();
    let withdrawn = first["is_error"] == true;
    if withdrawn {
        let body = err(&first);
        assert_eq!(body["code"], "UNAVAILABLE", "{first}");
        let retry = body["retry_after_ms"].as_u64().expect("a retry hint");
        let status = psql(
            &url,
            &format!("SELECT status FROM tasks WHERE id = '{doomed}'"),
        );
        assert_ne!(status, "cancelled", "withdrawn, yet applied");
        // Retried once the hint's time is up, until the cancel is applied: withdrawn again
        // (the holder still unreachable, its lease still running) is the same answer with a
        // new hint.
        let mut due = Instant::now() + Duration::from_millis(retry);
        let again = wait_until("the retried cancel to be applied", PATIENCE, || {
            if Instant::now() < due {
                return Err("waiting out the retry hint".to_owned());
            }
            let again = cancel();
            if again["is_error"] != true {
                return Ok(again);
            }
            let body = err(&again);
            assert_eq!(body["code"], "UNAVAILABLE", "{again}");
            let retry = body["retry_after_ms"].as_u64().expect("a retry hint");
            due = Instant::now() + Duration::from_millis(retry);
            Err(again.to_string())
        });
        assert_eq!(ok(&again)["status"], "cancelled", "{again}");
    } else {
        assert_eq!(ok(&first)["status"], "cancelled", "{first}");
        // Posted for the holder (its lease still ran when the cancel came), the cancel is
        // taken with the task: never re-queued. Had the takeover come first (a very slow
        // machine), the cancel met a re-queued task here and nothing was posted.
        let posted = psql(
            &url,
            &format!("SELECT COUNT(*) FROM commands WHERE task_id = '{doomed}'"),
        );
        let requeued = psql(
            &url,
            &format!(
                "SELECT COUNT(*) FROM task_events WHERE task_id = '{doomed}' AND kind = 'status' \
                 AND data::json->>'to' = 'queued' AND seq > 1"
            ),
        );
        if posted != "0" {
            assert_eq!(requeued, "0", "a cancelled task was re-queued");
        }
    }

    // The other instance re-queues the other tasks and runs them again, after the stopped
    // one's keeper froze its runs.
    let rerun = &ledgers[..3];
    wait_until("every task re-run", PATIENCE, || {
        rerun.iter().all(|l| runs(l).len() == 2)
    });

    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    // The woken instance finds itself declared lost, kills its frozen runs and comes back as a
    // new instance.
    wait_until("the stopped instance back", PATIENCE, || {
        psql(
            &url,
            &format!(
                "SELECT COUNT(*) FROM instances WHERE pid = {}",
                stopped.child.id()
            ),
        ) == "1"
    });
    std::fs::write(&stop, "").unwrap();
    let done = ids[..3]
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(",");
    wait_until("the re-runs complete", PATIENCE, || {
        psql(
            &url,
            &format!("SELECT COUNT(*) FROM tasks WHERE id IN ({done}) AND status = 'completed'"),
        ) == "3"
    });
    for ledger in &ledgers {
        assert_no_overlap(ledger);
        // Its keeper froze the stopped instance's run before its lease ran out (renewed at
        // the latest when the instance was stopped) — not merely when the other instance, on
        // this same host, killed it at the takeover.
        let (_, last) = runs(ledger)
            .into_values()
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("a first run");
        assert!(
            last < stopped_at + 4.0,
            "{}: the stopped instance's run worked {:.2} s after the stop, past its lease",
            ledger.display(),
            last - stopped_at
        );
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
    if withdrawn {
        let history = psql(
            &url,
            &format!(
                "SELECT string_agg(message, ' | ' ORDER BY seq) FROM task_events \
                 WHERE task_id = '{doomed}' AND kind = 'log'"
            ),
        );
        assert!(history.contains("cancel not applied"), "{history}");
    } else {
        assert_eq!(runs(&ledgers[3]).len(), 1, "the cancelled task ran again");
    }
    drop((stopped, other));
}

//! Three real `handoff serve` processes on one PostgreSQL (issue 21): one queue, one global
//! limit, each task run once; and the tasks of an instance killed with SIGKILL taken over by
//! the others within the lease expiry. The `command` executor runs short bash scripts; the
//! store is read with `psql` (the ground truth every instance shares).

use std::{
    collections::HashMap,
    process::Command,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicI64, Ordering},
    },
    time::{Duration, Instant},
};

use serde_json::json;

use super::{
    harness::{Server, start},
    mcp::{calls, task_id},
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    wait::{Pace, wait_paced},
};

/// Short heartbeats and leases, so a takeover happens within about a second.
const HEARTBEAT_MS: &str = "200";
const LEASE_EXPIRY_MS: u64 = 1_000;

/// One value (or rows joined by newlines) from `psql`.
pub(super) fn psql(url: &str, sql: &str) -> String {
    let out = Command::new("psql")
        .args([url, "-v", "ON_ERROR_STOP=1", "-Atqc", sql])
        .output()
        .expect("psql (PostgreSQL's client) is needed to read the shared store");
    assert!(
        out.status.success(),
        "psql failed on {sql}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn count(url: &str, sql: &str) -> i64 {
    psql(url, sql).parse().unwrap()
}

/// Waits until `sql` counts `want`, for at most `limit`; the time it took.
pub(super) fn wait_count(url: &str, sql: &str, want: i64, limit: Duration) -> Duration {
    let start = Instant::now();
    // Looked at often: some tests judge how long it took.
    wait_paced(
        &format!("`{sql}` to count {want}"),
        limit,
        Pace::every(Duration::from_millis(50)),
        || {
            let n = count(url, sql);
            if n == want { Ok(()) } else { Err(n) }
        },
    );
    start.elapsed()
}

#[test]
fn three_instances_share_one_queue_and_take_over_a_killed_one() {
    let url = fresh_database();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    let expiry = LEASE_EXPIRY_MS.to_string();
    env.extend([
        ("HANDOFF_DATABASE_URL", url.as_str()),
        ("HANDOFF_MAX_CONCURRENT_TASKS", "6"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
        ("HANDOFF_HEARTBEAT_MS", HEARTBEAT_MS),
        ("HANDOFF_LEASE_EXPIRY_MS", expiry.as_str()),
    ]);
    let servers: Vec<Server> = (0..3).map(|_| start(&env)).collect();
    assert_eq!(count(&url, "SELECT COUNT(*) FROM instances"), 3);

    one_queue_one_limit(&url, &servers);
    takeover_after_kill9(&url, servers);
}

/// 60 tasks submitted round-robin: never more than 6 running across the three (sampled in
/// the store all along), all complete, each claimed and run exactly once, by every instance.
fn one_queue_one_limit(url: &str, servers: &[Server]) {
    let peak = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let sampler = {
        let (url, peak, done) = (url.to_owned(), peak.clone(), done.clone());
        std::thread::spawn(move || {
            let mut samples = 0u32;
            while !done.load(Ordering::Relaxed) {
                let n = count(&url, "SELECT COUNT(*) FROM tasks WHERE status = 'running'");
                peak.fetch_max(n, Ordering::Relaxed);
                samples += 1;
            }
            samples
        })
    };
    let started = Instant::now();
    // One client session per instance, all three at once: task i goes to instance i % 3.
    std::thread::scope(|scope| {
        for (n, server) in servers.iter().enumerate() {
            scope.spawn(move || {
                let batch: Vec<_> = (0..60)
                    .filter(|i| i % 3 == n)
                    .map(|i| {
                        json!({"name": "execute_task", "arguments": {
                            "task_description": format!("echo run-{i}; sleep 0.5"),
                            "sync": false,
                        }})
                    })
                    .collect();
                for result in calls(server, "agent-a", json!(batch)) {
                    task_id(&result);
                }
            });
        }
    });
    wait_count(
        url,
        "SELECT COUNT(*) FROM tasks WHERE status = 'completed'",
        60,
        Duration::from_secs(120),
    );
    let took = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    let peak = peak.load(Ordering::Relaxed);
    eprintln!("60 tasks on 3 instances: {took:?}, peak running {peak} over {samples} samples");
    assert!(peak <= 6, "{peak} tasks ran at once; the global limit is 6");
    assert!(
        peak >= 2,
        "the instances never ran tasks side by side (peak {peak})"
    );

    // Each task was claimed once and its script ran once.
    let claims = psql(
        url,
        "SELECT COUNT(*) FROM task_events WHERE kind = 'status' \
         AND data LIKE '%\"to\":\"running\"%' GROUP BY task_id HAVING COUNT(*) <> 1",
    );
    assert!(claims.is_empty(), "tasks claimed more than once: {claims}");
    let outputs = psql(
        url,
        "SELECT message FROM task_events WHERE kind = 'output' ORDER BY message",
    );
    let mut lines: Vec<&str> = outputs.lines().collect();
    lines.dedup();
    assert_eq!(lines.len(), 60, "{outputs}");
    assert_eq!(outputs.lines().count(), 60, "a script ran twice: {outputs}");
    // Nobody holds a finished task.
    assert_eq!(
        count(url, "SELECT COUNT(*) FROM tasks WHERE owner IS NOT NULL"),
        0
    );
}

/// Three long tasks (one opted in to re-running) submitted to one instance, which is then
/// killed with SIGKILL: within the lease expiry (plus a rescuer pass) the others fail its
/// tasks as `interrupted: instance <id> lost` and re-run the opted-in one, whose old process is
/// gone first; no other task runs twice.
fn takeover_after_kill9(url: &str, mut servers: Vec<Server>) {
    let marks = tempfile::tempdir().unwrap();
    let batch: Vec<_> = [(0, false), (1, false), (2, true)]
        .into_iter()
        .map(|(i, requeue)| {
            let mark = marks.path().join(format!("m{i}"));
            // The first run sleeps; a re-run finds the mark and ends at once.
            let script = format!(
                "if [ -e {m} ]; then echo rerun-{i}; else touch {m}; echo first-{i}; sleep 60; fi",
                m = mark.display()
            );
            json!({"name": "execute_task", "arguments": {
                "task_description": script, "requeue_on_restart": requeue, "sync": false,
            }})
        })
        .collect();
    let ids: Vec<String> = calls(&servers[0], "agent-b", json!(batch))
        .iter()
        .map(task_id)
        .collect();
    let list = ids
        .iter()
        .map(|id| format!("'{id}'"))
        .collect::<Vec<_>>()
        .join(", ");
    wait_count(
        url,
        &format!("SELECT COUNT(*) FROM tasks WHERE id IN ({list}) AND status = 'running'"),
        3,
        Duration::from_secs(30),
    );
    // All three scripts started (their first line is stored).
    wait_count(
        url,
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id IN ({list}) AND message LIKE 'first-%'"
        ),
        3,
        Duration::from_secs(30),
    );
    // Whoever claimed the opted-in task is the victim; its other tasks go with it.
    let victim_id = psql(
        url,
        &format!("SELECT owner FROM tasks WHERE id = '{}'", ids[2]),
    );
    let victim_pid: u32 = psql(
        url,
        &format!("SELECT pid FROM instances WHERE id = '{victim_id}'"),
    )
    .parse()
    .unwrap();
    let held: HashMap<String, String> = psql(
        url,
        &format!("SELECT id, owner FROM tasks WHERE id IN ({list})"),
    )
    .lines()
    .map(|l| {
        let (id, owner) = l.split_once('|').unwrap();
        (id.to_owned(), owner.to_owned())
    })
    .collect();
    let at = servers
        .iter()
        .position(|s| s.child.id() == victim_pid)
        .unwrap();
    let victim = servers.remove(at);
    let _dir = victim.kill9();

    // The opted-in task is re-queued and re-run by a survivor; the others fail.
    let lost_tasks: Vec<&String> = ids.iter().filter(|id| held[*id] == victim_id).collect();
    let failed_expected = lost_tasks.iter().filter(|id| ***id != ids[2]).count() as i64;
    let interrupted = format!("interrupted: instance {victim_id} lost");
    let took = wait_count(
        url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id IN ({list}) AND status = 'failed' AND error = '{interrupted}'"
        ),
        failed_expected,
        Duration::from_secs(15),
    );
    let rerun = wait_count(
        url,
        &format!(
            "SELECT COUNT(*) FROM tasks WHERE id = '{}' AND status = 'completed'",
            ids[2]
        ),
        1,
        Duration::from_secs(15),
    );
    eprintln!(
        "takeover after kill -9: {failed_expected} failed after {took:?}, the opted-in task re-ran \
         and completed {:?} after the kill",
        took + rerun
    );
    // Within the expiry plus a rescuer pass (a heartbeat interval) and scheduling slack.
    assert!(
        took < Duration::from_millis(LEASE_EXPIRY_MS) + Duration::from_secs(3),
        "takeover took {took:?}"
    );
    let outputs = psql(
        url,
        &format!(
            "SELECT message FROM task_events WHERE task_id = '{}' AND kind = 'output' ORDER BY seq",
            ids[2]
        ),
    );
    assert_eq!(
        outputs, "first-2\nrerun-2",
        "the opted-in task ran once more, no more"
    );
    let requeued = count(
        url,
        &format!(
            "SELECT COUNT(*) FROM task_events WHERE task_id = '{}' AND message = 're-queued: instance {victim_id} lost'",
            ids[2]
        ),
    );
    assert_eq!(requeued, 1);
    // The lost runs' processes did not survive (the re-run did not run beside its old run).
    for id in &lost_tasks {
        let env_mark = format!("HANDOFF_TASK_ID={id}");
        let survivors = processes_with_env(&env_mark);
        assert!(
            survivors.is_empty(),
            "the lost run of {id} survived: pids {survivors:?}"
        );
    }
    // Tasks of the survivors were left alone.
    for id in ids.iter().filter(|id| held[*id] != victim_id) {
        let status = psql(url, &format!("SELECT status FROM tasks WHERE id = '{id}'"));
        assert_eq!(status, "running", "{id} of a live instance was touched");
    }
    // The victim is no longer registered; the survivors are.
    assert_eq!(count(url, "SELECT COUNT(*) FROM instances"), 2);
    drop(servers);
    assert_eq!(
        count(url, "SELECT COUNT(*) FROM instances"),
        0,
        "a clean shutdown deregisters"
    );
}

/// Pids of the processes whose environment holds `entry` (`NAME=value`).
pub(super) fn processes_with_env(entry: &str) -> Vec<u32> {
    let mut found = Vec::new();
    for proc in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = proc.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if let Ok(environ) = std::fs::read(proc.path().join("environ"))
            && environ.split(|b| *b == 0).any(|e| e == entry.as_bytes())
        {
            found.push(pid);
        }
    }
    found
}

/// `handoff bench --instances` runs (figures are not judged here): a row per setup, SQLite first,
/// and a takeover time for several instances.
#[test]
fn the_scale_benchmark_runs() {
    let server = std::env::var("HANDOFF_TEST_DATABASE_URL")
        .expect("HANDOFF_TEST_DATABASE_URL (scripts/postgres/up.sh)");
    let out = Command::new(super::harness::BIN)
        .args([
            "bench",
            "--instances",
            "2",
            "--tasks",
            "20",
            "--clients",
            "2",
        ])
        .args(["--database-url", server.as_str()])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<&str> = stdout.lines().collect();
    assert!(rows[0].starts_with("setup"), "{stdout}");
    assert!(rows[1].starts_with("SQLite, 1 instance"), "{stdout}");
    assert!(rows[2].starts_with("PostgreSQL, 2 instances"), "{stdout}");
    assert!(rows[2].contains(" s "), "a takeover time: {stdout}");
    // The lock wait per submission, and each instance's share of the tasks.
    let spread: Vec<f64> = rows[2]
        .split_whitespace()
        .filter_map(|w| w.strip_suffix('%'))
        .map(|p| p.parse().unwrap())
        .collect();
    assert!(
        (1..=2).contains(&spread.len()),
        "a share per instance that ran: {stdout}"
    );
    assert!(
        (spread.iter().sum::<f64>() - 100.0).abs() <= 2.0,
        "{stdout}"
    );
}

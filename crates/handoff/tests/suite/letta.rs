//! The Letta integration end to end: the real `handoff` binary, the real `command` executor, a
//! REAL Letta 0.16.8 server (`scripts/letta/up.sh`; `scripts/test.sh` starts it and exports
//! `HANDOFF_TEST_LETTA_URL`) with a real agent, and a recording, fault-injecting proxy between
//! the two.

use std::{sync::OnceLock, time::Duration};

use serde_json::{Value, json};

use super::{
    harness::{Server, metric, start, start_in},
    letta_proxy::{Fault, Proxy, Rule, Seen},
    mcp::{call, history, ok, task_id, wait_status_for},
    wait::{Pace, wait_paced},
};

/// The workspace block limit the tests configure.
const LIMIT: usize = 3_000;

/// The safety net of a wait on what the real, shared Letta does (an agent's turn, a block
/// write): with the whole suite running beside it on two cores, its turns took over a minute.
pub(super) const LETTA_PATIENCE: Duration = Duration::from_secs(240);

/// The Letta server's base URL (see `handoff_letta::testing::letta_url`).
pub(super) fn letta_url() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(handoff_letta::testing::letta_url)
}

/// One HTTP call to Letta; the status and the JSON answer (`null` when not JSON).
fn letta(method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    letta_call(method, path, body, Duration::from_secs(120))
}

/// One HTTP call to Letta taking at most `timeout`. A read the shared Letta answers with a 5xx
/// is asked again, a few times: under the suite's load it briefly fails reads ("An unknown
/// error occurred"), and asking again changes nothing. Writes are sent once.
pub(super) fn letta_call(
    method: &str,
    path: &str,
    body: Option<Value>,
    timeout: Duration,
) -> (u16, Value) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let attempts = if method == "GET" { 5 } else { 1 };
    let send = || {
        runtime.block_on(async {
            let mut request = handoff_letta::testing::http()
                .request(
                    reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
                    format!("{}{path}", letta_url()),
                )
                .timeout(timeout);
            if let Some(body) = &body {
                request = request.json(body);
            }
            let answer = request.send().await.unwrap();
            let status = answer.status().as_u16();
            let text = answer.text().await.unwrap();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        })
    };
    let mut made = 0;
    // Asked again a second apart; the limit only covers the attempts' own timeouts.
    wait_paced(
        &format!("an answer to {method} {path}"),
        (timeout + Duration::from_secs(1)) * attempts,
        Pace::every(Duration::from_secs(1)),
        || {
            made += 1;
            let answered = send();
            if answered.0 < 500 || made == attempts {
                Ok(answered)
            } else {
                Err(answered.0)
            }
        },
    )
}

/// A new Letta agent whose model is the scripted model server behind Letta.
pub(super) fn create_agent(name: &str) -> String {
    let (status, agent) = letta(
        "POST",
        "/v1/agents/",
        Some(handoff_letta::testing::agent_request(name)),
    );
    assert_eq!(status, 200, "creating a Letta agent: {agent}");
    agent["id"].as_str().unwrap().to_owned()
}

/// The agent's core-memory block with `label`, if attached.
fn attached_block(agent: &str, label: &str) -> Option<Value> {
    let (status, blocks) = letta(
        "GET",
        &format!("/v1/agents/{agent}/core-memory/blocks"),
        None,
    );
    assert_eq!(status, 200, "{blocks}");
    blocks
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["label"] == label)
        .cloned()
}

/// How many of the agent's messages are Handoff's notification about `task`.
pub(super) fn notifications(agent: &str, task: &str) -> usize {
    let (status, messages) = letta(
        "GET",
        &format!("/v1/agents/{agent}/messages?limit=200"),
        None,
    );
    assert_eq!(status, 200, "{messages}");
    count_notifications(&messages, task)
}

/// How many of an agent's `messages` (Letta's list) are Handoff's notification about `task`.
pub fn count_notifications(messages: &Value, task: &str) -> usize {
    let header = format!("[Handoff] Task {task} ");
    messages
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["message_type"] != "assistant_message" && m.to_string().contains(&header))
        .count()
}

/// Polls `check` every 250 ms (Letta is shared: not faster) until it returns `Some`, for at
/// most `limit`.
pub(super) fn eventually<T>(what: &str, limit: Duration, check: impl FnMut() -> Option<T>) -> T {
    wait_paced(what, limit, Pace::every(Duration::from_millis(250)), check)
}

/// Waits until `agent` has no active run: whatever was sent to it is in its history now (an
/// async message is stored only when its run ends).
pub(super) fn wait_runs_ended(agent: &str) {
    eventually("the agent's runs to end", LETTA_PATIENCE, || {
        let (status, runs) = letta(
            "GET",
            &format!("/v1/runs/?agent_id={agent}&active=true"),
            None,
        );
        assert_eq!(status, 200, "{runs}");
        (runs.as_array().is_some_and(Vec::is_empty)).then_some(())
    });
}

/// Waits until `server`'s store owes no completion notification: every one owed was sent or
/// given up, none is left to send later.
pub(super) fn wait_no_notification_owed(server: &Server) {
    eventually("no notification owed", LETTA_PATIENCE, || {
        let owed = metric(server, r#"handoff_letta_pending{work="notifications"}"#);
        (owed == 0.0).then_some(())
    });
}

/// Waits until `done` holds for every id; fails only when none more became done for `stall`.
/// `done` answers, for the ids still pending, which of them are done now.
fn while_progressing(
    what: &str,
    ids: &[String],
    stall: Duration,
    mut done: impl FnMut(&[String]) -> Vec<bool>,
) {
    let mut pending: Vec<String> = ids.to_vec();
    while !pending.is_empty() {
        let before = pending.len();
        // Each wait is for one more id done; only a stall of `stall` fails.
        let progress = format!("progress in {what}");
        wait_paced(
            &progress,
            stall,
            Pace::every(Duration::from_millis(250)),
            || {
                let answers = done(&pending);
                assert_eq!(answers.len(), pending.len(), "one answer per pending id");
                let mut answers = answers.into_iter();
                pending.retain(|_| !answers.next().unwrap_or(false));
                if pending.len() < before {
                    Ok(())
                } else {
                    Err(format!(
                        "{} of {} pending: {pending:?}",
                        pending.len(),
                        ids.len()
                    ))
                }
            },
        );
    }
}

/// Handoff with the script executor and the Letta settings shortened for tests.
pub(super) fn env(
    letta: &str,
    extra: &[(&'static str, &'static str)],
) -> Vec<(&'static str, String)> {
    let mut all: Vec<(&'static str, String)> = vec![
        (
            "HANDOFF_COMMAND_ARGV",
            r#"["bash", "-c", "{prompt}"]"#.into(),
        ),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".into()),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument".into()),
        ("HANDOFF_LETTA_API_URL", letta.to_owned()),
        ("HANDOFF_LETTA_API_TOKEN", "test-token".into()),
        ("HANDOFF_LETTA_BLOCK_LIMIT", LIMIT.to_string()),
        ("HANDOFF_LETTA_SWEEP_INTERVAL_SECS", "1".into()),
        ("HANDOFF_COMPLETION_POLICY", "none".into()),
    ];
    all.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    all
}

/// Submits `arguments` to `execute_task` as `agent`; the task id.
fn submit(server: &Server, agent: &str, arguments: Value) -> String {
    task_id(&call(server, agent, "execute_task", arguments))
}

/// Submits `arguments` as `agent` and waits, up to `within`, for the task to complete; its id.
fn run_to_completion(server: &Server, agent: &str, arguments: Value, within: Duration) -> String {
    let id = submit(server, agent, arguments);
    wait_status_for(server, agent, &id, &["completed"], within);
    id
}

fn pairs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

pub(super) fn start_with(env: &[(&'static str, String)]) -> Server {
    start(&pairs(env))
}

/// Starts Handoff again in a killed server's directory.
pub(super) fn restart_with(dir: tempfile::TempDir, env: &[(&'static str, String)]) -> Server {
    start_in(dir, &pairs(env))
}

/// Task `id`'s directory, as `agent` reads it.
fn task_workdir(server: &Server, agent: &str, id: &str) -> std::path::PathBuf {
    let status = call(server, agent, "get_task_status", json!({"task_id": id}));
    std::path::PathBuf::from(ok(&status)["workdir"].as_str().unwrap())
}

/// A block's value, parsed.
fn value_of(block: &Value) -> Option<Value> {
    serde_json::from_str(block["value"].as_str()?).ok()
}

/// A block's value read by its id (works after detach).
fn value_by_id(block_id: &str) -> Option<Value> {
    value_of(&letta("GET", &format!("/v1/blocks/{block_id}"), None).1)
}

/// Every block value Handoff sent (creates and updates) for `label`'s block.
/// When each write of the block's value arrived at the proxy.
fn block_writes(seen: &[Seen], block_id: &str) -> Vec<std::time::Instant> {
    seen.iter()
        .filter(|s| is_block_write(s, block_id))
        .map(|s| s.at)
        .collect()
}

fn is_block_write(s: &Seen, block_id: &str) -> bool {
    (s.method == "POST" && s.path.starts_with("/v1/blocks/"))
        || (s.method == "PATCH" && s.path.starts_with(&format!("/v1/blocks/{block_id}")))
}

fn values_sent(seen: &[Seen], block_id: &str) -> Vec<String> {
    seen.iter()
        .filter(|s| is_block_write(s, block_id))
        .filter_map(|s| serde_json::from_str::<Value>(&s.body).ok())
        .filter_map(|b| b["value"].as_str().map(str::to_owned))
        .collect()
}

/// Nothing Handoff sends to Letta is over the block limit: values are within it, messages
/// within a few KiB.
fn assert_nothing_oversized(seen: &[Seen]) {
    for s in seen {
        if let Ok(body) = serde_json::from_str::<Value>(&s.body) {
            if let Some(value) = body["value"].as_str() {
                assert!(
                    value.chars().count() <= LIMIT,
                    "{} {}: {} chars",
                    s.method,
                    s.path,
                    value.len()
                );
            }
            for m in body["messages"].as_array().into_iter().flatten() {
                let text = m["content"].as_str().unwrap_or_default();
                assert!(text.len() <= 2_048, "notification of {} bytes", text.len());
            }
        }
        assert!(
            s.body.len() <= LIMIT + 2_048,
            "{} {}: {} bytes",
            s.method,
            s.path,
            s.body.len()
        );
    }
}

#[test]
fn a_task_block_is_kept_current_finished_detached_and_deleted_across_a_restart() {
    let agent = create_agent("lifecycle");
    let proxy = Proxy::start(letta_url(), Vec::new());
    let env = env(
        &proxy.url,
        &[
            // The crash below comes right after the final block write, well before this.
            ("HANDOFF_LETTA_DETACH_DELAY_SECS", "40"),
            ("HANDOFF_LETTA_BLOCK_RETENTION_SECS", "3"),
        ],
    );
    let server = start_with(&env);
    // It ends only when the test has seen it running, however slowly Letta takes the writes.
    let id = submit(
        &server,
        &agent,
        json!({"task_description": "for i in $(seq 1 12); do echo step $i; sleep 0.4; done; \
                                     while [ ! -e release ]; do sleep 0.1; done"}),
    );
    let label = format!("handoff_{id}");

    // Attached with the right label, description and limit, and running.
    let block = eventually("the block to be attached", LETTA_PATIENCE, || {
        attached_block(&agent, &label)
    });
    assert_eq!(block["description"], handoff_letta::BLOCK_DESCRIPTION);
    assert_eq!(block["limit"], LIMIT);
    let block_id = block["id"].as_str().unwrap().to_owned();
    let first = value_of(&block).unwrap();
    assert_eq!(first["version"], 1);
    assert_eq!(first["task_id"], id.as_str());

    // Updated while it runs: later steps show up while the status is still running.
    eventually("a running update", LETTA_PATIENCE, || {
        let v = value_by_id(&block_id)?;
        (v["status"] == "running" && v.to_string().contains("step 5")).then_some(())
    });
    std::fs::write(task_workdir(&server, &agent, &id).join("release"), "").unwrap();

    // The final write says completed.
    wait_status_for(&server, &agent, &id, &["completed"], LETTA_PATIENCE);
    eventually("the final state in the block", LETTA_PATIENCE, || {
        let v = value_by_id(&block_id)?;
        (v["status"] == "completed").then_some(())
    });

    // A crash before the detach is due: the schedule is stored, so the next process does it;
    // and the agent is told once, whether the notification went out before the crash or after.
    assert!(
        attached_block(&agent, &label).is_some(),
        "detached too early"
    );
    let dir = server.kill9();
    let server = restart_with(dir, &env);
    eventually("the notification", LETTA_PATIENCE, || {
        (notifications(&agent, &id) == 1).then_some(())
    });
    eventually("the detach", LETTA_PATIENCE, || {
        attached_block(&agent, &label).is_none().then_some(())
    });
    // Detached blocks stay readable by id until retention ends; then they are deleted.
    eventually("the delete", LETTA_PATIENCE, || {
        (letta("GET", &format!("/v1/blocks/{block_id}"), None).0 == 404).then_some(())
    });
    // Still one notification after the restart (the restarted process owes none, and all that
    // was sent has landed), and the history never depended on the block.
    wait_no_notification_owed(&server);
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 1);
    let events = history(&server, &agent, &id)["events"].clone();
    let text = events.to_string();
    assert!(text.contains("step 12"), "{text}");
    assert!(text.contains("workspace block"), "{text}");
    assert!(text.contains("notification delivered"), "{text}");

    let seen = proxy.seen();
    assert_nothing_oversized(&seen);
    assert!(
        seen.iter().all(|s| s.method != "POST"
            || !s.path.contains("/messages")
            || s.path.contains(&agent)),
        "messages go to the task's own agent"
    );
    assert!(
        seen.iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer test-token")),
        "every call carries the bearer token"
    );
}

#[test]
fn five_thousand_events_make_few_block_writes_and_no_notification_when_opted_out() {
    let agent = create_agent("busy");
    let proxy = Proxy::start(letta_url(), Vec::new());
    // Events of at most 16 bytes hold one line each ("event 12.34"), so the 5,000 lines stay
    // 5,000 events instead of being joined into a few.
    let server = start_with(&env(
        &proxy.url,
        &[("HANDOFF_OUTPUT_EVENT_MAX_BYTES", "16")],
    ));
    // 100 bursts of 50 lines, paced by the clock: 5,000 output events in 10 s, however
    // loaded the machine is (the task's own `time.sleep`, not a wait of the test).
    let script = r#"python3 - <<'EOF'
import sys, time
start = time.time()
for burst in range(100):
    sys.stdout.write("".join(f"event {burst}.{i}\n" for i in range(50)))
    sys.stdout.flush()
    time.sleep(max(0.0, start + (burst + 1) * 0.1 - time.time()))
EOF"#;
    let id = run_to_completion(
        &server,
        &agent,
        json!({"task_description": script, "notify": false}),
        LETTA_PATIENCE,
    );
    let label = format!("handoff_{id}");
    let block = eventually("the final write", LETTA_PATIENCE, || {
        let b = attached_block(&agent, &label)?;
        let v = value_of(&b)?;
        (v["status"] == "completed").then_some(b)
    });
    let total = ok(&call(
        &server,
        &agent,
        "get_task_history",
        json!({"task_id": id, "events_limit": 1}),
    ))["total_events"]
        .as_u64()
        .unwrap();
    assert!(total >= 5_000, "{total} events");

    let block_id = block["id"].as_str().unwrap();
    let seen = proxy.seen();
    let writes = values_sent(&seen, block_id);
    // At most one write per second (letta.min_update_interval_ms), plus one per status change
    // (queued, running, completed) and the first: counted against the span the writes took,
    // which a loaded machine stretches, never against a fixed number.
    let at = block_writes(&seen, block_id);
    let span = at
        .last()
        .zip(at.first())
        .map_or(Duration::ZERO, |(last, first)| last.duration_since(*first));
    let allowed = usize::try_from(span.as_secs()).unwrap() + 1 + 4;
    eprintln!(
        "{} block writes for {total} events over {span:?}",
        writes.len()
    );
    assert!(
        (2..=allowed).contains(&writes.len()),
        "{} block writes for {total} events over {span:?}",
        writes.len()
    );
    assert_nothing_oversized(&seen);
    let last: Value = serde_json::from_str(writes.last().unwrap()).unwrap();
    assert_eq!(last["status"], "completed");
    assert!(
        last["recent_events"][0]["pruned"].as_u64().unwrap() > 4_000,
        "{last}"
    );

    // notify: false — nothing arrives, and nothing was sent: a task that ended after it is
    // notified, and all that was sent has landed.
    let later = run_to_completion(
        &server,
        &agent,
        json!({"task_description": "echo later"}),
        LETTA_PATIENCE,
    );
    eventually("the later task's notification", LETTA_PATIENCE, || {
        (notifications(&agent, &later) == 1).then_some(())
    });
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 0);
    assert!(
        !seen
            .iter()
            .any(|s| s.path.contains("/messages") && s.method == "POST")
    );
}

#[test]
fn a_one_mebibyte_description_never_reaches_letta_whole() {
    let agent = create_agent("huge");
    let proxy = Proxy::start(letta_url(), Vec::new());
    let server = start_with(&env(&proxy.url, &[]));
    let description = format!("echo hello\n# {}", "x".repeat(1 << 20));
    let result = call(
        &server,
        &agent,
        "execute_task",
        json!({"task_description": description}),
    );
    if result["is_error"] == true {
        // Refused outright: then Letta heard nothing about it (Handoff's start-up health check
        // aside).
        let seen = proxy.seen();
        assert!(seen.iter().all(|s| s.path == "/v1/health/"), "{seen:?}");
        return;
    }
    let id = task_id(&result);
    wait_status_for(
        &server,
        &agent,
        &id,
        &["completed", "failed"],
        LETTA_PATIENCE,
    );
    eventually("the notification", LETTA_PATIENCE, || {
        (notifications(&agent, &id) == 1).then_some(())
    });
    let seen = proxy.seen();
    assert_nothing_oversized(&seen);
    let long_run = "x".repeat(1_000);
    assert!(seen.iter().all(|s| !s.body.contains(&long_run)));
}

#[test]
fn letta_faults_still_end_with_the_final_state_and_one_notification() {
    let agent = create_agent("faults");
    let stall = Fault::Stall(Duration::from_secs(4));
    let rule = |method, path, times, fault| Rule {
        method,
        path,
        times,
        fault,
    };
    let proxy = Proxy::start(
        letta_url(),
        vec![
            // The create lands but its answer is lost: the block must be found, not duplicated.
            rule("POST", "/v1/blocks/", 1, Fault::DropAfter),
            rule("GET", "/v1/blocks/?label=", 1, Fault::Status(503)),
            rule(
                "PATCH",
                "/core-memory/blocks/attach/",
                1,
                Fault::Status(409),
            ),
            rule(
                "PATCH",
                "/core-memory/blocks/attach/",
                1,
                Fault::Status(502),
            ),
            rule("PATCH", "/v1/blocks/block-", 3, Fault::Status(503)),
            rule("PATCH", "/v1/blocks/block-", 1, stall),
            rule("PATCH", "/v1/blocks/block-", 1, Fault::DropBefore),
            rule("PATCH", "/v1/blocks/block-", 1, Fault::DropAfter),
            rule("GET", "/messages?", 2, Fault::Status(500)),
            // The notification lands but its answer is lost: it must not be sent twice.
            rule("POST", "/messages/async", 1, Fault::DropAfter),
            rule(
                "PATCH",
                "/core-memory/blocks/detach/",
                2,
                Fault::Status(502),
            ),
            rule("DELETE", "/v1/blocks/", 1, Fault::DropAfter),
        ],
    );
    let server = start_with(&env(
        &proxy.url,
        &[
            ("HANDOFF_LETTA_REQUEST_TIMEOUT_SECS", "2"),
            ("HANDOFF_LETTA_MAX_RETRIES", "2"),
            ("HANDOFF_LETTA_DETACH_DELAY_SECS", "6"),
            ("HANDOFF_LETTA_BLOCK_RETENTION_SECS", "2"),
        ],
    ));
    let id = run_to_completion(
        &server,
        &agent,
        json!({"task_description": "for i in $(seq 1 10); do echo tick $i; sleep 0.3; done"}),
        LETTA_PATIENCE,
    );
    let label = format!("handoff_{id}");
    let block = eventually("the final state despite faults", LETTA_PATIENCE, || {
        let b = attached_block(&agent, &label)?;
        let v = value_of(&b)?;
        (v["status"] == "completed" && v.to_string().contains("tick 10")).then_some(b)
    });
    let (_, same_label) = letta("GET", &format!("/v1/blocks/?label={label}"), None);
    assert_eq!(
        same_label.as_array().unwrap().len(),
        1,
        "one block per task: {same_label}"
    );
    eventually("the notification despite faults", LETTA_PATIENCE, || {
        (notifications(&agent, &id) >= 1).then_some(())
    });
    let block_id = block["id"].as_str().unwrap().to_owned();
    eventually("the delete despite faults", LETTA_PATIENCE, || {
        (letta("GET", &format!("/v1/blocks/{block_id}"), None).0 == 404).then_some(())
    });
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 1, "exactly one notification");
    let seen = proxy.seen();
    assert_nothing_oversized(&seen);
    let faults = seen.iter().filter(|s| s.fault.is_some()).count();
    assert!(faults >= 10, "only {faults} faults were injected");
    assert!(
        seen.iter().all(|s| s.path.starts_with("/v1/")),
        "only Letta's V1 routes"
    );
}

#[test]
fn many_busy_tasks_stay_within_the_letta_budget() {
    let agent = create_agent("pressure");
    let proxy = Proxy::start(letta_url(), Vec::new());
    let server = start_with(&env(
        &proxy.url,
        &[
            ("HANDOFF_MAX_CONCURRENT_TASKS", "30"),
            ("HANDOFF_MAX_CONCURRENT_PER_AGENT", "30"),
            ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
            ("HANDOFF_LETTA_MAX_CONCURRENT_REQUESTS", "2"),
            ("HANDOFF_LETTA_REQUESTS_PER_SECOND", "15"),
        ],
    ));
    // 30 tasks, each printing a line every 50 ms for 3 s.
    let submit: Vec<Value> = (0..30)
        .map(|i| {
            json!({"name": "execute_task", "arguments": {
                "task_description": format!("for j in $(seq 1 60); do echo task {i} line $j; sleep 0.05; done"),
                "notify": false,
            }})
        })
        .collect();
    let ids: Vec<String> = super::mcp::calls(&server, &agent, Value::Array(submit))
        .iter()
        .map(task_id)
        .collect();
    // A loaded machine may take many times longer than an idle one: the waits below fail only
    // when nothing moves for a while, not after a budget sized for an idle machine.
    let stall = Duration::from_secs(120);
    while_progressing("every task to complete", &ids, stall, |pending| {
        let reads = pending
            .iter()
            .map(|id| json!({"name": "get_task_status", "arguments": {"task_id": id}}))
            .collect();
        super::mcp::calls(&server, &agent, Value::Array(reads))
            .iter()
            .map(|status| ok(status)["status"] == "completed")
            .collect()
    });
    // Every block still ends with its final state, however long the queue at Handoff's side.
    while_progressing("every final write", &ids, stall, |pending| {
        let (status, blocks) = letta(
            "GET",
            &format!("/v1/agents/{agent}/core-memory/blocks"),
            None,
        );
        assert_eq!(status, 200, "{blocks}");
        let blocks = blocks.as_array().cloned().unwrap_or_default();
        pending
            .iter()
            .map(|id| {
                let label = format!("handoff_{id}");
                blocks
                    .iter()
                    .find(|b| b["label"] == label)
                    .and_then(value_of)
                    .is_some_and(|v| v["status"] == "completed")
            })
            .collect()
    });
    let seen = proxy.seen();
    assert!(
        proxy.most_in_flight() <= 2,
        "{} calls in flight at once",
        proxy.most_in_flight()
    );
    // The budget admits a one-second burst, then 15 per second: no one-second window holds
    // more than twice the rate.
    let busiest = seen
        .iter()
        .map(|a| {
            seen.iter()
                .filter(|b| b.at >= a.at && b.at < a.at + Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(busiest <= 30, "{busiest} calls started within one second");
    assert!(seen.len() > 30 * 3, "only {} calls", seen.len());
}

#[test]
fn a_notification_in_flight_at_a_crash_is_not_sent_twice() {
    let agent = create_agent("crash");
    // The notification reaches Letta but its answer is lost; Handoff dies before retrying. The
    // scripted model holds the agent's reply to it for 8 s (scripts/letta/model-script.json),
    // and Letta stores an async message only when its run ends: the next process starts while
    // the message is not yet in the agent's history.
    let proxy = Proxy::start(
        letta_url(),
        vec![Rule {
            method: "POST",
            path: "/messages/async",
            times: 1,
            fault: Fault::DropAfter,
        }],
    );
    let as_user = [("HANDOFF_LETTA_NOTIFY_ROLE", "user")];
    let first = env(&proxy.url, &as_user);
    let server = start_with(&first);
    let id = submit(
        &server,
        &agent,
        json!({"task_description": "echo HANDOFF-SLOW-REPLY done"}),
    );
    eventually("the notification attempt", LETTA_PATIENCE, || {
        proxy
            .seen()
            .iter()
            .any(|s| s.path.ends_with("/messages/async"))
            .then_some(())
    });
    let dir = server.kill9();

    // The next process waits for the agent's run, finds the message by its otid and does not
    // send another.
    let server = restart_with(dir, &env(letta_url(), &as_user));
    eventually("the resumed writer's verdict", LETTA_PATIENCE, || {
        history(&server, &agent, &id)["events"]
            .to_string()
            .contains("notification delivered")
            .then_some(())
    });
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 1);
}

#[test]
fn notifications_work_without_workspace_blocks() {
    let agent = create_agent("noblocks");
    let proxy = Proxy::start(letta_url(), Vec::new());
    let server = start_with(&env(
        &proxy.url,
        &[("HANDOFF_LETTA_WORKSPACE_BLOCKS", "false")],
    ));
    let id = run_to_completion(
        &server,
        &agent,
        json!({"task_description": "echo without a block"}),
        LETTA_PATIENCE,
    );
    eventually("the notification", LETTA_PATIENCE, || {
        (notifications(&agent, &id) == 1).then_some(())
    });
    assert!(attached_block(&agent, &format!("handoff_{id}")).is_none());
    assert!(
        !proxy.seen().iter().any(|s| s.path.contains("blocks")),
        "no block calls at all"
    );
}

/// The agent's runs (newest first), as Letta lists them.
fn runs_of(agent: &str) -> Vec<Value> {
    let (status, runs) = letta("GET", &format!("/v1/runs/?agent_id={agent}&limit=50"), None);
    assert_eq!(status, 200, "{runs}");
    runs.as_array().cloned().unwrap_or_default()
}

/// A run's time field as Unix ms.
fn run_time(run: &Value, field: &str) -> i64 {
    let text = run[field]
        .as_str()
        .unwrap_or_else(|| panic!("{field}: {run}"));
    handoff_letta::testing::time_millis(text).unwrap_or_else(|| panic!("{field}: {run}"))
}

#[test]
fn a_busy_agent_is_notified_after_its_run_never_beside_it() {
    let agent = create_agent("busy");
    // The agent's own run, whose model reply the test holds until it creates `release`.
    let hold = tempfile::tempdir().unwrap();
    let release = hold.path().join("release");
    let text = format!("HANDOFF-HOLD-UNTIL {}", release.display());
    let (status, run) = letta(
        "POST",
        &format!("/v1/agents/{agent}/messages/async"),
        Some(json!({"messages": [{"role": "user", "content": text}]})),
    );
    assert_eq!(status, 200, "{run}");
    let busy = run["id"].as_str().unwrap().to_owned();

    let server = start_with(&env(letta_url(), &[]));
    let id = run_to_completion(
        &server,
        &agent,
        json!({"task_description": "echo done while the agent is busy"}),
        LETTA_PATIENCE,
    );
    eventually("the notification to wait", LETTA_PATIENCE, || {
        history(&server, &agent, &id)["events"]
            .to_string()
            .contains("the notification waits for it to end")
            .then_some(())
    });
    let runs: Vec<String> = runs_of(&agent)
        .iter()
        .map(|r| r["id"].as_str().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(
        runs,
        std::slice::from_ref(&busy),
        "nothing sent while the agent's run goes on"
    );

    std::fs::write(&release, "").unwrap();
    eventually("the notification", LETTA_PATIENCE, || {
        history(&server, &agent, &id)["events"]
            .to_string()
            .contains("notification delivered")
            .then_some(())
    });
    wait_runs_ended(&agent);
    let runs = runs_of(&agent);
    assert_eq!(
        runs.len(),
        2,
        "the agent's run and the notification's: {runs:#?}"
    );
    let ended = runs.iter().find(|r| r["id"] == busy.as_str()).unwrap();
    let notified = runs.iter().find(|r| r["id"] != busy.as_str()).unwrap();
    assert!(
        run_time(notified, "created_at") >= run_time(ended, "completed_at"),
        "the notification's run began after the agent's run ended: {runs:#?}"
    );
    assert_eq!(notifications(&agent, &id), 1);
}

/// A follow-up round of a task whose block was already detached and deleted: the block is made
/// again and follows the round to its end, and the round's end is notified once more.
#[test]
fn a_follow_up_round_brings_the_block_back_and_is_notified_again() {
    let agent = create_agent("followup");
    let proxy = Proxy::start(letta_url(), Vec::new());
    let server = start_with(&env(
        &proxy.url,
        &[
            ("HANDOFF_LETTA_DETACH_DELAY_SECS", "1"),
            ("HANDOFF_LETTA_BLOCK_RETENTION_SECS", "1"),
        ],
    ));
    // Each round runs the prompt's first line (the description) and stops there.
    let id = run_to_completion(
        &server,
        &agent,
        json!({"task_description": "echo round done; exit 0"}),
        LETTA_PATIENCE,
    );
    let label = format!("handoff_{id}");
    eventually("the first round notified", LETTA_PATIENCE, || {
        (notifications(&agent, &id) == 1).then_some(())
    });
    eventually("the first block gone", LETTA_PATIENCE, || {
        attached_block(&agent, &label).is_none().then_some(())
    });
    wait_no_notification_owed(&server);

    let sent = call(
        &server,
        &agent,
        "send_task_message",
        json!({"task_id": id, "message": "once more, please"}),
    );
    assert!(
        ok(&sent)["note"]
            .as_str()
            .is_some_and(|n| n.contains("follow-up round 2")),
        "{sent}"
    );
    // The new round's block reaches the round's end: what Handoff wrote to Letta, read from the
    // proxy, so the block's short life (1 s after the end) cannot hide it.
    eventually(
        "the second round's final state in a block",
        LETTA_PATIENCE,
        || {
            proxy
                .seen()
                .iter()
                .filter_map(|s| serde_json::from_str::<Value>(&s.body).ok())
                .filter_map(|body| serde_json::from_str::<Value>(body["value"].as_str()?).ok())
                .any(|v| {
                    v["task_id"] == id.as_str() && v["status"] == "completed" && v["round"] == 2
                })
                .then_some(())
        },
    );
    eventually("the second round notified", LETTA_PATIENCE, || {
        (notifications(&agent, &id) == 2).then_some(())
    });
}

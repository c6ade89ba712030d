//! Against the REAL Letta server (see `letta.rs`): the integration's counters in `/metrics`
//! move as it works, and a task whose final result went back in its `execute_task {sync:
//! true}` call gets no notification unless `letta.notify_sync` asks for one — while a sync
//! call that stopped waiting before the task ended still leaves one owed.

use std::time::Duration;

use serde_json::{Value, json};

use super::{
    harness::{Server, metric},
    letta::{
        LETTA_PATIENCE, create_agent, env, eventually, letta_url, notifications, restart_with,
        start_with, wait_runs_ended,
    },
    letta_proxy::{Fault, Proxy, Rule},
    mcp::{call, history, ok, task_id, wait_status_for},
};

/// Submits a `sync` task as `agent`; the call's result.
fn submit_sync(server: &Server, agent: &str, script: &str) -> Value {
    let result = call(
        server,
        agent,
        "execute_task",
        json!({"task_description": script, "sync": true}),
    );
    ok(&result).clone()
}

/// Waits until the task's history holds a Letta note with `text`.
fn wait_note(server: &Server, agent: &str, id: &str, text: &str) {
    eventually(text, LETTA_PATIENCE, || {
        history(server, agent, id)["events"]
            .to_string()
            .contains(text)
            .then_some(())
    });
}

#[test]
fn the_letta_counters_move_as_a_task_is_written_and_notified() {
    let agent = create_agent("metrics");
    let server = start_with(&env(letta_url(), &[]));
    assert_eq!(
        metric(&server, "handoff_letta_notifications_sent_total"),
        0.0
    );
    let id = task_id(&call(
        &server,
        &agent,
        "execute_task",
        json!({"task_description": "echo counted"}),
    ));
    wait_status_for(&server, &agent, &id, &["completed"], LETTA_PATIENCE);
    wait_note(&server, &agent, &id, "notification delivered");

    assert!(metric(&server, "handoff_letta_block_writes_total") >= 1.0);
    assert_eq!(
        metric(&server, "handoff_letta_notifications_sent_total"),
        1.0
    );
    assert_eq!(
        metric(&server, "handoff_letta_notification_latency_seconds_count"),
        1.0
    );
    assert_eq!(
        metric(&server, "handoff_letta_notifications_skipped_total"),
        0.0
    );
    // Nothing owed but the detach, a minute after the end (letta.detach_delay_secs).
    let pending = |work: &str| {
        metric(
            &server,
            &format!("handoff_letta_pending{{work=\"{work}\"}}"),
        )
    };
    assert_eq!(pending("notifications"), 0.0);
    assert_eq!(pending("block_writes"), 0.0);
    assert_eq!(pending("detaches"), 1.0);
    assert_eq!(pending("deletes"), 0.0);
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 1);
}

#[test]
fn a_result_returned_in_the_sync_call_is_not_notified_by_default() {
    let agent = create_agent("sync-quiet");
    let server = start_with(&env(letta_url(), &[]));
    let result = submit_sync(&server, &agent, "echo answered in the call");
    assert_eq!(result["status"], "completed", "{result}");
    let id = result["task_id"].as_str().unwrap().to_owned();

    wait_note(&server, &agent, &id, "no completion notification");
    assert_eq!(
        metric(&server, "handoff_letta_notifications_skipped_total"),
        1.0
    );
    assert_eq!(
        metric(&server, "handoff_letta_notifications_sent_total"),
        0.0
    );
    assert_eq!(
        metric(&server, "handoff_letta_pending{work=\"notifications\"}"),
        0.0
    );
    assert_eq!(notifications(&agent, &id), 0);

    // A sync call that gave up waiting before the task ended leaves the notification owed.
    let server = start_with(&env(letta_url(), &[("HANDOFF_SYNC_WAIT_MS", "300")]));
    let result = submit_sync(&server, &agent, "sleep 2; echo after the call");
    assert!(
        ["queued", "running"].contains(&result["status"].as_str().unwrap()),
        "{result}"
    );
    let id = result["task_id"].as_str().unwrap().to_owned();
    wait_note(&server, &agent, &id, "notification delivered");
    // Letta stores an async message when the agent's run for it ends, not when it accepts it.
    wait_runs_ended(&agent);
    assert_eq!(notifications(&agent, &id), 1);
}

#[test]
fn notify_sync_notifies_once_after_a_result_returned_in_the_call() {
    let agent = create_agent("sync-notified");
    let server = start_with(&env(letta_url(), &[("HANDOFF_LETTA_NOTIFY_SYNC", "true")]));
    let result = submit_sync(&server, &agent, "echo answered and told");
    assert_eq!(result["status"], "completed", "{result}");
    let id = result["task_id"].as_str().unwrap().to_owned();

    wait_note(&server, &agent, &id, "notification delivered");
    eventually("the notification in Letta", LETTA_PATIENCE, || {
        (notifications(&agent, &id) >= 1).then_some(())
    });
    assert_eq!(notifications(&agent, &id), 1);
    assert_eq!(
        metric(&server, "handoff_letta_notifications_sent_total"),
        1.0
    );
    assert_eq!(
        metric(&server, "handoff_letta_notifications_skipped_total"),
        0.0
    );
}

#[test]
fn a_result_returned_in_the_call_is_not_notified_after_a_restart_either() {
    let agent = create_agent("sync-restart");
    // The block's create hangs, so the writer has not decided about the notification when the
    // sync call returns and the process dies.
    let proxy = Proxy::start(
        letta_url(),
        vec![Rule {
            method: "POST",
            path: "/v1/blocks/",
            times: 1,
            fault: Fault::Stall(Duration::from_secs(600)),
        }],
    );
    let server = start_with(&env(&proxy.url, &[]));
    let result = submit_sync(&server, &agent, "echo answered before the crash");
    assert_eq!(result["status"], "completed", "{result}");
    let id = result["task_id"].as_str().unwrap().to_owned();
    eventually("the hanging create", LETTA_PATIENCE, || {
        proxy
            .seen()
            .iter()
            .any(|s| s.method == "POST" && s.path == "/v1/blocks/")
            .then_some(())
    });
    let dir = server.kill9();

    let server = restart_with(dir, &env(letta_url(), &[]));
    wait_note(&server, &agent, &id, "no completion notification");
    assert_eq!(notifications(&agent, &id), 0);
}

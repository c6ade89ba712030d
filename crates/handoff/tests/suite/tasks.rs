//! The task tools end to end: the real binary, the real `command` executor, the official
//! Python MCP SDK as the client.

use serde_json::{Value, json};

use super::{
    harness::{Server, start, start_in},
    mcp::{call, calls, err, history, ok, task_id, wait_status},
    process::{alive, wait_frozen},
    wait::{PATIENCE, wait_until},
};

/// Tasks are bash scripts: the description is the script.
const SCRIPT_EXECUTOR: [(&str, &str); 4] = [
    ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
    ("HANDOFF_DEFAULT_EXECUTOR", "command"),
    ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
    ("HANDOFF_COMMAND_MESSAGES_VIA_STDIN", "true"),
];

fn env(extra: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    let mut all = SCRIPT_EXECUTOR.to_vec();
    all.push(("HANDOFF_CANCEL_GRACE_MS", "500"));
    all.extend_from_slice(extra);
    all
}

/// The pid the executor recorded for the task's process group.
pub(super) fn pid(server: &Server, agent: &str, id: &str) -> i32 {
    wait_until(&format!("the pid of {id}"), PATIENCE, || {
        let events = history(server, agent, id)["events"].clone();
        events
            .as_array()
            .unwrap()
            .iter()
            .find_map(|e| e["data"]["pid"].as_i64())
            .map(|pid| pid as i32)
    })
}

/// The first output line of task `id` that starts with `prefix`, once it is there.
pub(super) fn output_line(server: &Server, agent: &str, id: &str, prefix: &str) -> String {
    wait_until(&format!("`{prefix}` output from {id}"), PATIENCE, || {
        let events = history(server, agent, id)["events"].clone();
        // One output event may hold several lines.
        events.as_array().unwrap().iter().find_map(|e| {
            let m = e["message"].as_str().filter(|_| e["kind"] == "output")?;
            m.split('\n')
                .find(|line| line.starts_with(prefix))
                .map(str::to_owned)
        })
    })
}

/// Proves that time went on for the tasks on `server`: a twin of the steerable ticker, run by
/// another agent, prints `ticks` ticks at the ticker's pace and completes. A paused ticker that
/// stays silent meanwhile is held, not merely slow to be heard.
pub(super) fn twin_ticks(server: &Server, ticks: u32) {
    let script = format!("for i in $(seq 1 {ticks}); do echo tick $i; sleep 0.05; done");
    let twin = task_id(&call(
        server,
        "agent-twin",
        "execute_task",
        json!({"task_description": script}),
    ));
    let done = wait_status(server, "agent-twin", &twin, &["completed", "failed"]);
    assert_eq!(done["status"], "completed", "{done}");
}

/// Shows that the steerable `ticker` (`agent-a`'s, just paused through `server`) is held: once
/// its processes are frozen, its history gains no event while a twin ticks on. The history's
/// event count while paused.
pub(super) fn held_while_paused(server: &Server, ticker: &str) -> u64 {
    let leader = pid(server, "agent-a", ticker);
    wait_frozen("the paused ticker", &[leader]);
    // What it printed before the freeze lands while a first twin runs.
    twin_ticks(server, 2);
    let before = history(server, "agent-a", ticker)["total_events"].clone();
    twin_ticks(server, 12);
    assert_eq!(history(server, "agent-a", ticker)["total_events"], before);
    before.as_u64().unwrap()
}

#[test]
fn a_task_from_submission_to_its_files() {
    let server = start(&env(&[]));
    let results = calls(
        &server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {
                "task_description": "mkdir -p src && echo 'fn main() {}' > src/main.rs && echo done",
                "sync": true, "metadata": {"ticket": "T-1"}}},
            {"name": "list_tasks", "arguments": {}},
            {"name": "opencode_execute_task", "arguments": {"task_description": "exit 4", "sync": true}},
            {"name": "execute_task", "arguments": {}},
            {"name": "execute_task", "arguments": {"task_description": "x", "priority": 1000}},
            {"name": "execute_task", "arguments": {"task_description": "x", "executor": "nope"}},
            {"name": "get_task_status", "arguments": {"task_id": "task_not-a-real-id"}},
        ]),
    );
    let done = ok(&results[0]);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["created"], true);
    assert_eq!(done["output_tail"], json!(["done"]));
    assert_eq!(done["exit"]["code"], 0);
    let id = done["task_id"].as_str().unwrap().to_owned();
    assert_eq!(ok(&results[1])["tasks"][0]["task_id"], id.as_str());
    assert_eq!(ok(&results[1])["tasks"][0]["metadata"]["ticket"], "T-1");
    let failed = ok(&results[2]);
    assert_eq!(failed["status"], "failed");
    assert!(failed["error"].as_str().unwrap().contains("exit code 4"));
    assert_eq!(err(&results[3])["pointer"], "/task_description");
    assert_eq!(err(&results[4])["pointer"], "/priority");
    let unknown = err(&results[5]);
    assert_eq!(unknown["pointer"], "/executor");
    assert!(unknown["message"].as_str().unwrap().contains("command"));
    assert_eq!(err(&results[6])["code"], "INVALID_ARGUMENTS");

    let results = calls(
        &server,
        "agent-a",
        json!([
            {"name": "get_task_status", "arguments": {"task_id": id}},
            {"name": "get_task_history", "arguments": {"task_id": id, "include_artifacts": true}},
            {"name": "get_task_files", "arguments": {"task_id": id}},
            {"name": "read_task_file", "arguments": {"task_id": id, "file_path": "src/main.rs"}},
            {"name": "read_task_file", "arguments": {"task_id": id, "file_path": "../../etc/passwd"}},
            {"name": "read_task_file", "arguments": {"task_id": id, "file_path": "/etc/passwd"}},
            {"name": "send_task_message", "arguments": {"task_id": id, "message": "allow", "message_type": "approval"}},
        ]),
    );
    let status = ok(&results[0]);
    assert_eq!(status["status"], "completed");
    assert!(status["duration_ms"].as_i64().unwrap() >= 0);
    assert_eq!(status["recent_events"].as_array().unwrap().len(), 5);
    let history = ok(&results[1]);
    assert_eq!(history["has_more"], false);
    let artifact = |kind: &str| {
        history["artifacts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["kind"] == kind)
            .unwrap_or_else(|| panic!("no {kind} artifact in {history}"))
            .clone()
    };
    assert_eq!(artifact("output")["content"], "done\n");
    // Every task's changes are kept as a diff against the directory it started from.
    let diff = artifact("diff");
    let diff = diff["content"].as_str().unwrap();
    assert!(
        diff.contains("new file mode") && diff.contains("+fn main() {}"),
        "{diff}"
    );
    let kinds: Vec<_> = history["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["kind"].as_str().unwrap())
        .collect();
    // The evaluator's verdict (policy `checks`) comes before the final state.
    assert_eq!(
        kinds,
        ["status", "status", "log", "output", "verdict", "status"]
    );
    let paths: Vec<_> = ok(&results[2])["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["src", "src/main.rs"]);
    assert_eq!(ok(&results[3])["content"], "fn main() {}\n");
    assert_eq!(err(&results[4])["pointer"], "/file_path");
    assert_eq!(err(&results[5])["pointer"], "/file_path");
    // Nothing is pending on an ended task (a plain message would continue it: follow-ups).
    assert_eq!(err(&results[6])["code"], "CONFLICT");

    // Another agent cannot see it at all.
    let stranger = calls(
        &server,
        "agent-b",
        json!([
            {"name": "get_task_status", "arguments": {"task_id": id}},
            {"name": "read_task_file", "arguments": {"task_id": id, "file_path": "src/main.rs"}},
            {"name": "list_tasks", "arguments": {}},
        ]),
    );
    assert_eq!(err(&stranger[0])["code"], "NOT_FOUND");
    assert_eq!(err(&stranger[1])["code"], "NOT_FOUND");
    assert_eq!(ok(&stranger[2])["tasks"], json!([]));
}

#[test]
fn fifty_concurrent_submissions_respect_the_limit() {
    let server = start(&env(&[
        ("HANDOFF_MAX_CONCURRENT_TASKS", "2"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
    ]));
    let gate = server.dir().join("gate");
    let script = format!(
        "while [ ! -e '{}' ]; do sleep 0.02; done; echo finished",
        gate.display()
    );
    let submissions: Vec<Value> = (0..50)
        .map(|i| {
            json!({"name": "execute_task", "arguments": {
                "task_description": script, "idempotency_key": format!("job-{i}")}})
        })
        .collect();
    let results = calls(&server, "agent-a", json!([{"parallel": submissions}]));
    let ids: Vec<String> = results[0].as_array().unwrap().iter().map(task_id).collect();
    assert_eq!(ids.len(), 50);
    // The scheduler filled its slots; whether it went past the limit is checked below.
    wait_until("two running tasks", PATIENCE, || {
        let page = call(
            &server,
            "agent-a",
            "list_tasks",
            json!({"status": "running", "limit": 200}),
        );
        let running = ok(&page)["tasks"].as_array().unwrap().len();
        if running >= 2 { Ok(()) } else { Err(running) }
    });
    let listed = calls(
        &server,
        "agent-a",
        json!([
            {"name": "list_tasks", "arguments": {"status": "running", "limit": 200}},
            {"name": "list_tasks", "arguments": {"status": "queued", "limit": 200}},
            // Same agent, same key: the same task, not a new one.
            {"name": "execute_task", "arguments": {"task_description": script, "idempotency_key": "job-7"}},
        ]),
    );
    assert_eq!(ok(&listed[0])["tasks"].as_array().unwrap().len(), 2);
    assert_eq!(ok(&listed[1])["tasks"].as_array().unwrap().len(), 48);
    assert_eq!(ok(&listed[2])["created"], false);
    assert_eq!(ok(&listed[2])["task_id"], ids[7].as_str());
    // Another agent's key space is its own.
    let other = call(
        &server,
        "agent-b",
        "execute_task",
        json!({"task_description": "true", "idempotency_key": "job-7"}),
    );
    assert_eq!(ok(&other)["created"], true);

    std::fs::write(&gate, "").unwrap();
    wait_until("all tasks completed", PATIENCE, || {
        let page = call(
            &server,
            "agent-a",
            "list_tasks",
            json!({"status": "completed", "limit": 200}),
        );
        let completed = ok(&page)["tasks"].as_array().unwrap().len();
        if completed == 50 {
            Ok(())
        } else {
            Err(completed)
        }
    });
}

#[test]
fn a_full_queue_answers_queue_full_as_an_error() {
    let server = start(&env(&[
        ("HANDOFF_MAX_CONCURRENT_TASKS", "1"),
        ("HANDOFF_MAX_QUEUED_TASKS", "1"),
    ]));
    let results = calls(
        &server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "sleep 30"}},
        ]),
    );
    let running = task_id(&results[0]);
    wait_status(&server, "agent-a", &running, &["running"]);
    let results = calls(
        &server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "true"}},
            {"name": "execute_task", "arguments": {"task_description": "true"}},
            {"name": "send_task_control", "arguments": {"task_id": running, "control": "cancel"}},
        ]),
    );
    assert_eq!(ok(&results[0])["status"], "queued");
    let full = err(&results[1]);
    assert_eq!(full["code"], "QUEUE_FULL");
    assert!(full["retry_after_ms"].as_u64().unwrap() > 0);
    assert_eq!(ok(&results[2])["status"], "cancelled");
}

/// Submits, as `agent-a`, a task with a grandchild to cancel, a ticking one to pause and resume,
/// and one that waits for a message on stdin; their ids in that order.
pub(super) fn steerable_tasks(server: &Server) -> (String, String, String) {
    let results = calls(
        server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "sleep 300 & echo child:$!; sleep 300"}},
            {"name": "execute_task", "arguments": {"task_description":
                "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done"}},
            {"name": "execute_task", "arguments": {"task_description": "echo ready; read -r line; echo \"got:$line\""}},
        ]),
    );
    (
        task_id(&results[0]),
        task_id(&results[1]),
        task_id(&results[2]),
    )
}

#[test]
fn cancel_pause_resume_and_messages_reach_the_process() {
    let server = start(&env(&[]));
    let (doomed, ticker, listener) = steerable_tasks(&server);

    let child: i32 = output_line(&server, "agent-a", &doomed, "child:")["child:".len()..]
        .parse()
        .unwrap();
    let leader = pid(&server, "agent-a", &doomed);
    assert!(alive(leader) && alive(child));
    let cancelled = call(
        &server,
        "agent-a",
        "send_task_control",
        json!({"task_id": doomed, "control": "cancel", "reason": "wrong repo"}),
    );
    assert_eq!(ok(&cancelled)["status"], "cancelled");
    assert!(!alive(leader), "leader survived the cancel");
    assert!(!alive(child), "grandchild survived the cancel");

    output_line(&server, "agent-a", &ticker, "tick 3");
    let paused = call(
        &server,
        "agent-a",
        "send_task_control",
        json!({"task_id": ticker, "control": "pause"}),
    );
    assert_eq!(ok(&paused)["status"], "paused");
    let before = held_while_paused(&server, &ticker);
    let resumed = calls(
        &server,
        "agent-a",
        json!([
            {"name": "send_task_control", "arguments": {"task_id": ticker, "control": "resume"}},
            {"name": "send_task_control", "arguments": {"task_id": ticker, "control": "resume"}},
        ]),
    );
    assert_eq!(ok(&resumed[0])["changed"], true);
    assert_eq!(ok(&resumed[1])["changed"], false);
    let next = format!("tick {before}");
    output_line(&server, "agent-a", &ticker, &next);

    output_line(&server, "agent-a", &listener, "ready");
    let sent = call(
        &server,
        "agent-a",
        "send_task_message",
        json!({"task_id": listener, "message": "use the v2 API", "message_type": "correction"}),
    );
    assert_eq!(ok(&sent)["delivered"], true, "{sent}");
    let got = output_line(&server, "agent-a", &listener, "got:");
    assert_eq!(
        got,
        r#"got:{"type":"message","message":"[correction] use the v2 API"}"#
    );
    wait_status(&server, "agent-a", &listener, &["completed"]);
    let stop = call(
        &server,
        "agent-a",
        "send_task_control",
        json!({"task_id": ticker, "control": "cancel"}),
    );
    assert_eq!(ok(&stop)["status"], "cancelled");
}

#[test]
fn kill_dash_nine_then_restart_accounts_for_every_task() {
    let extra = [("HANDOFF_MAX_CONCURRENT_TASKS", "2")];
    let server = start(&env(&extra));
    let results = calls(
        &server,
        "agent-a",
        json!([
            {"name": "execute_task", "arguments": {"task_description": "sleep 300 & echo child:$!; sleep 300"}},
            {"name": "execute_task", "arguments": {"requeue_on_restart": true, "task_description":
                "if [ -e marker ]; then echo second-run; else touch marker; echo first-run; sleep 300; fi"}},
            {"name": "execute_task", "arguments": {"task_description": "echo from-the-queue"}},
        ]),
    );
    let ids: Vec<String> = results.iter().map(task_id).collect();
    let child: i32 = output_line(&server, "agent-a", &ids[0], "child:")["child:".len()..]
        .parse()
        .unwrap();
    let leaders = [
        pid(&server, "agent-a", &ids[0]),
        pid(&server, "agent-a", &ids[1]),
    ];
    output_line(&server, "agent-a", &ids[1], "first-run");
    assert_eq!(
        wait_status(&server, "agent-a", &ids[2], &["queued"])["queue_position"],
        1
    );

    let dir = server.kill9();
    // The leaders die with the server (parent-death signal); what they started in the
    // background outlives it, and only the restart can stop that.
    wait_until("the runs' leaders to die with the server", PATIENCE, || {
        !leaders.iter().any(|p| alive(*p))
    });
    assert!(alive(child));

    let server = start_in(dir, &env(&extra));
    let interrupted = wait_status(&server, "agent-a", &ids[0], &["failed"]);
    assert_eq!(interrupted["error"], "interrupted: server restarted");
    wait_until(
        "the processes of the dead server's runs to be stopped",
        PATIENCE,
        || ![child, leaders[0], leaders[1]].iter().any(|p| alive(*p)),
    );
    wait_status(&server, "agent-a", &ids[1], &["completed"]);
    let rerun = history(&server, "agent-a", &ids[1]);
    let outputs: Vec<_> = rerun["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["kind"] == "output")
        .map(|e| e["message"].as_str().unwrap())
        .collect();
    assert_eq!(outputs, ["first-run", "second-run"]);
    wait_status(&server, "agent-a", &ids[2], &["completed"]);
    let all = call(&server, "agent-a", "list_tasks", json!({}));
    let statuses: Vec<_> = ok(&all)["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(statuses, ["completed", "completed", "failed"]);
}

#[test]
fn the_per_agent_limit_leaves_room_for_other_agents() {
    let server = start(&env(&[
        ("HANDOFF_MAX_CONCURRENT_TASKS", "10"),
        ("HANDOFF_MAX_CONCURRENT_PER_AGENT", "1"),
    ]));
    // Long enough that only the cancels below end them, however loaded the machine is.
    let submit = json!({"name": "execute_task", "arguments": {"task_description": "sleep 600"}});
    let mine = calls(&server, "agent-x", json!([submit, submit]));
    let theirs = calls(&server, "agent-y", json!([submit]));
    let (x1, x2, y1) = (task_id(&mine[0]), task_id(&mine[1]), task_id(&theirs[0]));
    wait_status(&server, "agent-x", &x1, &["running"]);
    wait_status(&server, "agent-y", &y1, &["running"]);
    // A third agent's task, queued behind x2, starts: the scheduler went past x2 and left it.
    let later = task_id(&call(
        &server,
        "agent-z",
        "execute_task",
        submit["arguments"].clone(),
    ));
    wait_status(&server, "agent-z", &later, &["running"]);
    let waiting = wait_status(&server, "agent-x", &x2, &["queued"]);
    assert_eq!(waiting["queue_position"], 1);
    for (agent, id) in [
        ("agent-x", &x2),
        ("agent-x", &x1),
        ("agent-y", &y1),
        ("agent-z", &later),
    ] {
        let stop = call(
            &server,
            agent,
            "send_task_control",
            json!({"task_id": id, "control": "cancel"}),
        );
        assert_eq!(ok(&stop)["status"], "cancelled");
    }
}

#[test]
fn a_sync_call_reports_progress_while_it_waits() {
    let server = start(&env(&[("HANDOFF_SYNC_WAIT_MS", "20000")]));
    let result = call(
        &server,
        "agent-a",
        "execute_task",
        json!({"task_description": "sleep 4.5; echo finally", "sync": true}),
    );
    assert_eq!(ok(&result)["status"], "completed");
    assert_eq!(ok(&result)["output_tail"], json!(["finally"]));
    let progress = result["progress"].as_array().unwrap();
    assert!(!progress.is_empty(), "no progress notifications: {result}");
    assert!(
        progress[0].as_str().unwrap().ends_with("is running"),
        "{progress:?}"
    );

    // A sync call that outlasts the limit answers `running` with a hint.
    let short = start(&env(&[("HANDOFF_SYNC_WAIT_MS", "300")]));
    let result = call(
        &short,
        "agent-a",
        "execute_task",
        json!({"task_description": "sleep 30", "sync": true}),
    );
    let status = ok(&result)["status"].as_str().unwrap();
    assert!(["running", "queued"].contains(&status), "{result}");
    assert!(
        ok(&result)["message"]
            .as_str()
            .unwrap()
            .contains("poll get_task_status")
    );
}

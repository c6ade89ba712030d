//! Steering a task through an instance that does not run it (issue 21): two real
//! `handoff serve` on one PostgreSQL, each task steered through the instance that does not
//! hold its lease. The command travels through the store to the holder, which hands it to the
//! run's supervisor; the caller gets the answer it gets on the holder itself.

use std::process::Command;

use serde_json::{Value, json};

use super::{
    harness::{BIN, Server, start},
    mcp::{call, err, ok, task_id, wait_status},
    postgres::{SCRIPT_EXECUTOR, fresh_database},
    process::alive,
    scale::psql,
    tasks::{held_while_paused, output_line, pid, steerable_tasks},
    wait::{PATIENCE, wait_until},
};

/// The server whose instance did not run finished task `id`.
fn not_the_runner<'s>(url: &str, servers: &'s [Server], id: &str) -> &'s Server {
    let runner: u32 = psql(
        url,
        &format!(
            "SELECT i.pid FROM tasks t JOIN instances i ON i.id = t.ran_on WHERE t.id = '{id}'"
        ),
    )
    .parse()
    .expect("the instance that ran the task is registered");
    servers
        .iter()
        .find(|s| s.child.id() != runner)
        .expect("a server that did not run the task")
}

/// The server that does not hold task `id`'s lease (waits for the task to be claimed; the
/// owner is set by the claim and cleared when the task ends).
pub(super) fn elsewhere<'s>(url: &str, servers: &'s [Server], id: &str) -> &'s Server {
    let sql = format!(
        "SELECT coalesce(i.pid::text, '') || '|' || t.status || ' owner ' || coalesce(t.owner, '-') \
         FROM tasks t LEFT JOIN instances i ON i.id = t.owner WHERE t.id = '{id}'"
    );
    let holder: u32 = wait_until(&format!("{id} to be claimed"), PATIENCE, || {
        let row = psql(url, &sql);
        let (pid, task) = row.split_once('|').unwrap_or(("", row.as_str()));
        pid.parse().map_err(|_| {
            // What the store says, so a failure tells a lost lease from a missing instance.
            let instances = psql(
                url,
                "SELECT string_agg(id || ' pid ' || pid, ', ') FROM instances",
            );
            format!("task {task}; instances: {instances}")
        })
    });
    let other = servers.iter().find(|s| s.child.id() != holder);
    assert!(servers.iter().any(|s| s.child.id() == holder));
    other.expect("a server that does not hold the task")
}

/// Two instances running the script executor on a fresh database, with `extra` settings; the
/// database's URL.
fn two_instances(extra: &[(&'static str, &'static str)]) -> (String, [Server; 2]) {
    let url = fresh_database();
    let mut env = SCRIPT_EXECUTOR.to_vec();
    env.push(("HANDOFF_DATABASE_URL", url.as_str()));
    env.extend_from_slice(extra);
    let servers = [start(&env), start(&env)];
    (url, servers)
}

#[test]
fn cancel_pause_resume_and_messages_reach_a_run_on_another_instance() {
    let (url, servers) = two_instances(&[
        ("HANDOFF_CANCEL_GRACE_MS", "500"),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0"),
    ]);
    both_instances_are_listed(&servers);
    let (doomed, ticker, listener) = steerable_tasks(&servers[0]);

    // Cancel: the holder stops the run; the caller waits for the task to settle, as locally.
    let via = elsewhere(&url, &servers, &doomed);
    let child: i32 = output_line(via, "agent-a", &doomed, "child:")["child:".len()..]
        .parse()
        .unwrap();
    let leader = pid(via, "agent-a", &doomed);
    assert!(alive(leader) && alive(child));
    let stranger = call(
        via,
        "agent-b",
        "send_task_control",
        json!({"task_id": doomed, "control": "cancel"}),
    );
    assert!(
        err(&stranger).to_string().contains("not found"),
        "{stranger}"
    );
    let cancelled = call(
        via,
        "agent-a",
        "send_task_control",
        json!({"task_id": doomed, "control": "cancel", "reason": "wrong repo"}),
    );
    assert_eq!(ok(&cancelled)["status"], "cancelled", "{cancelled}");
    assert_eq!(
        ok(&cancelled)["message"],
        "cancelled; the executor's processes are stopped"
    );
    assert!(!alive(leader), "leader survived the cancel");
    assert!(!alive(child), "grandchild survived the cancel");

    // Pause and resume: the holder freezes and thaws the run.
    let via = elsewhere(&url, &servers, &ticker);
    output_line(via, "agent-a", &ticker, "tick 3");
    let paused = call(
        via,
        "agent-a",
        "send_task_control",
        json!({"task_id": ticker, "control": "pause"}),
    );
    assert_eq!(ok(&paused)["status"], "paused", "{paused}");
    assert_eq!(ok(&paused)["changed"], true);
    let before = held_while_paused(via, &ticker);
    let resumed = call(
        via,
        "agent-a",
        "send_task_control",
        json!({"task_id": ticker, "control": "resume"}),
    );
    assert_eq!(ok(&resumed)["changed"], true, "{resumed}");
    output_line(via, "agent-a", &ticker, &format!("tick {before}"));

    // A message reaches the executor's stdin on the holder.
    let via = elsewhere(&url, &servers, &listener);
    output_line(via, "agent-a", &listener, "ready");
    let sent = call(
        via,
        "agent-a",
        "send_task_message",
        json!({"task_id": listener, "message": "use the v2 API", "message_type": "correction"}),
    );
    assert_eq!(ok(&sent)["delivered"], true, "{sent}");
    let got = output_line(via, "agent-a", &listener, "got:");
    assert_eq!(
        got,
        r#"got:{"type":"message","message":"[correction] use the v2 API"}"#
    );
    wait_status(via, "agent-a", &listener, &["completed"]);
    // Both instances answer the same about the task.
    let [a, b] = &servers;
    let status = |s: &Server| {
        let got = call(
            s,
            "agent-a",
            "get_task_status",
            json!({"task_id": listener}),
        );
        let got = ok(&got);
        (got["status"].clone(), got["output_tail"].clone())
    };
    assert_eq!(status(a), status(b));

    // Each went through the store: posted to the holder and answered by it.
    let answered = psql(
        &url,
        "SELECT string_agg(body::json->>'command', ',' ORDER BY id) FROM commands \
         WHERE taken IS NOT NULL AND reply IS NOT NULL",
    );
    assert_eq!(answered, "cancel,pause,resume,message");

    // A task's files are read on the instance that ran it, whichever instance is asked.
    let made = call(
        &servers[0],
        "agent-a",
        "execute_task",
        json!({"task_description": "mkdir -p out && echo made-here > out/made.txt", "sync": true}),
    );
    let made = task_id(&made);
    let via = not_the_runner(&url, &servers, &made);
    let listed = call(via, "agent-a", "get_task_files", json!({"task_id": made}));
    assert!(ok(&listed).to_string().contains("out/made.txt"), "{listed}");
    let read = call(
        via,
        "agent-a",
        "read_task_file",
        json!({"task_id": made, "file_path": "out/made.txt"}),
    );
    assert_eq!(
        ok(&read)["content"].as_str().map(str::trim),
        Some("made-here")
    );
    let outside = call(
        via,
        "agent-a",
        "read_task_file",
        json!({"task_id": made, "file_path": "../../etc/passwd"}),
    );
    assert!(err(&outside).to_string().contains("file_path"), "{outside}");
    let queries = psql(
        &url,
        &format!(
            "SELECT string_agg(body::json->>'query', ',' ORDER BY id) FROM commands \
             WHERE task_id = '{made}' AND reply IS NOT NULL"
        ),
    );
    assert_eq!(queries, "files,read_file,read_file");
    call(
        &servers[0],
        "agent-a",
        "send_task_control",
        json!({"task_id": ticker, "control": "cancel"}),
    );
}

/// `handoff instances` and the public `/health` of either server list both instances, the
/// answering one marked.
fn both_instances_are_listed(servers: &[Server]) {
    let home = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    for server in servers {
        let listed = wait_until("both instances listed", PATIENCE, || {
            let out = Command::new(BIN)
                .args(["instances", "--json"])
                .env("HANDOFF_URL", &server.url)
                .env("HANDOFF_AGENT", "agent-a")
                .env("HOME", home.path())
                .env("XDG_CONFIG_HOME", home.path())
                .env_remove("HANDOFF_TOKEN")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
            if listed.as_array().is_some_and(|l| l.len() == 2) {
                Ok(listed)
            } else {
                Err(listed)
            }
        });
        let this: Vec<&Value> = listed
            .as_array()
            .unwrap()
            .iter()
            .filter(|i| i["this"] == true)
            .collect();
        assert_eq!(this.len(), 1, "{listed}");
        let pid = format!("-{}-", server.child.id());
        assert!(this[0]["id"].as_str().unwrap().contains(&pid), "{listed}");
        assert!(
            listed
                .as_array()
                .unwrap()
                .iter()
                .all(|i| i["heartbeat_ms"].as_i64() > Some(0))
        );

        let health = server.url.replace("/mcp", "/health");
        let public: Value = runtime.block_on(async {
            let answer = handoff_letta::testing::http().get(&health).send().await;
            answer.unwrap().json().await.unwrap()
        });
        assert_eq!(
            public["instances"].as_array().map(Vec::len),
            Some(2),
            "{public}"
        );
    }
}

/// The submission rate is one bucket per agent across the instances: a burst of three spent on
/// two instances leaves nothing on either.
#[test]
fn an_agents_submission_rate_holds_across_instances() {
    let (_, servers) = two_instances(&[
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "1"),
        ("HANDOFF_SUBMISSION_BURST", "3"),
    ]);
    // Each submission its own: an identical one would meet the loop guard, not the rate.
    let submitted = std::cell::Cell::new(0);
    let submit = |server: &Server, agent: &str| {
        submitted.set(submitted.get() + 1);
        call(
            server,
            agent,
            "execute_task",
            json!({"task_description": format!("true # {}", submitted.get())}),
        )
    };
    for server in [&servers[0], &servers[1], &servers[0]] {
        ok(&submit(server, "agent-r"));
    }
    for server in &servers {
        let refused = submit(server, "agent-r");
        assert!(
            err(&refused).to_string().contains("RATE_LIMITED"),
            "{refused}"
        );
    }
    ok(&submit(&servers[1], "agent-s"));
}

/// The loop guards and the failed-call charges count an agent's calls on every instance: an
/// identical submission made on two instances is refused on the first one's third try while
/// both tasks run; the same message repeated across instances is refused on its third; failed
/// calls spread over two instances spend one bucket.
#[test]
fn loop_guards_and_failed_call_charges_hold_across_instances() {
    let (_, servers) = two_instances(&[
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "1"),
        ("HANDOFF_SUBMISSION_BURST", "3"),
    ]);
    let [a, b] = &servers;
    let twin = json!({"task_description": "sleep 60"});
    let first = task_id(&call(a, "agent-g", "execute_task", twin.clone()));
    let second = task_id(&call(b, "agent-g", "execute_task", twin.clone()));
    let refused = err(&call(a, "agent-g", "execute_task", twin)).to_string();
    assert!(refused.contains("loop guard"), "{refused}");
    assert!(
        refused.contains(&first) && refused.contains(&second),
        "{refused}"
    );

    wait_status(a, "agent-g", &first, &["running"]);
    let message = |server: &Server| {
        call(
            server,
            "agent-m",
            "send_task_message",
            json!({"task_id": first, "message": "again"}),
        )
    };
    // Another agent's messages to a task it cannot see fail (not found) and count as repeats.
    for server in [a, b] {
        let answer = err(&message(server)).to_string();
        assert!(answer.contains("NOT_FOUND"), "{answer}");
    }
    let looped = err(&message(a)).to_string();
    assert!(looped.contains("loop guard"), "{looped}");

    // agent-f: three failed calls over both instances spend the burst of three.
    let status = |server: &Server, n: u32| {
        call(
            server,
            "agent-f",
            "get_task_status",
            json!({"task_id": format!("missing-{n}")}),
        )
    };
    for (n, server) in [a, b, a].into_iter().enumerate() {
        let failed = err(&status(server, n as u32)).to_string();
        assert!(!failed.contains("RATE_LIMITED"), "{failed}");
    }
    let limited = err(&status(b, 9)).to_string();
    assert!(limited.contains("RATE_LIMITED"), "{limited}");
    for id in [first, second] {
        ok(&call(
            a,
            "agent-g",
            "send_task_control",
            json!({"task_id": id, "control": "cancel"}),
        ));
    }
}

//! The path a Letta agent really takes, with Letta unpatched: a real Letta 0.16.8 (its own
//! PostgreSQL, the scripted model as its LLM) registers Handoff as an MCP server through
//! `handoff letta connect --mode mcp`, and the agents' LLM calls `execute_task` and
//! `get_task_status` through **Letta's own MCP client** (a fresh session per call, Letta's own
//! `X-Agent-Id`). Letta refuses MCP servers on loopback and private addresses, so everything runs
//! inside a network namespace with only `lo`, Handoff on a public address on it (see `netns`).

use std::{
    path::{Path, PathBuf},
    process::Command,
    sync::mpsc,
    time::{Duration, Instant},
};

use handoff_scripted_model::{Scenario, Script, ScriptedModel, Turn};
use serde_json::{Value, json};

use super::{
    harness::{BIN, Server, start_on},
    letta::LETTA_PATIENCE,
    mcp::{calls_with, ok},
    netns::{self, PUBLIC_ADDRESS},
    wait::{Pace, wait_paced},
};

/// This module's inner test, as the test binary names it.
const INNER: &str = "suite::letta_netns::inside_the_namespace";
/// Where the outer test tells the inner one to keep the Letta instance's state.
const STATE_VAR: &str = "HANDOFF_TEST_NETNS_LETTA_STATE";
/// The gateway token Letta presents (Letta's MCP server registration carries it).
const TOKEN: &str = "netns-gateway-token";
/// The block limit configured, checked on the block Letta shows.
const LIMIT: usize = 4_000;
/// What A's task writes, read back through Handoff.
const WRITTEN: &str = "written-by-letta";
/// A task id in a tool result's text, as the LLM would read it.
const TASK_ID: &str = r"\b(task_[a-z2-7]{26})\b";

#[test]
fn letta_agents_reach_handoff_through_lettas_own_mcp_client() {
    let state = tempfile::tempdir().unwrap();
    // PostgreSQL runs as an unprivileged user, which must reach its data directory.
    std::fs::set_permissions(
        state.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let path = state.path().to_path_buf();
    netns::run_inside(
        INNER,
        &[(STATE_VAR, state.path())],
        Duration::from_secs(1_200),
        |passed| {
            if !passed {
                show_letta_log(&path);
            }
            letta_down(&path);
        },
    );
}

#[test]
#[ignore = "run by letta_agents_reach_handoff_through_lettas_own_mcp_client, inside its namespace"]
fn inside_the_namespace() {
    assert!(
        netns::inside(INNER),
        "this test runs only inside the namespace its outer test makes"
    );
    netns::confine();
    let state = PathBuf::from(std::env::var(STATE_VAR).expect("the state directory"));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(), None))
        .unwrap();
    let letta = Letta::up(&state, &model.base_url(), runtime.handle().clone());
    let server = start_on(
        tempfile::tempdir().unwrap(),
        PUBLIC_ADDRESS,
        &pairs(&env(&letta.url)),
    );
    assert!(server.url.starts_with(&format!("http://{PUBLIC_ADDRESS}:")));

    let a = letta.create_agent("netns-a");
    let b = letta.create_agent("netns-b");
    connect(&server, &letta.url, &[&a, &b]);
    for agent in [&a, &b] {
        let tools = letta.tool_names(agent);
        for wanted in ["execute_task", "get_task_status"] {
            assert!(tools.iter().any(|t| t == wanted), "{agent}: {tools:?}");
        }
    }

    let task = a_runs_a_task(&letta, &server, &model, &a);
    b_is_kept_apart(&letta, &server, &model, &a, &b, &task);
}

/// A's LLM submits a task and asks its status through Letta's MCP client; the task runs as A,
/// its block lives in A's memory on schedule, and A is told once.
fn a_runs_a_task(letta: &Letta, server: &Server, model: &ScriptedModel, a: &str) -> String {
    let started = Instant::now();
    let turn = letta.send_in_background(a, "NETNS-A-RUN: write the file, then check on it");
    let tasks = eventually("A's task", LETTA_PATIENCE, || {
        let tasks = list_tasks(server, a);
        (!tasks.is_empty()).then_some(tasks)
    });
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = tasks[0].clone();
    let label = format!("handoff_{task}");
    let block = eventually("the block attached", LETTA_PATIENCE, || {
        letta.attached_block(a, &label)
    });
    let attached = started.elapsed();
    assert_eq!(block["description"], handoff_letta::BLOCK_DESCRIPTION);
    assert_eq!(block["limit"], LIMIT);
    let block_id = block["id"].as_str().unwrap().to_owned();

    // Watched from now on: on a loaded machine the turn can outlast the block's whole life.
    let completed = std::thread::scope(|scope| {
        let watcher = scope.spawn(|| completed_in_block(letta, &block_id));
        the_turn_used_the_tools(letta, a, &turn, model, &task, &label);
        watcher.join().expect("the block watcher")
    });
    let completed = completed.duration_since(started);
    eventually("the notification", LETTA_PATIENCE, || {
        (letta.notifications(a, &task) == 1).then_some(())
    });
    let notified = started.elapsed();
    eprintln!(
        "letta_netns: from the user message: block attached {attached:?}, completed {completed:?}, notification {notified:?}"
    );
    let read = calls_with(
        server,
        a,
        Some(TOKEN),
        json!([{"name": "read_task_file", "arguments": {"task_id": task, "file_path": "letta.txt"}}]),
    );
    assert_eq!(
        ok(&read[0])["content"].as_str().map(str::trim),
        Some(WRITTEN)
    );

    eventually("the detach", LETTA_PATIENCE, || {
        letta.attached_block(a, &label).is_none().then_some(())
    });
    eventually("the delete", LETTA_PATIENCE, || {
        (letta.get(&format!("/v1/blocks/{block_id}")).0 == 404).then_some(())
    });
    assert_eq!(letta.notifications(a, &task), 1, "exactly one notification");
    task
}

/// Asserts that A's turn made two successful tool calls whose texts name the task and its block,
/// and that the model read the task's id from execute_task's text. A `get_task_status` that
/// Letta's own MCP client could not connect for (its 30 s limit, on a loaded machine; Handoff
/// never got the call) is asked again in a turn of its own.
fn the_turn_used_the_tools(
    letta: &Letta,
    a: &str,
    turn: &mpsc::Receiver<Value>,
    model: &ScriptedModel,
    task: &str,
    label: &str,
) {
    let messages = turn.recv_timeout(Duration::from_secs(300)).unwrap();
    let mut returns = tool_returns(&messages);
    assert_eq!(
        returns.len(),
        2,
        "execute_task then get_task_status: {messages:#}"
    );
    if not_connected(&returns[1..]) {
        eprintln!("letta_netns: Letta's MCP client did not connect to Handoff; asking again");
        let again = letta.send_connected(a, &format!("NETNS-A-CHECK: how is {task} doing?"));
        let checked = tool_returns(&again);
        assert_eq!(checked.len(), 1, "get_task_status: {again:#}");
        let (call, status, text) = &checked[0];
        assert_eq!(status, "success", "{call}: {text}");
        assert!(text.contains(task), "{call}'s text names the task: {text}");
        returns.truncate(1);
    }
    for (call, status, text) in &returns {
        assert_eq!(status, "success", "{call}: {text}");
        assert!(text.contains(task), "{call}'s text names the task: {text}");
        // Letta passes only the text on: it must say what to do next, and A will be told.
        assert!(text.contains("no need to poll"), "{call}: {text}");
        assert!(text.contains(label), "{call} names the block: {text}");
    }
    // The model read execute_task's text and used the id it found there.
    let asked = model
        .requests()
        .into_iter()
        .find(|r| r.scenario.as_deref() == Some("NETNS-A-RUN") && r.turn == 1)
        .expect("the model's second turn");
    assert!(asked.body.to_string().contains(task), "{}", asked.body);
}

/// Whether one of `returns` is Letta's own MCP client failing to connect to Handoff.
fn not_connected(returns: &[(String, String, String)]) -> bool {
    returns
        .iter()
        .any(|(_, _, text)| text.contains("Failed to connect to MCP server"))
}

/// When the block first said `completed`, read every second from its attachment on; fails if the
/// block went away before it said so.
fn completed_in_block(letta: &Letta, block_id: &str) -> Instant {
    let seen = eventually("completed in the block", LETTA_PATIENCE, || {
        let (status, block) = letta.get(&format!("/v1/blocks/{block_id}"));
        if status == 404 {
            return Some(Err("the block was gone before it said completed"));
        }
        let value: Value = serde_json::from_str(block["value"].as_str()?).ok()?;
        (value["status"] == "completed").then_some(Ok(Instant::now()))
    });
    seen.unwrap_or_else(|e| panic!("{e}"))
}

/// B goes through the same registration: its task is its own (Letta's `X-Agent-Id`), and its
/// LLM naming A in `agent_id` is refused with nothing reaching A.
fn b_is_kept_apart(
    letta: &Letta,
    server: &Server,
    model: &ScriptedModel,
    a: &str,
    b: &str,
    a_task: &str,
) {
    let messages = letta.send_connected(
        b,
        &format!("NETNS-B-IMPERSONATE: {a} is the other agent; submit as it"),
    );
    let returns = tool_returns(&messages);
    assert_eq!(returns.len(), 1, "{messages:#}");
    let (_, status, text) = &returns[0];
    assert_eq!(status, "error", "{text}");
    assert!(
        text.contains("agent_id"),
        "the refusal names the field: {text}"
    );
    assert!(
        !text.contains(a),
        "the refusal does not echo the id it was given: {text}"
    );
    // The last such turn: an earlier one may have been Letta's own failure to connect.
    let refused = model
        .requests()
        .into_iter()
        .rev()
        .find(|r| r.scenario.as_deref() == Some("NETNS-B-IMPERSONATE") && r.turn == 1)
        .expect("B's model saw the refusal");
    assert!(refused.body.to_string().contains("agent_id"));

    let b_tasks = b_runs_a_task_of_its_own(letta, server, b);
    assert_eq!(b_tasks.len(), 1, "{b_tasks:?}");
    assert_eq!(
        list_tasks(server, a),
        [a_task.to_owned()],
        "nothing reached A"
    );
    let foreign = calls_with(
        server,
        b,
        Some(TOKEN),
        json!([{"name": "get_task_status", "arguments": {"task_id": a_task}}]),
    );
    assert_eq!(foreign[0]["is_error"], true, "B cannot read A's task");
    assert!(
        !letta
            .block_labels(a)
            .iter()
            .any(|l| l.contains(&b_tasks[0])),
        "B's block is not in A's memory"
    );
}

/// What the agents' LLM does, keyed by the user message; `{{capture:…}}` reads the task id
/// from the tool result Letta passed back, as a real model would.
fn script() -> Script {
    let scenario = |matches: &str, turns: Vec<Turn>| Scenario {
        name: Some(matches.to_owned()),
        ..Scenario::new(matches, turns)
    };
    let scenarios = vec![
        scenario(
            "NETNS-A-RUN",
            vec![
                Turn::tool_call(
                    "execute_task",
                    json!({"task_description": format!("sleep 2; echo {WRITTEN} > letta.txt")}),
                ),
                Turn::tool_call(
                    "get_task_status",
                    json!({"task_id": format!("{{{{capture:{TASK_ID}}}}}")}),
                ),
                Turn::text("The task is under way."),
            ],
        ),
        scenario(
            "NETNS-A-CHECK",
            vec![
                Turn::tool_call(
                    "get_task_status",
                    json!({"task_id": format!("{{{{capture:{TASK_ID}}}}}")}),
                ),
                Turn::text("Checked."),
            ],
        ),
        scenario(
            "NETNS-B-IMPERSONATE",
            vec![
                Turn::tool_call(
                    "execute_task",
                    json!({"task_description": "echo stolen > stolen.txt", "agent_id": "{{capture:(agent-[0-9a-f-]{36}) is the other agent}}"}),
                ),
                Turn::text("That was refused."),
            ],
        ),
        scenario(
            "NETNS-B-RUN",
            vec![
                Turn::tool_call(
                    "execute_task",
                    json!({"task_description": "echo mine > b.txt"}),
                ),
                Turn::text("Submitted."),
            ],
        ),
    ];
    Script {
        // The model `handoff_letta::testing::agent_request` asks for.
        models: vec!["gpt-4o-mini".to_owned()],
        ..Script::new(scenarios)
    }
}

/// Handoff on the public address: the command executor, the gateway token, Letta on, and the
/// block schedule short enough to watch.
fn env(letta: &str) -> Vec<(&'static str, String)> {
    vec![
        (
            "HANDOFF_COMMAND_ARGV",
            r#"["bash", "-c", "{prompt}"]"#.into(),
        ),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".into()),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument".into()),
        ("HANDOFF_COMPLETION_POLICY", "none".into()),
        ("HANDOFF_AUTH_TOKEN", TOKEN.into()),
        ("HANDOFF_LETTA_API_URL", letta.to_owned()),
        ("HANDOFF_LETTA_BLOCK_LIMIT", LIMIT.to_string()),
        ("HANDOFF_LETTA_SWEEP_INTERVAL_SECS", "1".into()),
        ("HANDOFF_LETTA_DETACH_DELAY_SECS", "8".into()),
        ("HANDOFF_LETTA_BLOCK_RETENTION_SECS", "3".into()),
    ]
}

fn pairs<'a>(env: &'a [(&'static str, String)]) -> Vec<(&'static str, &'a str)> {
    env.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// `handoff letta connect --mode mcp` for `agents`, with the server's own settings and its
/// public URL; it must succeed and say what it registered.
fn connect(server: &Server, letta: &str, agents: &[&str]) {
    let mut command = Command::new(BIN);
    command
        .args(["letta", "connect", "--mode", "mcp"])
        .args(agents.iter().flat_map(|a| ["--agent", a]))
        .current_dir(server.dir())
        .env("HANDOFF_DATA_DIR", server.dir().join("connect-data"))
        .env("HANDOFF_PUBLIC_URL", &server.url)
        .envs(pairs(&env(letta)));
    let out = command.output().expect("running handoff letta connect");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "letta connect: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains(&server.url), "{stdout}");
}

/// Task ids `agent` sees through Handoff.
fn list_tasks(server: &Server, agent: &str) -> Vec<String> {
    let listed = calls_with(
        server,
        agent,
        Some(TOKEN),
        json!([{"name": "list_tasks", "arguments": {}}]),
    );
    ok(&listed[0])["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["task_id"].as_str().unwrap().to_owned())
        .collect()
}

/// B's LLM submits a task of its own; B's tasks then. Letta's MCP client gives up on a
/// connection it does not get within 30 s (see [`Letta::send_connected`]): that turn, and only
/// when it made no task, is asked again once.
fn b_runs_a_task_of_its_own(letta: &Letta, server: &Server, b: &str) -> Vec<String> {
    for attempt in 1..=2 {
        let messages = letta.send(b, "NETNS-B-RUN: a task of my own");
        let tasks = list_tasks(server, b);
        if !tasks.is_empty() || !not_connected(&tool_returns(&messages)) || attempt == 2 {
            return tasks;
        }
        eprintln!("letta_netns: Letta's MCP client did not connect to Handoff; asking again");
    }
    Vec::new()
}

/// `(tool call id, status, text)` of each tool return in a Letta turn's messages, in order.
fn tool_returns(messages: &Value) -> Vec<(String, String, String)> {
    messages["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["message_type"] == "tool_return_message")
        .map(|m| {
            let text = m["tool_return"].as_str().unwrap_or_default().to_owned();
            let call = m["tool_call_id"].as_str().unwrap_or_default().to_owned();
            (
                call,
                m["status"].as_str().unwrap_or_default().to_owned(),
                text,
            )
        })
        .collect()
}

/// Polls `check` every second until it returns `Some`, for at most `limit`. Not faster: Letta
/// serves these reads on the event loop its MCP client runs on, and on a loaded CI machine one of
/// that client's connects to Handoff once missed its 30 s timeout.
fn eventually<T>(what: &str, limit: Duration, check: impl FnMut() -> Option<T>) -> T {
    wait_paced(what, limit, Pace::every(Duration::from_secs(1)), check)
}

/// Prints what the namespace's Letta logged about MCP and errors: a call Letta's MCP client
/// could not make is explained there, and the state directory is gone once the test ends.
fn show_letta_log(state: &Path) {
    let log = std::fs::read_to_string(state.join("run/letta.log")).unwrap_or_default();
    let wanted = ["mcp", "error", "timed out", "timeout", "warning"];
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| {
            let l = l.to_lowercase();
            wanted.iter().any(|w| l.contains(w))
        })
        .collect();
    eprintln!("--- the namespace's Letta log, lines about MCP and errors (last 80) ---");
    for line in &lines[lines.len().saturating_sub(80)..] {
        eprintln!("{line}");
    }
}

/// Stops the namespace's Letta instance and deletes its database (`scripts/letta/down.sh`).
fn letta_down(state: &Path) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/letta/down.sh");
    let _ = Command::new(script)
        .arg("--discard")
        .env("LETTA_STATE_DIR", state)
        .status();
}

/// A Letta server of this test's own, inside the namespace (`scripts/letta/up.sh` with a state
/// directory of its own and the in-process scripted model).
struct Letta {
    url: String,
    http: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

impl Letta {
    fn up(state: &Path, model: &str, runtime: tokio::runtime::Handle) -> Letta {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/letta/up.sh");
        let out = Command::new(script)
            .env("LETTA_STATE_DIR", state)
            .env("LETTA_MODEL_URL", model)
            .output()
            .expect("running scripts/letta/up.sh");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "up.sh: {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let url = stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("LETTA_URL="))
            .expect("a LETTA_URL= line")
            .trim()
            .to_owned();
        Letta {
            url,
            http: handoff_letta::testing::http(),
            runtime,
        }
    }

    fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .timeout(Duration::from_secs(300));
        if let Some(body) = body {
            request = request.json(&body);
        }
        self.runtime.block_on(async {
            let answer = request
                .send()
                .await
                .unwrap_or_else(|e| panic!("Letta {path}: {e}"));
            let status = answer.status().as_u16();
            let text = answer.text().await.unwrap_or_default();
            (status, serde_json::from_str(&text).unwrap_or(Value::Null))
        })
    }

    fn get(&self, path: &str) -> (u16, Value) {
        self.call(reqwest::Method::GET, path, None)
    }

    fn create_agent(&self, name: &str) -> String {
        let body = handoff_letta::testing::agent_request(name);
        let (status, agent) = self.call(reqwest::Method::POST, "/v1/agents/", Some(body));
        assert_eq!(status, 200, "creating an agent: {agent}");
        agent["id"].as_str().unwrap().to_owned()
    }

    fn tool_names(&self, agent: &str) -> Vec<String> {
        let (status, tools) = self.get(&format!("/v1/agents/{agent}/tools"));
        assert_eq!(status, 200, "{tools}");
        tools
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect()
    }

    /// One user message, answered synchronously (the whole agent turn).
    fn send(&self, agent: &str, text: &str) -> Value {
        let (status, reply) = self.call(
            reqwest::Method::POST,
            &format!("/v1/agents/{agent}/messages"),
            Some(json!({"messages": [{"role": "user", "content": text}]})),
        );
        assert_eq!(status, 200, "{reply}");
        reply
    }

    /// [`Letta::send`] of a turn that cannot make a task, asked again (at most twice more)
    /// when Letta's own MCP client failed to connect to Handoff: it gives up on a connection it
    /// does not get within 30 s (its own timeout; on a loaded machine it once never sent the
    /// request to Handoff). That failure is Letta's, not what the test is about; any other
    /// answer is returned as it is.
    fn send_connected(&self, agent: &str, text: &str) -> Value {
        let mut attempt = 1;
        loop {
            let messages = self.send(agent, text);
            if !not_connected(&tool_returns(&messages)) || attempt == 3 {
                return messages;
            }
            eprintln!("letta_netns: Letta's MCP client did not connect to Handoff; asking again");
            attempt += 1;
        }
    }

    /// [`Letta::send`] on a thread; its answer arrives on the receiver.
    fn send_in_background(&self, agent: &str, text: &str) -> mpsc::Receiver<Value> {
        let (tx, rx) = mpsc::channel();
        let this = Letta {
            url: self.url.clone(),
            http: self.http.clone(),
            runtime: self.runtime.clone(),
        };
        let (agent, text) = (agent.to_owned(), text.to_owned());
        std::thread::spawn(move || {
            let _ = tx.send(this.send(&agent, &text));
        });
        rx
    }

    fn blocks(&self, agent: &str) -> Vec<Value> {
        let (status, blocks) = self.get(&format!("/v1/agents/{agent}/core-memory/blocks"));
        assert_eq!(status, 200, "{blocks}");
        blocks.as_array().cloned().unwrap_or_default()
    }

    fn attached_block(&self, agent: &str, label: &str) -> Option<Value> {
        self.blocks(agent).into_iter().find(|b| b["label"] == label)
    }

    fn block_labels(&self, agent: &str) -> Vec<String> {
        self.blocks(agent)
            .iter()
            .filter_map(|b| b["label"].as_str().map(str::to_owned))
            .collect()
    }

    /// How many of the agent's messages are Handoff's notification about `task`.
    fn notifications(&self, agent: &str, task: &str) -> usize {
        let (status, messages) = self.get(&format!("/v1/agents/{agent}/messages?limit=200"));
        assert_eq!(status, 200, "{messages}");
        super::letta::count_notifications(&messages, task)
    }
}

//! The `acp` executor end to end with the real `opencode acp` (one agent process per task,
//! sandboxed, in its own cgroup) and the real Codex adapter `codex-acp`, against the scripted
//! model: a file created, a message that
//! reaches the next model request, permission asks allowed and denied through
//! `send_task_message`, cancel during a hanging model stream, pause that stops the agent's work
//! and its model requests, and a continuation by the completion checks in the same session.

use std::{
    path::{Path, PathBuf},
    time::{Duration, Instant},
};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    executors::{
        AGENT, OPENCODE, answer, events, handoff_env, has_ended, require_ripgrep, status, wait_end,
        wait_hang_reached_model, workdir,
    },
    harness::{Server, metric, require, start},
    mcp::{call, calls, ok, task_id, wait_status_for},
    process::wait_frozen,
    wait::{AGENT_PATIENCE, PATIENCE, Pace, poll, wait_until},
};

/// What differs between the ACP agents.
struct AcpAgent {
    /// The executor's name Handoff offers it under.
    executor: &'static str,
    /// Its program under `agents/node_modules/.bin`, and the arguments.
    argv: &'static [&'static str],
    /// Its isolation level.
    isolation: &'static str,
    /// The scripted model's tool call running a shell command.
    bash_call: fn(&str) -> Value,
    /// The scripted model's tool call writing a file (named relative to the task directory).
    write_call: fn(&str, &str) -> Value,
    /// The agent's environment: `home` for its state, `opencode` the OpenCode config that
    /// points at the scripted model.
    env: fn(&Path, &Value) -> Value,
}

const OPENCODE_ACP: AcpAgent = AcpAgent {
    executor: "opencode-acp",
    argv: &["opencode", "acp"],
    // Sandboxed (bubblewrap) in its own cgroup.
    isolation: "sandbox",
    bash_call: |command| json!({"name": "bash", "arguments": {"command": command, "description": "scripted step"}}),
    write_call: OPENCODE.write_call,
    env: |home, opencode| {
        let mut config = opencode.clone();
        // OpenCode asks before every tool, so Handoff's rules decide.
        config["permission"] = json!({"*": "ask"});
        let dir = |name: &str| home.join(name).display().to_string();
        json!({
            "OPENCODE_CONFIG_CONTENT": config.to_string(),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
            "HOME": dir("home"),
            "XDG_CONFIG_HOME": dir("config"),
            "XDG_DATA_HOME": dir("data"),
            "XDG_CACHE_HOME": dir("cache"),
            "XDG_STATE_HOME": dir("state"),
        })
    },
};

/// The Codex adapter (`@agentclientprotocol/codex-acp`, which runs its own `codex app-server`).
/// Codex sandboxes its commands with bubblewrap, which cannot run inside Handoff's sandbox,
/// so it runs at level `process` (its own cgroup still freezes and kills it).
const CODEX_ACP: AcpAgent = AcpAgent {
    executor: "codex-acp",
    argv: &["codex-acp"],
    isolation: "process",
    // Escalated, so the adapter asks (read-only mode) instead of refusing in Codex's sandbox.
    bash_call: |command| {
        json!({"name": "exec_command", "arguments": {"cmd": command, "workdir": "{{cwd}}",
            "yield_time_ms": 30000, "sandbox_permissions": "require_escalated",
            "justification": "scripted step"}})
    },
    write_call: |file, content| {
        let added: String = content.lines().map(|line| format!("+{line}\n")).collect();
        let patch = format!(
            "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {file}\n{added}*** End Patch\nEOF\n"
        );
        json!({"name": "exec_command", "arguments": {"cmd": patch, "workdir": "{{cwd}}"}})
    },
    env: |home, _| {
        let dir = |name: &str| home.join(name).display().to_string();
        json!({
            // `handoff_env` wrote its config.toml: the scripted model as provider.
            "CODEX_HOME": dir("codex-home"),
            // The Codex the `codex` executor runs (the adapter's own is older and fails to
            // open its state when several tasks start at once).
            "CODEX_PATH": require("agents/node_modules/.bin/codex"),
            "MOCK_API_KEY": "sk-mock",
            "TMPDIR": dir("tmp"),
            "HOME": dir("home"),
            // The adapter's default mode has a model review approvals; read-only asks the
            // client before every edit and command, so Handoff's rules decide.
            "INITIAL_AGENT_MODE": "read-only",
        })
    },
};

/// Counts up in `count` until the file `release` appears (at most 120 s).
const COUNT_UNTIL_RELEASE: &str = "i=0; while [ ! -f {{cwd}}/release ] && [ $i -lt 2400 ]; do i=$((i+1)); echo $i > {{cwd}}/count; sleep 0.05; done";

fn script(agent: &AcpAgent) -> Script {
    let bash = |command: &str| json!({"tool_calls": [(agent.bash_call)(command)]});
    let write =
        |file: &str, content: &str| json!({"tool_calls": [(agent.write_call)(file, content)]});
    // Each repeat says which it is, so the completion checks never see the same step four
    // times (they would call the task stuck).
    let count = |n: u32| bash(&format!("{COUNT_UNTIL_RELEASE}; echo step {n}"));
    let script = json!({
        "scenarios": [
            {"match": "CREATE-FILE", "turns": [write("hello.txt", "hello from the agent\n"), {"text": "Created hello.txt."}]},
            // Codex hands a step still running after 30 s back to the model; repeating it keeps
            // the agent busy until the release on a loaded machine too (once released, a repeat
            // returns at once).
            {"match": "WAIT-FOR-NAME", "turns": [count(1), count(2), count(3), count(4), {"text": "nobody told me a name, and there is nothing to change in the files"}]},
            {"match": "NAME-IS-NOTES", "turns": [write("notes.txt", "named by a message\n"), {"text": "Wrote notes.txt as asked."}]},
            {"match": "HANG", "turns": [{"hang": true}]},
            {"match": "ASK-TOUCH", "turns": [bash("touch {{cwd}}/approved.txt"), {"text": "finished after the permission answer, as the owner decided"}]},
            {"match": "PAUSE-COUNT", "turns": [count(1), count(2), count(3), count(4), {"text": "counted until released, and there is nothing to change in the files"}]},
            // The completion checks' continuation names the failing command; it comes first so
            // the continuation is not read as the original task.
            {"match": "test -f continued.txt", "turns": [write("continued.txt", "second turn\n"), {"text": "continued.txt is there now"}]},
            {"match": "CONTINUE-ME", "turns": [write("first.txt", "first turn\n"), {"text": "first.txt written. Done."}]}
        ],
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// A scripted model answering `scenarios`, and that no scenario matched to anything else.
fn scripted(runtime: &tokio::runtime::Runtime, scenarios: Value) -> ScriptedModel {
    let script = json!({
        "scenarios": scenarios,
        "default": {"text": "No scenario matched: the script's default reply, nothing to change"},
        "untooled": {"text": "Scripted title"}
    });
    runtime
        .block_on(ScriptedModel::start(
            Script::from_json(&script.to_string()).unwrap(),
            None,
        ))
        .unwrap()
}

/// Handoff with `agent` configured as an ACP executor and the default one, its state under
/// `home`.
fn acp_env(agent: &AcpAgent, model_url: &str, home: &Path) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = handoff_env(&OPENCODE, model_url, home)
        .into_iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "HANDOFF_DEFAULT_EXECUTOR" | "HANDOFF_ASK_TIMEOUT_SECS" | "HANDOFF_TASK_TIMEOUT_MS"
            )
        })
        .collect();
    // Seven agents start at once on a small machine: an ask must outlast the other scenarios
    // the test walks through first (no scenario here waits for the ask timeout).
    env.extend([
        ("HANDOFF_ASK_TIMEOUT_SECS".to_owned(), "900".to_owned()),
        ("HANDOFF_TASK_TIMEOUT_MS".to_owned(), "900000".to_owned()),
    ]);
    let opencode: Value = serde_json::from_str(
        &env.iter()
            .find(|(k, _)| k == "HANDOFF_OPENCODE_CONFIG")
            .unwrap()
            .1,
    )
    .unwrap();
    let (program, args) = agent.argv.split_first().unwrap();
    let mut argv = vec![json!(require(&format!(
        "agents/node_modules/.bin/{program}"
    )))];
    argv.extend(args.iter().map(|a| json!(a)));
    let agents = json!({agent.executor: {
        "argv": argv,
        "env": (agent.env)(home, &opencode),
        "isolation": agent.isolation,
    }});
    env.extend([
        ("HANDOFF_ACP_EXECUTORS".to_owned(), agents.to_string()),
        (
            "HANDOFF_DEFAULT_EXECUTOR".to_owned(),
            agent.executor.to_owned(),
        ),
        // The agents keep their databases and caches under the test's directories.
        (
            "HANDOFF_SANDBOX_WRITABLE".to_owned(),
            home.display().to_string(),
        ),
        ("HANDOFF_RUNNER_MEMORY_LIMIT".to_owned(), "2g".to_owned()),
    ]);
    env
}

/// Waits until the task waits for an answer (seven agents start at once here, so longer than
/// the other suites wait) and returns the pending request's event.
fn wait_ask(server: &Server, id: &str) -> Value {
    let status = wait_status_for(
        server,
        AGENT,
        id,
        &["input_required", "completed", "failed"],
        Duration::from_secs(180),
    );
    assert_eq!(status["status"], "input_required", "{status}");
    events(server, id)
        .into_iter()
        .find(|e| e["kind"] == "input" && e["data"]["state"] == "pending")
        .unwrap_or_else(|| panic!("{id} is input_required without a pending request event"))
}

/// Live (not zombie) processes of process group `pgid`, as `pid state command`.
fn group_members(pgid: i32) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // The command (field 2) may hold spaces; the rest follows its last ')'.
        let Some((head, rest)) = stat.rsplit_once(')') else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let (Some(state), Some(group)) = (fields.first(), fields.get(2)) else {
            continue;
        };
        if group.parse::<i32>().ok() == Some(pgid) && !matches!(*state, "Z" | "X") {
            found.push(format!("{head}) {state}"));
        }
    }
    found
}

/// What the memory hog prints if it ever gets its memory.
const HOG_SURVIVED: &str = "hog-survived-with";

/// Running processes whose command line contains `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if text.contains(marker) && !text.contains("cargo") {
            found.push(format!("{}: {text}", entry.file_name().to_string_lossy()));
        }
    }
    found
}

fn counter(path: &Path) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(0)
}

fn control(server: &Server, id: &str, action: &str) -> Value {
    let result = call(
        server,
        AGENT,
        "send_task_control",
        json!({"task_id": id, "control": action}),
    );
    assert_eq!(result["is_error"], false, "{action}: {result}");
    ok(&result).clone()
}

/// A task that matches no scenario: the model answers it at once, and it completes.
const WITNESS: &str = "WITNESS of the pause";

/// Pauses task `id` (the PAUSE-COUNT scenario) once its counting step runs: while paused,
/// neither the step nor the agent's model requests go on — not while another task
/// ([`WITNESS`]) runs from its agent's start to its end; after resume the turn completes.
fn pause_holds(server: &Server, model: &ScriptedModel, paused: &str) {
    // Looked up on each poll: a task that takes a pooled agent moves into the agent's
    // directory when it starts, so the directory read at submission may not be its own.
    let count = || workdir(server, paused).join("count");
    poll(Duration::from_secs(90), Pace::BACK_OFF, || {
        counter(&count()) >= 5
    })
    .unwrap_or_else(|_| {
        panic!(
            "the counting step never started: {:#?}",
            events(server, paused)
        )
    });
    control(server, paused, "pause");
    let leader = events(server, paused)
        .iter()
        .find_map(|e| e["data"]["pid"].as_i64())
        .and_then(|pid| i32::try_from(pid).ok())
        .expect("the process started event names its pid");
    wait_frozen("the paused agent", &[leader]);
    let requests = |scenario: &str| {
        model
            .requests()
            .iter()
            .filter(|r| r.scenario.as_deref() == Some(scenario))
            .count()
    };
    let count = count();
    let frozen_at = counter(&count);
    // Released while paused: a running agent would end its step and ask the model at once.
    std::fs::write(workdir(server, paused).join("release"), "").unwrap();
    let asked_before = requests("PAUSE-COUNT");
    let paused_for = Instant::now();
    let other = task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": WITNESS, "completion": {"policy": "none"}}),
    ));
    let witnessed = wait_end(server, &other);
    assert_eq!(witnessed["status"], "completed", "{witnessed}");
    assert_eq!(counter(&count), frozen_at, "progress while paused");
    assert_eq!(
        requests("PAUSE-COUNT"),
        asked_before,
        "a model request while paused"
    );
    let now = status(server, paused);
    assert_eq!(now["status"], "paused", "{now}");
    eprintln!(
        "paused for {} ms without progress",
        paused_for.elapsed().as_millis()
    );
    control(server, paused, "resume");
    let done = wait_end(server, paused);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(
        requests("PAUSE-COUNT") > asked_before,
        "the turn went on after resume"
    );
    assert_eq!(
        ok(&call(
            server,
            AGENT,
            "get_task_status",
            json!({"task_id": paused})
        ))["answer"],
        "counted until released, and there is nothing to change in the files"
    );
}

/// Milliseconds between the first events of `id` whose messages start with `from` and `to`.
fn between(server: &Server, id: &str, from: &str, to: &str) -> i64 {
    let history = events(server, id);
    let at = |prefix: &str| {
        history
            .iter()
            .find(|e| e["message"].as_str().is_some_and(|m| m.starts_with(prefix)))
            .and_then(|e| e["at_ms"].as_i64())
            .unwrap_or_else(|| panic!("no event `{prefix}` in {history:#?}"))
    };
    at(to) - at(from)
}

#[test]
fn opencode_acp_tasks_end_to_end() {
    require_ripgrep();
    acp_end_to_end(&OPENCODE_ACP);
}

#[test]
fn codex_acp_tasks_end_to_end() {
    acp_end_to_end(&CODEX_ACP);
}

/// The end-to-end runs start seven agents each; on a small machine two at once would only
/// measure the machine.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Every scenario against one running Handoff whose default executor is `agent`.
fn acp_end_to_end(agent: &AcpAgent) {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(
            script(agent),
            Some(state.path().join("model.jsonl")),
        ))
        .unwrap();
    let env = acp_env(agent, &model.base_url(), state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);

    let prompts = [
        json!({"task_description": "CREATE-FILE please"}),
        json!({"task_description": "WAIT-FOR-NAME then write the file"}),
        json!({"task_description": "HANG forever"}),
        json!({"task_description": "ASK-TOUCH allow"}),
        json!({"task_description": "ASK-TOUCH deny"}),
        json!({"task_description": "PAUSE-COUNT until released"}),
        json!({"task_description": "CONTINUE-ME", "completion": {"policy": "checks",
            "verify_commands": ["test -f continued.txt"]}}),
    ];
    let submitted = calls(
        &server,
        AGENT,
        Value::Array(
            prompts
                .iter()
                .map(|args| json!({"name": "execute_task", "arguments": args}))
                .collect(),
        ),
    );
    let ids: Vec<String> = submitted.iter().map(task_id).collect();
    let [create, multi, hang, allow, deny, paused, continued] =
        <[String; 7]>::try_from(ids).unwrap();

    // Pause freezes the agent: no work and no model request while paused. (First, as Codex
    // hands a step still running after 30 s back to the model.)
    pause_holds(&server, &model, &paused);

    // A message sent while the agent works becomes its next turn.
    let count = workdir(&server, &multi).join("count");
    wait_until("the agent to start its bash step", AGENT_PATIENCE, || {
        counter(&count) > 0
    });
    let sent = call(
        &server,
        AGENT,
        "send_task_message",
        json!({"task_id": multi, "message": "NAME-IS-NOTES", "message_type": "requirement_change"}),
    );
    assert_eq!(sent["is_error"], false, "{sent}");
    assert_eq!(ok(&sent)["delivered"], true, "{sent}");
    std::fs::write(workdir(&server, &multi).join("release"), "").unwrap();

    // The file-creating task: completed through the permission pipeline, answer and diff kept.
    let done = wait_end(&server, &create);
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{:#?}",
        events(&server, &create)
    );
    let status = call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": create}),
    );
    assert_eq!(ok(&status)["answer"], "Created hello.txt.", "{status}");
    assert_eq!(
        std::fs::read_to_string(workdir(&server, &create).join("hello.txt")).unwrap(),
        "hello from the agent\n"
    );
    let history = events(&server, &create);
    assert!(
        history.iter().any(|e| e["kind"] == "tool"
            && e["data"]["kind"] == "edit"
            && e["data"]["status"] == "completed"),
        "no completed edit tool event: {history:#?}"
    );
    // Nothing the agent asked of Handoff was refused: OpenCode reports every allowed edit to the
    // client (`fs/write_text_file`) and printed a stack trace into the output when refused.
    let refused: Vec<&Value> = history
        .iter()
        .filter(|e| {
            e["message"]
                .as_str()
                .is_some_and(|m| m.contains("not supported by Handoff"))
        })
        .collect();
    assert!(refused.is_empty(), "{refused:#?}");
    // It ran at its isolation level, and the agent said who it is.
    assert!(
        history.iter().any(|e| e["message"] == "process started"
            && e["data"]["isolation"] == agent.isolation),
        "{history:#?}"
    );
    assert!(
        history
            .iter()
            .any(|e| e["data"]["agent_info"]["version"].is_string()),
        "{history:#?}"
    );
    let session_started = format!("{} session started", agent.executor);
    eprintln!(
        "{} start-up (process started → session started): {} ms",
        agent.executor,
        between(&server, &create, "process started", &session_started)
    );

    // Permission asks: allow and deny.
    let asked = wait_ask(&server, &allow);
    assert_eq!(asked["data"]["request"]["permission"], "bash", "{asked}");
    assert_eq!(
        asked["data"]["request"]["patterns"][0],
        format!("touch {}/approved.txt", workdir(&server, &allow).display()),
        "{asked}"
    );
    answer(&server, &allow, "allow");
    wait_ask(&server, &deny);
    answer(&server, &deny, "deny");

    // Cancel during a hanging model stream: the task ends quickly, its process group is gone.
    wait_hang_reached_model(&model);
    let cancelled = control(&server, &hang, "cancel");
    assert_eq!(cancelled["status"], "cancelled", "{cancelled}");
    let history = events(&server, &hang);
    let pgid = history
        .iter()
        .find_map(|e| e["data"]["pid"].as_i64())
        .expect("the process started event names its pid");
    let pgid = i32::try_from(pgid).unwrap();
    // Stragglers are reaped soon after: the group's leader is gone once cancel returned, and
    // the members it took down go with it; zombies waiting for their reaper count as gone.
    wait_until(
        "the cancelled task's process group to be gone",
        PATIENCE,
        || {
            let left = group_members(pgid);
            if left.is_empty() {
                Ok(())
            } else {
                Err(format!("{left:?}"))
            }
        },
    );

    // The message reached the model as the next turn's prompt, and the agent followed it.
    let done = wait_end(&server, &multi);
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{:#?}",
        events(&server, &multi)
    );
    assert_eq!(
        std::fs::read_to_string(workdir(&server, &multi).join("notes.txt")).unwrap(),
        "named by a message\n"
    );
    let dir = workdir(&server, &multi);
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.scenario.as_deref() == Some("NAME-IS-NOTES")
                && r.cwd.as_deref() == dir.to_str()
                && r.body.to_string().contains("WAIT-FOR-NAME")),
        "no model request of the same session carried the message"
    );

    let allowed = wait_end(&server, &allow);
    assert_eq!(allowed["status"], "completed", "{allowed}");
    assert!(workdir(&server, &allow).join("approved.txt").exists());
    let denied = wait_end(&server, &deny);
    assert_eq!(denied["status"], "completed", "{denied}");
    assert!(!workdir(&server, &deny).join("approved.txt").exists());

    // The completion checks continued the task in the same session: the continuation's model
    // request still carries the first turn.
    let done = wait_end(&server, &continued);
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{:#?}",
        events(&server, &continued)
    );
    let dir = workdir(&server, &continued);
    assert!(dir.join("first.txt").exists() && dir.join("continued.txt").exists());
    assert!(
        model
            .requests()
            .iter()
            .any(|r| r.scenario.as_deref() == Some("test -f continued.txt")
                && r.body.to_string().contains("CONTINUE-ME")),
        "the continuation did not see the first turn"
    );
    let sessions: Vec<String> = events(&server, &continued)
        .iter()
        .filter_map(|e| e["data"]["session_id"].as_str().map(str::to_owned))
        .collect();
    assert!(sessions.len() >= 2, "{sessions:?}");
    assert!(sessions.iter().all(|s| s == &sessions[0]), "{sessions:?}");

    drop(server);
    runtime.block_on(model.shutdown());
}

/// `handoff doctor` names every configured ACP agent with the version it reports to
/// `initialize`, and fails (with a fix) for one that is not there.
#[test]
fn doctor_lists_each_acp_agent_with_its_version() {
    let state = tempfile::tempdir().unwrap();
    // Not reached: `initialize` needs no model.
    let mut env = acp_env(&OPENCODE_ACP, "http://127.0.0.1:9", state.path());
    let agents = |agent: &AcpAgent| {
        let env = acp_env(agent, "http://127.0.0.1:9", state.path());
        let config = &env
            .iter()
            .find(|(k, _)| k == "HANDOFF_ACP_EXECUTORS")
            .unwrap()
            .1;
        serde_json::from_str::<Value>(config).unwrap()
    };
    let mut all = agents(&OPENCODE_ACP);
    all[CODEX_ACP.executor] = agents(&CODEX_ACP)[CODEX_ACP.executor].clone();
    all["missing-acp"] = json!({"argv": ["/nonexistent/agent-acp"]});
    env.retain(|(k, _)| k != "HANDOFF_ACP_EXECUTORS" && k != "HANDOFF_DEFAULT_EXECUTOR");
    env.extend([
        ("HANDOFF_ACP_EXECUTORS".to_owned(), all.to_string()),
        (
            "HANDOFF_DEFAULT_EXECUTOR".to_owned(),
            "missing-acp".to_owned(),
        ),
    ]);
    let (passed, checks) = doctor(state.path(), &env);
    assert!(!passed, "the default executor's agent is missing");
    let check = |name: &str| named_check(&checks, name);
    let opencode = check("acp opencode-acp");
    assert_eq!(opencode["ok"], true, "{opencode}");
    assert!(
        opencode["detail"]
            .as_str()
            .unwrap()
            .starts_with("OpenCode 1.18.33 (ACP 1"),
        "{opencode}"
    );
    let codex = check("acp codex-acp");
    assert_eq!(codex["ok"], true, "{codex}");
    assert!(
        codex["detail"]
            .as_str()
            .unwrap()
            .starts_with("@agentclientprotocol/codex-acp 2.6.0"),
        "{codex}"
    );
    let missing = check("acp missing-acp");
    assert_eq!(missing["ok"], false, "{missing}");
    assert_eq!(missing["required"], true, "{missing}");
    assert!(
        missing["fix"]
            .as_str()
            .unwrap()
            .contains("executors.acp.missing-acp.argv"),
        "{missing}"
    );
}

/// An ACP agent configured with an MCP server gets it in its task's session: `opencode acp`
/// starts the stdio server (the official Python SDK's) inside its sandbox, and its model is
/// offered the server's tool.
#[test]
fn an_acp_agent_is_given_its_configured_mcp_servers() {
    require_ripgrep();
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = scripted(
        &runtime,
        json!([{"match": "LIST-TOOLS", "turns": [{"text": "I was shown my tools, and there is nothing to change in the files"}]}]),
    );
    let mut env = acp_env(&OPENCODE_ACP, &model.base_url(), state.path());
    let started = state.path().join("probe-started");
    let agents = env
        .iter_mut()
        .find(|(k, _)| k == "HANDOFF_ACP_EXECUTORS")
        .unwrap();
    let mut configured: Value = serde_json::from_str(&agents.1).unwrap();
    configured[OPENCODE_ACP.executor]["mcp_servers"] = json!([{
        "name": "probe",
        "command": require(".venv/bin/python"),
        "args": [require("mcp_probe_server.py"), started.display().to_string()],
    }]);
    agents.1 = configured.to_string();
    // Another default, so only naming the agent in `execute_task {executor}` selects it.
    env.retain(|(k, _)| k != "HANDOFF_DEFAULT_EXECUTOR");
    env.push(("HANDOFF_DEFAULT_EXECUTOR".to_owned(), "codex".to_owned()));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    completed_on(&server, OPENCODE_ACP.executor, "LIST-TOOLS please");
    assert!(
        std::fs::read_to_string(&started).is_ok_and(|s| s.contains("started")),
        "the agent never started the configured MCP server"
    );
    let offered: Vec<String> = model
        .requests()
        .iter()
        .filter(|r| r.scenario.as_deref() == Some("LIST-TOOLS"))
        .flat_map(|r| r.body["tools"].as_array().cloned().unwrap_or_default())
        .filter_map(|t| {
            t.pointer("/function/name")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .collect();
    assert!(
        offered.iter().any(|name| name.contains("probe_note")),
        "the model was not offered the MCP server's tool: {offered:?}"
    );
}

/// `handoff doctor --json` with `env` and its data dir under `state`: whether every required
/// check passed, and the checks.
fn doctor(state: &Path, env: &[(String, String)]) -> (bool, Value) {
    let out = std::process::Command::new(super::harness::BIN)
        .args(["doctor", "--json"])
        .current_dir(state)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("HANDOFF_DATA_DIR", state.join("data"))
        .output()
        .unwrap();
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

/// The check called `name`.
fn named_check(checks: &Value, name: &str) -> Value {
    checks
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} check in {checks:#}"))
        .clone()
}

/// With no ACP settings, `handoff doctor` asks the built-in `opencode-acp` itself for its name
/// and version, started as tasks start it.
#[test]
fn doctor_probes_the_built_in_opencode_acp() {
    let state = tempfile::tempdir().unwrap();
    let mut env = acp_env(&OPENCODE_ACP, "http://127.0.0.1:9", state.path());
    env.retain(|(k, _)| k != "HANDOFF_ACP_EXECUTORS" && k != "HANDOFF_DEFAULT_EXECUTOR");
    let (_, checks) = doctor(state.path(), &env);
    let built_in = named_check(&checks, "acp opencode-acp");
    assert_eq!(built_in["ok"], true, "{built_in}");
    assert!(
        built_in["detail"]
            .as_str()
            .unwrap()
            .starts_with("OpenCode 1.18.33 (ACP 1"),
        "{built_in}"
    );
}

/// The default executor as a new user gets it — no executor or isolation settings: the
/// built-in `opencode-acp`, one OpenCode per task, sandboxed, started ahead of the task (a pool
/// of one). The pooled agent writes inside its task's directory and nowhere else, pause and
/// resume hold on it, and a memory hog is killed at the task's limit, failing the task
/// `out of memory`.
#[test]
fn the_default_executor_is_a_pooled_confined_pausable_opencode() {
    require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    // Also lists the agents' homes (each agent's own OpenCode database) it can see.
    let escape = "echo inside > {{cwd}}/inside.txt; echo x > {{cwd}}/../escape.txt; echo x > /etc/handoff-acp-escape; ls {{cwd}}/../../agent-homes/opencode-acp > {{cwd}}/homes.txt 2>&1; true";
    // 3 GiB, every page written, under a 1 GiB limit (a pooled `opencode acp` that ran its
    // warm-up and a task's session peaks near 700 MB: measured kills at 768 MiB).
    let hog = format!("python3 -c 'b = bytearray(3 << 30); print(\"{HOG_SURVIVED}\", len(b))'");
    let count = format!("{COUNT_UNTIL_RELEASE}; echo counted");
    let model = scripted(
        &runtime,
        json!([
            {"match": "ESCAPE", "turns": [
                {"tool_calls": [(OPENCODE_ACP.bash_call)(escape)]}, {"text": "tried, and there is nothing to change in the files"}
            ]},
            {"match": "HOG", "turns": [
                {"tool_calls": [(OPENCODE_ACP.bash_call)(&hog)]}, {"text": "the hog ran, and there is nothing to change in the files"}
            ]},
            {"match": "PAUSE-COUNT", "turns": [
                {"tool_calls": [(OPENCODE_ACP.bash_call)(&count)]},
                {"text": "counted until released, and there is nothing to change in the files"}
            ]}
        ]),
    );
    let server = as_a_new_user(
        &model,
        state.path(),
        &[("HANDOFF_RUNNER_MEMORY_LIMIT", "1g")],
    );
    let submit = |text: &str| submit_unchecked(&server, text);
    let pooled = |id: &str| {
        let history = events(&server, id);
        let took = history.iter().any(|e| e["data"]["pooled"] == true);
        let dir = workdir(&server, id);
        let named = dir
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("pool-"));
        took && named
    };
    wait_pool_ready(&server);
    let id = submit("ESCAPE please");
    let done = wait_end(&server, &id);
    assert_eq!(
        done["status"],
        "completed",
        "{done}\n{:#?}",
        events(&server, &id)
    );
    let dir = workdir(&server, &id);
    assert_eq!(
        std::fs::read_to_string(dir.join("inside.txt")).unwrap(),
        "inside\n"
    );
    assert!(
        !dir.join("../escape.txt").exists(),
        "wrote next to its directory"
    );
    assert!(
        !Path::new("/etc/handoff-acp-escape").exists(),
        "wrote to /etc"
    );
    let history = events(&server, &id);
    assert!(
        history
            .iter()
            .any(|e| e["message"] == "process started" && e["data"]["isolation"] == "sandbox"),
        "{history:#?}"
    );
    assert!(pooled(&id), "did not take the pooled agent: {history:#?}");
    // The agent's warm-up session in that directory left nothing in it.
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["homes.txt", "inside.txt"]);
    // Its agent saw its own home only, not the next agent's the pool started meanwhile; the
    // home went with its run.
    let seen = std::fs::read_to_string(dir.join("homes.txt")).unwrap();
    let seen: Vec<&str> = seen.lines().collect();
    assert_eq!(seen.len(), 1, "{seen:?}");
    wait_pool_ready(&server);
    let homes = dir.join("../../agent-homes/opencode-acp");
    let left: Vec<String> = std::fs::read_dir(&homes)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 1, "only the waiting agent's home: {left:?}");
    assert_ne!(left[0], seen[0], "the finished agent's home is still there");
    eprintln!(
        "pooled start (task's first event → session started): {} ms",
        between(&server, &id, "queued", "opencode-acp session started")
    );

    // Pause and resume hold on the default executor's pooled agent.
    wait_pool_ready(&server);
    let paused = submit("PAUSE-COUNT until released");
    pause_holds(&server, &model, &paused);
    assert!(pooled(&paused), "{:#?}", events(&server, &paused));

    let hog = submit("HOG all the memory");

    // The kernel kills the hog (or the agent, the larger process then); either way the whole
    // run ends at once, failed for its memory, and nothing of it is left.
    let failed = wait_end(&server, &hog);
    assert_eq!(
        failed["status"],
        "failed",
        "{failed}\n{:#?}",
        events(&server, &hog)
    );
    assert_eq!(failed["error"], "out of memory (limit 1 GiB)", "{failed}");
    let said: String = events(&server, &hog)
        .iter()
        .filter_map(|e| e["message"].as_str().map(str::to_owned))
        .collect();
    assert!(
        !said.contains(&format!("{HOG_SURVIVED} ")),
        "the hog survived: {said}"
    );
    assert!(
        processes_with(HOG_SURVIVED).is_empty(),
        "left running: {:?}",
        processes_with(HOG_SURVIVED)
    );
    eprintln!(
        "escape task {} ms, hog task {} ms",
        done["duration_ms"], failed["duration_ms"]
    );

    drop(server);
    runtime.block_on(model.shutdown());
}

/// Handoff as a new user gets it — no executor or isolation settings: the built-in
/// `opencode-acp` with its sandbox and a pool of one (restated: the harness turns pools off for
/// every other test) — against `model`, its state under `state`, with `extra` settings.
pub(super) fn as_a_new_user(model: &ScriptedModel, state: &Path, extra: &[(&str, &str)]) -> Server {
    let mut env: Vec<(String, String)> = handoff_env(&OPENCODE, &model.base_url(), state)
        .into_iter()
        .filter(|(k, _)| k != "HANDOFF_DEFAULT_EXECUTOR" && k != "HANDOFF_OPENCODE_POOL")
        .collect();
    env.push(("HANDOFF_OPENCODE_POOL".to_owned(), "1".to_owned()));
    env.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    start(&env)
}

/// Submits `text` without completion checks: confinement and the pool are the point of these
/// tests, and the evaluator's continuation would only start a second agent. Its task id.
pub(super) fn submit_unchecked(server: &Server, text: &str) -> String {
    task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": text, "completion": {"policy": "none"}}),
    ))
}

/// Waits until `opencode-acp` has an agent started ahead of the next task.
pub(super) fn wait_pool_ready(server: &Server) {
    wait_until("a pooled agent ready", Duration::from_secs(120), || {
        metric(
            server,
            r#"handoff_executor_pool_ready{executor="opencode-acp"}"#,
        ) >= 1.0
    });
}

/// What a person reads of a task that wrote three files with the real `opencode acp`: one
/// line per tool call in `handoff logs` (not one per step, nor a line per policy decision), and
/// no stack trace — OpenCode sends every allowed edit to the client (`fs/write_text_file`),
/// and printed one into the task's output per edit when Handoff refused it.
#[test]
fn handoff_logs_shows_one_line_per_tool_call_of_opencode_acp() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let write = |file: &str| json!({"tool_calls": [(OPENCODE_ACP.write_call)(file, "one line\n")]});
    let model = scripted(
        &runtime,
        json!([{"match": "THREE-FILES", "turns": [write("a.txt"), write("b.txt"), write("c.txt"),
            {"text": "Wrote a.txt, b.txt and c.txt as asked."}]}]),
    );
    let env = acp_env(&OPENCODE_ACP, &model.base_url(), state.path());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let server = start(&env);
    let id = completed_on(&server, OPENCODE_ACP.executor, "THREE-FILES please");

    let logs = std::process::Command::new(super::harness::BIN)
        .args(["logs", &id])
        .env("HANDOFF_URL", &server.url)
        .env("HANDOFF_AGENT", AGENT)
        .env_remove("HANDOFF_TOKEN")
        .env("XDG_CONFIG_HOME", state.path().join("client-config"))
        .output()
        .unwrap();
    assert!(logs.status.success(), "{logs:?}");
    let text = String::from_utf8_lossy(&logs.stdout);
    let tools: Vec<&str> = text.lines().filter(|l| l.contains(" tool ")).collect();
    assert_eq!(tools.len(), 3, "one line per tool call:\n{text}");
    // Refused, OpenCode printed its own minified source (`2 | // @bun`, `/$bunfs/root/…`).
    for refused in ["not supported by Handoff", "@bun", "$bunfs"] {
        assert!(!text.contains(refused), "{refused:?} in:\n{text}");
    }
    drop(server);
    runtime.block_on(model.shutdown());
}

/// `git -C dir ARGS` (with an identity for the test's own commits); its stdout.
pub(super) fn git(dir: &Path, args: &[&str]) -> String {
    let output = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// With `tasks.git_repository`, the built-in `opencode-acp` (sandboxed, the pooled agent) works
/// in a worktree on a branch of the task's own, and Handoff commits what it wrote there — by
/// the executor, committed by Handoff — while the repository's checkout, its checked-out branch
/// and its working tree stay byte for byte as they were.
#[test]
fn a_task_on_a_repository_commits_its_change_on_its_own_branch() {
    require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    git(repo.path(), &["init", "-q", "-b", "main"]);
    std::fs::write(repo.path().join("README"), "hello\n").unwrap();
    std::fs::write(
        repo.path().join("draft.txt"),
        "the user's uncommitted work\n",
    )
    .unwrap();
    git(repo.path(), &["add", "README"]);
    git(repo.path(), &["commit", "-q", "-m", "first"]);
    let before = (
        git(repo.path(), &["status", "--porcelain"]),
        git(repo.path(), &["rev-parse", "HEAD"]),
    );

    let model = runtime
        .block_on(ScriptedModel::start(script(&OPENCODE_ACP), None))
        .unwrap();
    let repo_path = repo.path().display().to_string();
    let server = as_a_new_user(
        &model,
        state.path(),
        &[("HANDOFF_GIT_REPOSITORY", &repo_path)],
    );
    wait_pool_ready(&server);
    let id = submit_unchecked(&server, "CREATE-FILE please");
    let done = wait_end(&server, &id);
    assert_eq!(done["status"], "completed", "{done}");

    let history = events(&server, &id);
    let committed = history
        .iter()
        .find(|e| e["data"]["commit"].is_string())
        .unwrap_or_else(|| panic!("no commit in {history:#?}"));
    let branch = committed["data"]["branch"].as_str().unwrap().to_owned();
    assert!(branch.starts_with("handoff/"), "{branch}");
    assert_eq!(
        done["branch"],
        branch.as_str(),
        "get_task_status names the branch"
    );
    let log = git(repo.path(), &["log", "-1", "--format=%an|%cn|%s", &branch]);
    assert_eq!(log.trim(), "opencode-acp|Handoff|CREATE-FILE please");
    let files = git(repo.path(), &["show", "--format=", "--name-only", &branch]);
    assert_eq!(files.trim(), "hello.txt");
    let content = git(repo.path(), &["show", &format!("{branch}:hello.txt")]);
    assert_eq!(content, "hello from the agent\n");

    // The user's side: the same branch checked out, at the same commit, the same files.
    assert_eq!(
        git(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]).trim(),
        "main"
    );
    let after = (
        git(repo.path(), &["status", "--porcelain"]),
        git(repo.path(), &["rev-parse", "HEAD"]),
    );
    assert_eq!(after, before);
    assert_eq!(
        std::fs::read_to_string(repo.path().join("README")).unwrap(),
        "hello\n"
    );
    assert!(!repo.path().join("hello.txt").exists());
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Submits `text` to `executor` without verified completion and waits until it completed; its id.
fn completed_on(server: &Server, executor: &str, text: &str) -> String {
    let id = task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": text, "executor": executor, "completion": {"policy": "none"}}),
    ));
    let done = wait_end(server, &id);
    assert_eq!(done["status"], "completed", "{done}");
    id
}

/// Marks a file planted by the first task's agent.
const PLANTED: &str = "PLANTED-BY-TASK-ONE";

/// Longer than a task may run here (`HANDOFF_TASK_TIMEOUT_MS`, 180 s).
const LIMIT: Duration = Duration::from_secs(240);

/// Cross-task isolation of the built-in `opencode-acp` as a new user gets it (sandboxed,
/// pooled): the first task's agent writes into every directory it might reach outside its task
/// directory — its cache, data, state and config directories, its home, `/tmp`, and the
/// server's own OpenCode directories by their host paths — and neither a task running at the
/// same time nor a later one sees any of it; once the first run ended, nothing it planted is
/// left on the host.
#[test]
fn what_one_tasks_agent_writes_no_other_tasks_agent_sees() {
    require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let host = |dir: &str| state.path().join(dir).display().to_string();
    let places = [
        "\"$XDG_CACHE_HOME/opencode\"".to_owned(),
        "\"$XDG_CACHE_HOME\"".to_owned(),
        "\"$XDG_DATA_HOME/opencode\"".to_owned(),
        "\"$XDG_DATA_HOME\"".to_owned(),
        "\"$XDG_STATE_HOME\"".to_owned(),
        "\"$XDG_CONFIG_HOME/opencode\"".to_owned(),
        "\"$HOME\"".to_owned(),
        "/tmp".to_owned(),
        "\"$TMPDIR\"".to_owned(),
        format!("{}/opencode", host("cache")),
        format!("{}/opencode", host("data")),
        format!("{}/opencode", host("config")),
        host("home"),
    ]
    .join(" ");
    let plant = format!(
        "for d in {places}; do mkdir -p \"$d\" 2>/dev/null; echo x > \"$d/{PLANTED}\" 2>/dev/null \
         && echo \"$d\" >> {{{{cwd}}}}/planted.txt; done; {COUNT_UNTIL_RELEASE}; echo planted"
    );
    let look = format!(
        "for d in {places}; do [ -e \"$d/{PLANTED}\" ] && echo \"$d\" >> {{{{cwd}}}}/found.txt; \
         done; find {} -name {PLANTED} >> {{{{cwd}}}}/found.txt 2>/dev/null; \
         echo looked > {{{{cwd}}}}/looked.txt",
        state.path().display()
    );
    let model = scripted(
        &runtime,
        json!([
            {"match": "PLANT", "turns": [
                {"tool_calls": [(OPENCODE_ACP.bash_call)(&plant)]}, {"text": "planted, and there is nothing to change in the files"}
            ]},
            {"match": "LOOK", "turns": [
                {"tool_calls": [(OPENCODE_ACP.bash_call)(&look)]}, {"text": "looked, and there is nothing to change in the files"}
            ]}
        ]),
    );
    // A new user's setup: the built-in executor, its sandbox and pool; no writable extras.
    let server = as_a_new_user(&model, state.path(), &[]);
    let submit = |text: &str| submit_unchecked(&server, text);
    let lines = |path: &Path| -> Vec<String> {
        std::fs::read_to_string(path)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };

    wait_pool_ready(&server);
    let one = submit("PLANT everywhere");
    // The task's own deadline (180 s) bounds this wait: it plants, or it ends. Its directory
    // is read each time: a task that takes a pooled agent moves into the agent's directory
    // when it starts, so the one reported at submission may not be where it works.
    let one_dir = wait_until(
        "the first agent to plant, or its task to end",
        LIMIT,
        || {
            let status = status(&server, &one);
            let dir = PathBuf::from(status["workdir"].as_str().unwrap_or_default());
            if dir.join("count").exists() || has_ended(&status) {
                Ok(dir)
            } else {
                Err(status["status"].clone())
            }
        },
    );
    assert!(
        one_dir.join("count").exists(),
        "{:#?}",
        events(&server, &one)
    );
    let planted = lines(&one_dir.join("planted.txt"));
    assert!(
        planted.iter().any(|d| d == "/tmp"),
        "the plant ran: {planted:?}"
    );

    // A task at the same time sees nothing of it.
    let concurrent = submit("LOOK while the first one runs");
    let done = wait_end(&server, &concurrent);
    assert_eq!(done["status"], "completed", "{done}");
    let concurrent_dir = workdir(&server, &concurrent);
    assert!(concurrent_dir.join("looked.txt").exists(), "{done}");
    assert_eq!(
        lines(&concurrent_dir.join("found.txt")),
        Vec::<String>::new()
    );

    std::fs::write(one_dir.join("release"), "").unwrap();
    let done = wait_end(&server, &one);
    assert_eq!(done["status"], "completed", "{done}");

    // Nor does a later one, and nothing planted is left on the host.
    let later = submit("LOOK after the first one ended");
    let done = wait_end(&server, &later);
    assert_eq!(done["status"], "completed", "{done}");
    let later_dir = workdir(&server, &later);
    assert!(later_dir.join("looked.txt").exists(), "{done}");
    assert_eq!(lines(&later_dir.join("found.txt")), Vec::<String>::new());
    let data_dir = one_dir.parent().and_then(Path::parent).unwrap();
    for root in [state.path(), data_dir] {
        let left = find_named(root, PLANTED);
        assert!(
            left.is_empty(),
            "left on the host: {left:?} (planted in {planted:?})"
        );
    }

    drop(server);
    runtime.block_on(model.shutdown());
}

/// Every file named `name` under `root`.
pub(super) fn find_named(root: &Path, name: &str) -> Vec<std::path::PathBuf> {
    find_matching(root, |file| file == name)
}

/// Every file under `root` whose name `matches`.
pub(super) fn find_matching(root: &Path, matches: impl Fn(&str) -> bool) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(path);
            } else if matches(&entry.file_name().to_string_lossy()) {
                found.push(path);
            }
        }
    }
    found
}

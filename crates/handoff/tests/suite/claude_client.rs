//! Claude Code as an MCP client of Handoff (the real `claude` CLI, `--mcp-config` over HTTP, its
//! model the scripted model on loopback): Claude Code connects and lists Handoff's tools to its
//! model as deferred tools; the model loads `execute_task` with ToolSearch and calls it; the call
//! reaches Handoff as the agent the configured header names, the task runs, and its id comes
//! back to the model as the tool's result. The test checks what the model was sent at each step.

use std::{process::Command, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    harness::{require, run_client_for, start},
    mcp::{call, history, ok, wait_status_for},
    stdio::SCRIPT_EXECUTOR,
};

/// The agent Claude Code speaks for, by the header in its MCP configuration.
const AGENT: &str = "claude-code-client";
/// The tool as Claude Code names it to its model: `mcp__<server>__<tool>`.
const EXECUTE: &str = "mcp__handoff__execute_task";

fn script() -> Script {
    // Claude Code defers MCP tools: the model loads the schema with ToolSearch, then calls it.
    let load = json!({"tool_calls": [{"name": "ToolSearch", "arguments": {"query": format!("select:{EXECUTE}")}}]});
    let submit = json!({"tool_calls": [{"name": EXECUTE, "arguments": {"task_description": "echo from-claude-code"}}]});
    let script = json!({
        "scenarios": [
            {"match": "INTEROP-CLAUDE", "api": "anthropic", "turns": [load, submit, {"text": "Handed over to Handoff."}]}
        ],
        "default": {"text": "No scenario matched."},
        "untooled": {"text": "Scripted title"}
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Whether an Anthropic Messages request offered a tool named `name`.
fn offers(body: &Value, name: &str) -> bool {
    body["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == name))
}

/// The first task id (`task_` + 26 base32 letters) in `text`.
fn task_id_in(text: &str) -> Option<String> {
    text.match_indices("task_").find_map(|(at, _)| {
        let id: String = text[at + 5..]
            .chars()
            .take_while(|c| c.is_ascii_lowercase() || ('2'..='7').contains(c))
            .collect();
        (id.len() == 26).then(|| format!("task_{id}"))
    })
}

/// The names of the tools an Anthropic Messages request offered.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn claude_code_hands_a_task_to_handoff_over_http() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let state = tempfile::tempdir().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(), None))
        .unwrap();
    let server = start(&SCRIPT_EXECUTOR);
    let config = json!({"mcpServers": {"handoff": {
        "type": "http", "url": server.url, "headers": {"x-agent-id": AGENT}
    }}});
    let home = |name: &str| {
        let dir = state.path().join(name);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    };
    let mut claude = Command::new(require("agents/node_modules/.bin/claude"));
    claude
        .args([
            "-p",
            "INTEROP-CLAUDE: hand `echo from-claude-code` to Handoff",
        ])
        .args(["--mcp-config", &config.to_string(), "--strict-mcp-config"])
        .args(["--allowedTools", EXECUTE, "--output-format", "json"])
        .current_dir(home("work"))
        .env("HOME", home("home"))
        .env("XDG_CONFIG_HOME", home("config"))
        .env("XDG_DATA_HOME", home("data"))
        .env("XDG_CACHE_HOME", home("cache"))
        .env("XDG_STATE_HOME", home("state"))
        .env("ANTHROPIC_BASE_URL", model.base_url())
        .env("ANTHROPIC_API_KEY", "sk-ant-mock")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("CLAUDE_CODE_MAX_RETRIES", "1");
    let output = run_client_for(claude, "claude -p with Handoff", Duration::from_secs(180));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "claude printed no JSON ({e}): {}",
            String::from_utf8_lossy(&output.stdout)
        )
    });
    assert_eq!(answer["result"], "Handed over to Handoff.", "{answer}");

    // The model was offered Handoff's tools, called one, and was given the task's id back.
    let requests = model.requests();
    let scripted: Vec<_> = requests
        .iter()
        .filter(|r| r.scenario.as_deref() == Some("INTEROP-CLAUDE"))
        .collect();
    // Listed as deferred at first, offered once ToolSearch loaded it.
    assert!(
        scripted
            .first()
            .is_some_and(|r| !offers(&r.body, EXECUTE) && r.body.to_string().contains(EXECUTE)),
        "Claude Code did not list {EXECUTE} for its model"
    );
    assert!(
        scripted.iter().find(|r| r.turn == 1).is_some_and(
            |r| offers(&r.body, EXECUTE) || r.body.to_string().contains("tool_reference")
        ),
        "ToolSearch did not load {EXECUTE}: {:?}",
        scripted
            .iter()
            .map(|r| (r.turn, tool_names(&r.body)))
            .collect::<Vec<_>>()
    );
    let result = scripted
        .iter()
        .find(|r| r.turn == 2)
        .map(|r| r.body.to_string())
        .unwrap_or_else(|| panic!("no request after the tool call: {scripted:?}"));
    let id = task_id_in(&result)
        .unwrap_or_else(|| panic!("the tool result carried no task id: {result}"));

    // Handoff ran it for the agent the header named, and only that agent sees it.
    let done = wait_status_for(
        &server,
        AGENT,
        &id,
        &["completed", "failed"],
        Duration::from_secs(60),
    );
    assert_eq!(done["status"], "completed", "{done}");
    let events = history(&server, AGENT, &id)["events"].clone();
    assert!(
        events
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["kind"] == "output" && e["message"].as_str() == Some("from-claude-code")),
        "{events:#}"
    );
    let listed = call(&server, "someone-else", "list_tasks", json!({}));
    assert_eq!(ok(&listed)["tasks"], json!([]), "{listed}");

    drop(server);
    runtime.block_on(model.shutdown());
}

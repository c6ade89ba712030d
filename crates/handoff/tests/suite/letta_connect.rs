//! `handoff letta connect` in native mode end to end, against the REAL Letta 0.16.8
//! (`scripts/letta/up.sh`): the command makes the Python tools and sets the agent's secrets,
//! the agent's model (a scripted model this test owns) calls the native `execute_task`, the
//! task runs in the real Handoff as that agent; a second run changes nothing; `--remove`
//! leaves no Handoff tool or secret behind.

use std::{
    process::{Command, Output},
    time::Duration,
};

use handoff_scripted_model::{Scenario, Script, ScriptedModel, Turn};
use serde_json::{Value, json};

use super::{
    harness::{BIN, Server, run_client_for, start},
    letta::letta_url,
    mcp::{calls_with, ok},
};

/// The gateway token Handoff accepts and connect hands to Letta.
pub(super) const GATEWAY: &str = "connect-gateway-token-0123456789";

/// Letta's slow tool sandbox and model turns under load: generous bounds.
const LETTA_TURN: Duration = Duration::from_secs(300);
const CONNECT_RUN: Duration = Duration::from_secs(240);

/// One HTTP call to Letta, allowed a whole agent turn; the status and the JSON answer.
pub(super) fn letta(method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    super::letta::letta_call(method, path, body, LETTA_TURN)
}

/// A prefix no other run uses: tool names are unique in the shared Letta organisation.
pub(super) fn prefix(what: &str) -> String {
    format!("{what}{}", std::process::id())
}

/// `handoff letta connect ARGS` against the shared Letta, in `dir`, with `env` on top.
pub(super) fn connect_command(
    dir: &std::path::Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut command = Command::new(BIN);
    command
        .args(["letta", "connect"])
        .args(args)
        .current_dir(dir)
        .env_remove("HANDOFF_PUBLIC_URL")
        .env_remove("HANDOFF_AUTH_TOKENS")
        .env("LETTA_API_URL", letta_url())
        .env("HANDOFF_AUTH_TOKEN", GATEWAY)
        .envs(env.iter().copied());
    command
}

/// Runs a connect that must succeed; its stdout.
pub(super) fn connect_ok(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let output: Output = run_client_for(
        connect_command(dir, args, env),
        "handoff letta connect",
        CONNECT_RUN,
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The agent's attached tools' names and its secrets.
pub(super) fn agent_state(agent: &str) -> (Vec<String>, Value) {
    let (status, state) = letta(
        "GET",
        &format!("/v1/agents/{agent}?include=agent.tools&include=agent.secrets"),
        None,
    );
    assert_eq!(status, 200, "{state}");
    let tools = state["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let secrets = state["secrets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["key"].as_str().unwrap().to_owned(), s["value"].clone()))
        .collect::<serde_json::Map<_, _>>();
    (tools, Value::Object(secrets))
}

/// A Letta agent `name` whose model is `model` (owned by the test), with one secret of its own.
fn create_agent(model: &ScriptedModel, name: &str) -> String {
    let body = json!({
        "name": format!("connect-native-{name}-{}", std::process::id()),
        "llm_config": {
            "model": "gpt-4o-mini",
            "model_endpoint_type": "openai",
            "model_endpoint": model.openai_base_url(),
            "context_window": 128000,
            "provider_name": "openai",
        },
        "embedding": "openai/text-embedding-3-small",
        "secrets": {"OWN_SETTING": "keep-me"},
    });
    let (status, agent) = letta("POST", "/v1/agents/", Some(body));
    assert_eq!(status, 200, "creating a Letta agent: {agent}");
    agent["id"].as_str().unwrap().to_owned()
}

/// Handoff with the `command` executor, a gateway token (and no other) and the Letta
/// integration on.
fn start_handoff() -> Server {
    start(&[
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_COMPLETION_POLICY", "none"),
        ("HANDOFF_AUTH_TOKEN", GATEWAY),
        ("HANDOFF_LETTA_API_URL", letta_url()),
    ])
}

/// The port of a started server.
fn port_of(server: &Server) -> String {
    server
        .url
        .trim_end_matches("/mcp")
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned()
}

/// Native mode with nothing but a gateway token configured: each agent gets a token of its
/// own derived from it (never the gateway token), and an agent made after Handoff started is
/// connected and works without a restart.
#[test]
fn native_tools_run_tasks_as_the_agent_and_connect_is_idempotent_and_removable() {
    let prefix = prefix("hcn");
    let tool = format!("{prefix}_execute_task");
    let trigger = format!("HANDOFF-CONNECT-NATIVE-{}", std::process::id());
    let script = Script::new(vec![Scenario::new(
        trigger.clone(),
        vec![
            Turn::tool_call(
                tool.clone(),
                json!({"task_description": "echo native-connect-ok", "sync": true}),
            ),
            Turn::text("The task ran."),
        ],
    )]);
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script, None))
        .unwrap();
    let agent = create_agent(&model, "a");
    let server = start_handoff();
    let port = port_of(&server);
    let env = [("HANDOFF_PORT", port.as_str())];
    let args = |agent: &str| {
        ["--agent", agent, "--mode", "native", "--prefix", &prefix].map(str::to_owned)
    };
    let endpoint = format!("http://127.0.0.1:{port}/mcp");

    let first = connect_ok(
        server.dir(),
        &args(&agent).each_ref().map(String::as_str),
        &env,
    );
    assert!(first.contains(&format!("created tool {tool}")), "{first}");
    assert!(
        first.contains(&format!("attached {tool} to {agent}")),
        "{first}"
    );
    assert!(
        first.contains(&format!("connected {agent} to Handoff")),
        "{first}"
    );
    assert!(!first.contains(GATEWAY), "{first}");
    let upper = prefix.to_ascii_uppercase();
    let (tools, secrets) = agent_state(&agent);
    assert!(tools.contains(&tool), "{tools:?}");
    assert_eq!(secrets[format!("{upper}_MCP_URL")], json!(endpoint));
    let own = handoff_config::derived_agent_token(&handoff_config::Secret::new(GATEWAY), &agent);
    assert_eq!(
        secrets[format!("{upper}_MCP_TOKEN")],
        json!(own.expose()),
        "a token of the agent's own, not the gateway's"
    );
    assert_eq!(
        secrets["OWN_SETTING"], "keep-me",
        "the agent's own secret survives"
    );

    let reply = drive(&agent, &trigger);
    assert_runs_as_the_agent(&server, &agent, &reply);
    assert_llm_saw_handoffs_schema(&model, &tool);

    // An agent made now, while Handoff runs: connected, it works at once.
    let later = create_agent(&model, "b");
    connect_ok(
        server.dir(),
        &args(&later).each_ref().map(String::as_str),
        &env,
    );
    let reply = drive(&later, &trigger);
    assert_runs_as_the_agent(&server, &later, &reply);
    let later_args = args(&later);
    let remove_later = [
        &later_args.each_ref().map(String::as_str)[..],
        &["--remove"],
    ]
    .concat();
    let removed = connect_ok(server.dir(), &remove_later, &env);
    assert!(
        removed.contains(&format!("detached {tool} from {later}")),
        "{removed}"
    );

    let args = args(&agent);
    let args = args.each_ref().map(String::as_str);
    let second = connect_ok(server.dir(), &args, &env);
    assert!(
        !second.contains("created") && !second.contains("\nattached"),
        "{second}"
    );
    assert!(
        second.contains(&format!("already attached {tool} to {agent}")),
        "{second}"
    );
    assert!(second.contains("nothing changed"), "{second}");
    let json_args = [&args[..], &["--json"]].concat();
    let summary: Value = serde_json::from_str(&connect_ok(server.dir(), &json_args, &env)).unwrap();
    assert_eq!(
        (summary["ok"].clone(), summary["changed"].clone()),
        (json!(true), json!(false))
    );

    assert_removed(&server, &args, &env, &agent, &prefix);
}

/// Sends the message that makes the scripted model call the native tool; Letta's answer.
fn drive(agent: &str, trigger: &str) -> Value {
    let body = json!({"messages": [{"role": "user", "content": format!("{trigger}: run it")}]});
    let (status, reply) = letta("POST", &format!("/v1/agents/{agent}/messages"), Some(body));
    assert_eq!(status, 200, "{reply}");
    reply
}

/// The tool call succeeded, and Handoff holds exactly that task, owned by the agent.
fn assert_runs_as_the_agent(server: &Server, agent: &str, reply: &Value) {
    let messages = reply["messages"].as_array().unwrap();
    let returned = messages
        .iter()
        .find(|m| m["message_type"] == "tool_return_message")
        .unwrap_or_else(|| panic!("no tool return: {reply:#}"));
    assert_eq!(returned["status"], "success", "{returned:#}");
    let text = returned["tool_return"].as_str().unwrap();

    let list = json!([{"name": "list_tasks", "arguments": {}}]);
    let mine = calls_with(server, agent, Some(GATEWAY), list.clone()).remove(0);
    let tasks = ok(&mine)["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1, "{mine}");
    let task = &tasks[0];
    assert_eq!(task["description"], "echo native-connect-ok");
    let id = task["task_id"].as_str().unwrap();
    assert!(
        text.contains(id),
        "the tool returned Handoff's answer: {text}"
    );
    let status = json!([{"name": "get_task_status", "arguments": {"task_id": id}}]);
    let status = calls_with(server, agent, Some(GATEWAY), status).remove(0);
    assert_eq!(ok(&status)["status"], "completed", "{status}");

    let other = "agent-00000000-0000-4000-8000-0000000000ff";
    let theirs = calls_with(server, other, Some(GATEWAY), list).remove(0);
    assert_eq!(ok(&theirs)["tasks"], json!([]), "another agent sees none");
}

/// The model was offered the native tool with Handoff's arguments, and no `agent_id`.
fn assert_llm_saw_handoffs_schema(model: &ScriptedModel, tool: &str) {
    let offered = model
        .requests()
        .iter()
        .flat_map(|r| r.body["tools"].as_array().cloned().unwrap_or_default())
        .find(|t| t["function"]["name"] == tool)
        .unwrap_or_else(|| panic!("{tool} was never offered to the model"));
    let properties = &offered["function"]["parameters"]["properties"];
    assert!(
        properties["task_description"]["description"].is_string(),
        "{offered:#}"
    );
    assert!(properties["sync"].is_object(), "{offered:#}");
    assert!(properties.get("agent_id").is_none(), "{offered:#}");
}

/// `--remove` detaches and deletes the tools and removes the secrets; a second one has
/// nothing to do.
fn assert_removed(server: &Server, args: &[&str], env: &[(&str, &str)], agent: &str, prefix: &str) {
    let remove = [args, &["--remove"]].concat();
    let removed = connect_ok(server.dir(), &remove, env);
    assert!(
        removed.contains(&format!("detached {prefix}_execute_task from {agent}")),
        "{removed}"
    );
    assert!(
        removed.contains(&format!("deleted tool {prefix}_execute_task")),
        "{removed}"
    );
    let (tools, secrets) = agent_state(agent);
    assert!(!tools.iter().any(|t| t.starts_with(prefix)), "{tools:?}");
    let upper = prefix.to_ascii_uppercase();
    assert!(
        secrets.get(format!("{upper}_MCP_URL")).is_none(),
        "{secrets}"
    );
    assert!(
        secrets.get(format!("{upper}_MCP_TOKEN")).is_none(),
        "{secrets}"
    );
    assert_eq!(secrets["OWN_SETTING"], "keep-me");
    let (_, left) = letta(
        "GET",
        &format!("/v1/tools/?search={prefix}_&limit=50"),
        None,
    );
    assert_eq!(left, json!([]), "no tool of this prefix is left in Letta");

    let again = connect_ok(server.dir(), &remove, env);
    assert!(again.contains("nothing to remove"), "{again}");
}

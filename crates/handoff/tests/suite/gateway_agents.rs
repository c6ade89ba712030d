//! The real coding agents reaching their model only through Handoff's gateway: `opencode acp`
//! (sandboxed, as a new user gets it: one started ahead of the task, and one started for a task
//! in a directory of its own; configured by Handoff alone from `[models]`), Claude Code on a
//! provider of the Anthropic wire and Codex on the Responses wire. The scripted model answers
//! only the real provider key, and the key is in no process of the task nor any file it can
//! reach: while the agent runs, every process given this gateway's URL is read, and its home,
//! task directory and temp dir are searched.

use std::os::unix::fs::PermissionsExt;
use std::{path::Path, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    acp::wait_pool_ready,
    executors::{AGENT, Agent, CLAUDE, CODEX, OPENCODE, WAIT_FOR_RELEASE, handoff_env, wait_end},
    gateway::gateway_calls,
    harness::{Server, start},
    mcp::{call, task_id},
    wait::wait_until,
};

/// The provider key only Handoff may hold.
const REAL_KEY: &str = "sk-real-provider-key-opencode-81d2";

fn script() -> Script {
    let bash = json!({"tool_calls": [{"name": "bash", "arguments": {"command": WAIT_FOR_RELEASE, "description": "scripted step"}}]});
    let write =
        |file: &str| json!({"tool_calls": [(OPENCODE.write_call)(file, "through the gateway\n")]});
    let script = json!({
        "scenarios": [
            {"match": "GATEWAY-POOLED", "turns": [bash, write("pooled.txt"), {"text": "Wrote pooled.txt."}]},
            {"match": "GATEWAY-OWN", "turns": [write("own.txt"), {"text": "Wrote own.txt."}]}
        ],
        "default": {"text": "No scenario matched: nothing to change"},
        "untooled": {"text": "Scripted title"},
        "api_key": REAL_KEY
    });
    Script::from_json(&script.to_string()).unwrap()
}

/// Handoff as a new user runs it with `[models]` set: no OpenCode provider of the user's, the
/// key in a variable of Handoff's (and in `OPENAI_API_KEY`, where keys usually are).
fn serve(model: &ScriptedModel, state: &Path, roots: &str) -> Server {
    let own: Vec<(String, String)> = handoff_env(&OPENCODE, &model.base_url(), state)
        .into_iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "HANDOFF_DEFAULT_EXECUTOR"
                    | "HANDOFF_OPENCODE_POOL"
                    | "HANDOFF_OPENCODE_CONFIG"
                    | "HANDOFF_OPENCODE_MODEL"
            )
        })
        .collect();
    let upstream = format!("{}/v1", model.base_url());
    let mut env: Vec<(&str, &str)> = own.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    env.extend([
        ("HANDOFF_OPENCODE_POOL", "1"),
        ("HANDOFF_WORKDIR_ROOTS", roots),
        ("HANDOFF_MODELS_PROVIDER_URL", upstream.as_str()),
        ("HANDOFF_MODELS_MODEL", "mock-model"),
        ("HANDOFF_MODELS_PROVIDER_KEY_ENV", "UPSTREAM_KEY"),
        ("UPSTREAM_KEY", REAL_KEY),
        ("OPENAI_API_KEY", REAL_KEY),
    ]);
    start(&env)
}

#[test]
fn opencode_reaches_its_model_only_through_the_gateway_and_never_holds_the_key() {
    super::executors::require_ripgrep();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = runtime
        .block_on(ScriptedModel::start(script(), None))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let roots = tempfile::tempdir().unwrap();
    let roots_env = roots.path().canonicalize().unwrap().display().to_string();
    let server = serve(&model, state.path(), &roots_env);
    let gateway = server.url.replace("/mcp", "/gateway");
    wait_pool_ready(&server);

    // A task that takes the agent started ahead of it, held at its shell step meanwhile.
    let pooled = submit(
        &server,
        json!({"task_description": "GATEWAY-POOLED please"}),
    );
    no_process_holds_the_key(&gateway, "OPENAI_BASE_URL", "openai", "OPENAI_API_KEY");
    let dir = release(&server, &pooled);
    assert!(dir.join("pooled.txt").is_file());

    // A task in a directory of its own starts its own agent, given its own token.
    let own_dir = roots.path().join("own");
    std::fs::create_dir(&own_dir).unwrap();
    let own = submit(
        &server,
        json!({"task_description": "GATEWAY-OWN please", "workdir": own_dir.canonicalize().unwrap()}),
    );
    let done = wait_end(&server, &own);
    assert_eq!(done["status"], "completed", "{done}");
    assert!(own_dir.join("own.txt").is_file());

    for id in [&pooled, &own] {
        let calls = gateway_calls(&server, AGENT, id);
        assert!(
            !calls.is_empty(),
            "{id}: its model calls went through the gateway"
        );
        for c in &calls {
            assert_eq!(c["status"], 200, "{c}");
            assert_eq!(c["model"], "mock-model", "{c}");
        }
    }
    // Every request the provider got carried the real key (it answers nothing else) and asked
    // for the model `[models]` names.
    for request in model.requests() {
        assert_eq!(request.body["model"], "mock-model");
    }
    no_file_holds_the_key(&[state.path(), roots.path(), server.dir()]);
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Claude Code on a named provider of the Anthropic wire, beside an OpenAI-wire default one,
/// through the gateway: its `ANTHROPIC_*` variables are the gateway's URL and the run's token,
/// its model is that provider's (`anthropic/mock-model`, sent there as `mock-model`), the key
/// comes from a key file, and it has no credential of the user's.
#[test]
fn claude_code_reaches_its_model_only_through_the_gateway_and_never_holds_the_key() {
    through_the_gateway(&CLAUDE, "anthropic");
}

/// Codex through the gateway on the Responses wire: Handoff gives its thread a provider of its
/// own (the gateway's URL, the run's token as its key) over the one its config names.
#[test]
fn codex_reaches_its_model_only_through_the_gateway_and_never_holds_the_key() {
    through_the_gateway(&CODEX, "openai");
}

/// A task of `agent` on a provider of `wire`: held at its shell step while its processes are
/// read, then finished; every call counted at the gateway, the key nowhere.
fn through_the_gateway(agent: &Agent, wire: &str) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let write = json!({"tool_calls": [(agent.write_call)("agent.txt", "through the gateway\n")]});
    let bash = json!({"tool_calls": [(agent.bash_call)(WAIT_FOR_RELEASE)]});
    let script = json!({
        "scenarios": [{"match": "GATEWAY-AGENT", "turns": [bash, write, {"text": "Wrote agent.txt."}]}],
        "default": {"text": "No scenario matched: nothing to change"},
        "untooled": {"text": "Scripted title"},
        "api_key": REAL_KEY
    });
    let model = runtime
        .block_on(ScriptedModel::start(
            Script::from_json(&script.to_string()).unwrap(),
            None,
        ))
        .unwrap();
    let state = tempfile::tempdir().unwrap();
    let own: Vec<(String, String)> = handoff_env(agent, &model.base_url(), state.path())
        .into_iter()
        .filter(|(k, _)| k != "ANTHROPIC_BASE_URL" && k != "ANTHROPIC_API_KEY")
        .collect();
    let mut env: Vec<(&str, &str)> = own.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let upstream = match wire {
        "anthropic" => model.base_url(),
        _ => format!("{}/v1", model.base_url()),
    };
    let (key_var, base_var) = match wire {
        "anthropic" => ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
        _ => ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
    };
    let openai = format!("{}/v1", model.base_url());
    // Handoff's own secrets: outside everything the task may see (and so the scan below).
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("anthropic.key");
    std::fs::write(&key_file, REAL_KEY).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let named = json!({"anthropic": {
        "url": upstream, "wire": "anthropic", "key_file": key_file, "model": "mock-model"
    }})
    .to_string();
    env.extend([
        ("HANDOFF_MODELS_PROVIDER_URL", openai.as_str()),
        ("HANDOFF_MODELS_MODEL", "mock-model"),
        ("HANDOFF_MODELS_PROVIDER_KEY_ENV", "UPSTREAM_KEY"),
        ("UPSTREAM_KEY", REAL_KEY),
        // Where the agent's key usually is: the run's token replaces it.
        (key_var, REAL_KEY),
    ]);
    if wire == "anthropic" {
        env.push(("HANDOFF_MODELS_PROVIDERS", named.as_str()));
    }
    let server = start(&env);
    let gateway = server.url.replace("/mcp", "/gateway");
    let id = submit(&server, json!({"task_description": "GATEWAY-AGENT please"}));
    no_process_holds_the_key(&gateway, base_var, wire, key_var);
    let dir = release(&server, &id);
    assert!(dir.join("agent.txt").is_file());
    let calls = gateway_calls(&server, AGENT, &id);
    assert!(
        !calls.is_empty(),
        "its model calls went through the gateway"
    );
    let call_wire = if wire == "anthropic" {
        "anthropic"
    } else {
        "openai_responses"
    };
    assert!(
        calls
            .iter()
            .all(|c| c["wire"] == call_wire && c["status"] == 200),
        "{calls:#?}"
    );
    let asked = model
        .requests()
        .into_iter()
        .filter(|r| r.scenario.as_deref() == Some("GATEWAY-AGENT"))
        .count();
    assert!(asked >= 3, "every turn reached the provider");
    if wire == "anthropic" {
        let providers: Vec<&Value> = calls.iter().map(|c| &c["provider"]).collect();
        assert!(providers.iter().all(|p| *p == "anthropic"), "{calls:#?}");
        let models: Vec<Value> = model
            .requests()
            .into_iter()
            .filter(|r| r.scenario.as_deref() == Some("GATEWAY-AGENT"))
            .map(|r| r.body["model"].clone())
            .collect();
        assert!(
            models.iter().all(|m| m == "mock-model"),
            "sent without its prefix: {models:?}"
        );
    }
    no_file_holds_the_key(&[state.path(), server.dir()]);
    drop(server);
    runtime.block_on(model.shutdown());
}

/// No file under any of `dirs` holds the key.
fn no_file_holds_the_key(dirs: &[&Path]) {
    for searched in dirs {
        assert_eq!(
            super::gateway::files_holding(searched, REAL_KEY),
            Vec::<String>::new(),
            "no file under {} holds the key",
            searched.display()
        );
    }
}

/// Every process of the task (found by the gateway URL in `base_var`) has a task token in
/// `key_var`, and none the key or its variable.
fn no_process_holds_the_key(gateway: &str, base_var: &str, wire: &str, key_var: &str) {
    for (pid, environ) in running_step(gateway, base_var, wire) {
        assert!(!environ.contains(REAL_KEY), "process {pid} holds the key");
        assert!(
            !environ.contains("UPSTREAM_KEY="),
            "process {pid}: {environ}"
        );
        assert!(
            environ.contains(&format!("{key_var}=hmt1_")),
            "process {pid} has a task token: {environ}"
        );
    }
}

/// Lets task `id`'s shell step end and waits for it to complete; its directory.
fn release(server: &Server, id: &str) -> std::path::PathBuf {
    let dir = std::path::PathBuf::from(status(server, id)["workdir"].as_str().unwrap());
    std::fs::write(dir.join("release"), "").unwrap();
    let done = wait_end(server, id);
    assert_eq!(done["status"], "completed", "{done}");
    dir
}

/// Waits for the agent's shell step (it waits for `release`), found by the gateway URL it
/// inherited in `variable`; every process given that URL, with its environment.
fn running_step(gateway: &str, variable: &str, wire: &str) -> Vec<(u32, String)> {
    let wanted = match wire {
        "anthropic" => format!("{variable}={gateway}/anthropic"),
        _ => format!("{variable}={gateway}/openai/v1"),
    };
    wait_until("the shell step to run", Duration::from_secs(180), || {
        agent_processes(&wanted)
            .iter()
            .any(|(pid, _)| cmdline(*pid).contains("os.path.exists"))
    });
    let processes = agent_processes(&wanted);
    assert!(
        processes.len() >= 2,
        "the agent and its shell step: {processes:?}"
    );
    processes
}

fn submit(server: &Server, args: Value) -> String {
    let mut args = args;
    args["completion"] = json!({"policy": "none"});
    task_id(&call(server, AGENT, "execute_task", args))
}

fn status(server: &Server, id: &str) -> Value {
    super::mcp::ok(&call(
        server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))
    .clone()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Every process on the machine whose environment has the line `wanted`, with its environment.
fn agent_processes(wanted: &str) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(bytes) = std::fs::read(entry.path().join("environ")) else {
            continue;
        };
        let environ = String::from_utf8_lossy(&bytes).replace('\0', "\n");
        if environ.lines().any(|l| l == wanted) {
            found.push((pid, environ));
        }
    }
    found
}

//! The real `opencode acp` (sandboxed, as a new user gets it: one started ahead of the task,
//! and one started for a task in a directory of its own) reaching its model only through
//! Handoff's gateway: OpenCode is configured by Handoff alone (`[models]`, no OpenCode provider
//! config of the user's), the scripted model answers only the real provider key, and the key is
//! in no process of the task nor any file it can reach — while the agent runs, every process
//! given this gateway's URL is read, and its home, task directory and temp dir are searched.

use std::{path::Path, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    acp::wait_pool_ready,
    executors::{AGENT, OPENCODE, WAIT_FOR_RELEASE, handoff_env, wait_end},
    harness::{Server, start},
    mcp::{call, history, task_id},
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
    // Its shell step waits for `release`: found by the gateway URL it inherited.
    wait_until("the shell step to run", Duration::from_secs(180), || {
        agent_processes(&gateway)
            .iter()
            .any(|(pid, _)| cmdline(*pid).contains("os.path.exists"))
    });
    let processes = agent_processes(&gateway);
    assert!(
        processes.len() >= 2,
        "the agent and its shell step: {processes:?}"
    );
    for (pid, environ) in &processes {
        assert!(!environ.contains(REAL_KEY), "process {pid} holds the key");
        assert!(
            !environ.contains("UPSTREAM_KEY="),
            "process {pid}: {environ}"
        );
        assert!(
            environ.contains("OPENAI_API_KEY=hmt1_"),
            "process {pid} has a task token: {environ}"
        );
    }
    let dir = std::path::PathBuf::from(status(&server, &pooled)["workdir"].as_str().unwrap());
    std::fs::write(dir.join("release"), "").unwrap();
    let done = wait_end(&server, &pooled);
    assert_eq!(done["status"], "completed", "{done}");
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
        let calls = gateway_calls(&server, id);
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
    for searched in [state.path(), roots.path(), server.dir()] {
        assert_eq!(
            super::gateway::files_holding(searched, REAL_KEY),
            Vec::<String>::new(),
            "no file holds the key"
        );
    }
    drop(server);
    runtime.block_on(model.shutdown());
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

/// The gateway calls recorded on task `id`.
fn gateway_calls(server: &Server, id: &str) -> Vec<Value> {
    history(server, AGENT, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["data"].get("gateway_call").cloned())
        .collect()
}

fn cmdline(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|b| String::from_utf8_lossy(&b).replace('\0', " "))
        .unwrap_or_default()
}

/// Every process on the machine given `gateway` as its model URL, with its environment.
fn agent_processes(gateway: &str) -> Vec<(u32, String)> {
    let wanted = format!("OPENAI_BASE_URL={gateway}/openai/v1");
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

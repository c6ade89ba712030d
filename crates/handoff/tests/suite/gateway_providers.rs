//! Several model providers at once behind the gateway: one task (a sandboxed `command` agent)
//! calls the OpenAI wire and the Anthropic wire, and a named provider by its model prefix.
//! Each upstream is a scripted model that answers only its own real key — one read from an
//! environment variable, one from a key file (mode 0600) named in the TOML config's
//! `[models.providers.<name>]` tables — so each call reaching the right provider with the right
//! key is proven by its answer. The key file is hidden inside the sandbox; neither key is in
//! the task's environment or files; every call is recorded with the provider that answered.

use std::{os::unix::fs::PermissionsExt, path::Path, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    gateway::{files_holding, gateway_calls},
    harness::start,
    mcp::{call, task_id, wait_status_for},
};

const AGENT: &str = "agent-providers";
/// The default provider's key, in Handoff's environment.
const ENV_KEY: &str = "sk-env-provider-key-0c6e1f93a2";
/// The named providers' key, in a file only Handoff's user reads.
const FILE_KEY: &str = "sk-ant-file-provider-key-7d41b8e5";

/// A scripted model answering `text` to callers with `key` only.
fn model(runtime: &tokio::runtime::Runtime, text: &str, key: &str) -> ScriptedModel {
    let script = json!({"untooled": {"text": text}, "api_key": key});
    runtime
        .block_on(ScriptedModel::start(
            Script::from_json(&script.to_string()).unwrap(),
            None,
        ))
        .unwrap()
}

/// `curl` posting `body` to the gateway's `path` of `wire` as the task, its answer in `file`.
fn post(wire: &str, body: &Value, file: &str) -> String {
    let (base, path) = match wire {
        "anthropic" => ("$ANTHROPIC_BASE_URL", "/v1/messages"),
        _ => ("$OPENAI_BASE_URL", "/chat/completions"),
    };
    format!(
        "curl -sS -X POST \"{base}{path}\" -H \"Authorization: Bearer $OPENAI_API_KEY\" \
         -H 'content-type: application/json' -d '{body}' > {file}"
    )
}

fn chat(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "PROVIDERS hello"}]})
}

fn message(model: &str) -> Value {
    json!({"model": model, "max_tokens": 64, "messages": [{"role": "user", "content": "PROVIDERS hi"}]})
}

#[test]
fn each_call_reaches_the_provider_its_wire_or_model_names_with_that_providers_key() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let openai = model(&runtime, "answered by the env-keyed provider", ENV_KEY);
    let other = model(&runtime, "answered by the file-keyed provider", FILE_KEY);
    let secrets = tempfile::tempdir().unwrap();
    let key_file = secrets.path().join("provider.key");
    std::fs::write(&key_file, format!("{FILE_KEY}\n")).unwrap();
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let config = secrets.path().join("handoff.toml");
    std::fs::write(
        &config,
        format!(
            "[models]\nprovider_url = \"{openai}/v1\"\nprovider_key_env = \"UPSTREAM_KEY\"\n\n\
             [models.providers.claude]\nurl = \"{other}\"\nwire = \"anthropic\"\n\
             key_file = \"{file}\"\n\n\
             [models.providers.backup]\nurl = \"{other}/v1\"\nkey_file = \"{file}\"\n\
             price_input_per_mtok = 1.0\nprice_output_per_mtok = 1.0\n",
            openai = openai.base_url(),
            other = other.base_url(),
            file = key_file.display(),
        ),
    )
    .unwrap();
    let config = config.display().to_string();
    let server = start(&[
        ("HANDOFF_CONFIG", &config),
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_ISOLATION", "sandbox"),
        ("UPSTREAM_KEY", ENV_KEY),
    ]);
    let file = key_file.display();
    let script = [
        format!("env > env.txt; cat {file} > seen_key.txt 2>&1"),
        post("openai", &chat("gpt-x"), "default.json"),
        post("anthropic", &message("claude-x"), "claude.json"),
        post("openai", &chat("backup/mock-b"), "backup.json"),
        post("anthropic", &message("backup/mock-b"), "wrong_wire.json"),
        "exit 0".to_owned(),
    ]
    .join("; ");
    let id = task_id(&call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": script, "completion": {"policy": "none"}}),
    ));
    let done = wait_status_for(
        &server,
        AGENT,
        &id,
        &["completed"],
        Duration::from_secs(120),
    );
    let dir = Path::new(done["workdir"].as_str().unwrap()).to_owned();
    let read = |name: &str| -> Value {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}: {text}"))
    };

    // Each answer came from the provider that holds the key it was sent with.
    let env_text = "answered by the env-keyed provider";
    let file_text = "answered by the file-keyed provider";
    let default = read("default.json");
    assert_eq!(
        default["choices"][0]["message"]["content"], env_text,
        "{default}"
    );
    let claude = read("claude.json");
    assert_eq!(claude["content"][0]["text"], file_text, "{claude}");
    let backup = read("backup.json");
    assert_eq!(
        backup["choices"][0]["message"]["content"], file_text,
        "{backup}"
    );
    let wrong = read("wrong_wire.json");
    assert_eq!(wrong["error"]["type"], "invalid_request_error", "{wrong}");
    let said = wrong["error"]["message"].as_str().unwrap();
    assert!(
        said.contains("`backup`") && said.contains("openai"),
        "{said}"
    );

    // The named provider was asked for the model without its prefix.
    let asked: Vec<String> = other
        .requests()
        .iter()
        .filter_map(|r| r.body["model"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(
        asked,
        ["claude-x", "mock-b"],
        "the wrong-wire call never left Handoff"
    );
    assert_eq!(openai.requests().len(), 1);

    // Every call is on the task with the provider that answered it, priced by that provider.
    let calls = gateway_calls(&server, AGENT, &id);
    let providers: Vec<&str> = calls
        .iter()
        .map(|c| c["provider"].as_str().unwrap())
        .collect();
    assert_eq!(providers, ["default", "claude", "backup"], "{calls:#?}");
    let backup_call = &calls[2];
    let tokens = backup_call["input_tokens"].as_u64().unwrap()
        + backup_call["output_tokens"].as_u64().unwrap();
    let cost = backup_call["cost_usd"].as_f64().unwrap();
    assert!((cost - tokens as f64 / 1e6).abs() < 1e-12, "{backup_call}");

    // No key reached the task: the key file is empty inside the sandbox, no variable holds
    // either key, no file of the task does.
    let seen = std::fs::read_to_string(dir.join("seen_key.txt")).unwrap();
    assert!(
        !seen.contains(FILE_KEY),
        "the key file is readable inside the sandbox (bubblewrap is what hides it)"
    );
    let env = std::fs::read_to_string(dir.join("env.txt")).unwrap();
    assert!(
        !env.contains("UPSTREAM_KEY"),
        "the key's variable is kept from the task"
    );
    for key in [ENV_KEY, FILE_KEY] {
        assert_eq!(files_holding(&dir, key), Vec::<String>::new());
    }
    drop(server);
    runtime.block_on(openai.shutdown());
    runtime.block_on(other.shutdown());
}

//! The model gateway end to end, with a `command` agent (any program: here `curl`) against the
//! scripted model as the upstream provider, which answers only the real provider key: the
//! agent reaches the provider through Handoff with its own task token and never sees the key
//! (its environment and every file it can write are searched for it), streaming answers pass
//! through, each call is counted on the task and summed in its status, a finished run's token
//! is dead, and a task's token budget is enforced at the gateway.

use std::{path::Path, time::Duration};

use handoff_scripted_model::{Script, ScriptedModel};
use serde_json::{Value, json};

use super::{
    harness::{Server, metric, start, start_in},
    mcp::{call, history, ok, task_id, wait_status_for},
    wait::wait_until,
};

const AGENT: &str = "agent-gateway";
/// The provider key only Handoff may hold.
const REAL_KEY: &str = "sk-real-provider-key-5f3a9c0e7b1d";

fn model(runtime: &tokio::runtime::Runtime) -> ScriptedModel {
    let script = json!({
        // The calls here offer no tools: the scripted model answers them all alike.
        "untooled": {"text": "hello through the gateway"},
        "api_key": REAL_KEY
    });
    runtime
        .block_on(ScriptedModel::start(
            Script::from_json(&script.to_string()).unwrap(),
            None,
        ))
        .unwrap()
}

fn serve(model: &ScriptedModel) -> Server {
    serve_with(model, &[])
}

fn serve_with(model: &ScriptedModel, extra: &[(&str, &str)]) -> Server {
    let env = server_env(model, extra);
    start(
        &env.iter()
            .map(|(k, v)| (*k, v.as_str()))
            .collect::<Vec<_>>(),
    )
}

/// The server's environment: the `command` agent, the scripted model as the provider.
fn server_env<'a>(model: &ScriptedModel, extra: &[(&'a str, &str)]) -> Vec<(&'a str, String)> {
    let mut env: Vec<(&str, String)> = [
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_PROMPT_VIA", "argument"),
        ("HANDOFF_ISOLATION", "process"),
        ("HANDOFF_MODELS_PROVIDER_KEY_ENV", "UPSTREAM_KEY"),
        ("UPSTREAM_KEY", REAL_KEY),
        // The usual place of a key: a task must not get this one either.
        ("OPENAI_API_KEY", REAL_KEY),
        ("HANDOFF_MODELS_PRICE_INPUT", "2"),
        ("HANDOFF_MODELS_PRICE_OUTPUT", "10"),
    ]
    .into_iter()
    .map(|(k, v)| (k, v.to_owned()))
    .collect();
    env.push((
        "HANDOFF_MODELS_PROVIDER_URL",
        format!("{}/v1", model.base_url()),
    ));
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env
}

/// A chat request `curl` sends to the gateway as the task: `stream`ed or not, its output in
/// `file` of the task directory.
fn chat(text: &str, stream: bool, file: &str) -> String {
    let body = json!({
        "model": "mock-model",
        "stream": stream,
        "messages": [{"role": "user", "content": text}]
    });
    format!(
        "curl -sS -X POST \"$OPENAI_BASE_URL/chat/completions\" \
         -H \"Authorization: Bearer $OPENAI_API_KEY\" -H 'content-type: application/json' \
         -d '{body}' > {file}"
    )
}

/// Every file under `dir` that holds `needle`.
pub(super) fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in walk(dir) {
        if std::fs::read(&entry)
            .is_ok_and(|bytes| bytes.windows(needle.len()).any(|w| w == needle.as_bytes()))
        {
            found.push(entry.display().to_string());
        }
    }
    found
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            out.extend(walk(&path));
        } else if path.is_file() {
            out.push(path);
        }
    }
    out
}

/// Runs `script` as a task of [`AGENT`] with `completion` until it is `status`; its id and
/// that status.
fn run(server: &Server, script: &str, completion: Value, status: &str) -> (String, Value) {
    let id = task_id(&call(
        server,
        AGENT,
        "execute_task",
        json!({"task_description": script, "completion": completion}),
    ));
    let done = wait_status_for(server, AGENT, &id, &[status], Duration::from_secs(120));
    (id, done)
}

/// The gateway calls recorded on `agent`'s task `id`.
pub(super) fn gateway_calls(server: &Server, agent: &str, id: &str) -> Vec<Value> {
    history(server, agent, id)["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["data"].get("gateway_call").cloned())
        .collect()
}

#[test]
fn an_agent_reaches_its_provider_only_through_the_gateway_and_never_sees_the_key() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = model(&runtime);
    let server = serve(&model);
    let script = format!(
        "env > env.txt; cat /proc/$$/environ > environ.bin; {}; {}; exit 0",
        chat("GATEWAY-HELLO streamed", true, "streamed.sse"),
        chat("GATEWAY-HELLO plain", false, "plain.json"),
    );
    let (id, done) = run(&server, &script, json!({"policy": "none"}), "completed");
    let dir = Path::new(done["workdir"].as_str().unwrap()).to_owned();

    // The answers came through: the provider accepted the key only Handoff holds.
    let streamed = std::fs::read_to_string(dir.join("streamed.sse")).unwrap();
    assert!(streamed.contains("data: "), "{streamed}");
    let text: String = streamed
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|c| {
            c["choices"][0]["delta"]["content"]
                .as_str()
                .map(str::to_owned)
        })
        .collect();
    assert_eq!(text, "hello through the gateway");
    let plain: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("plain.json")).unwrap()).unwrap();
    assert_eq!(
        plain["choices"][0]["message"]["content"],
        "hello through the gateway"
    );

    // The agent saw its task token, never the key: not in its environment, not in any file.
    let env = std::fs::read_to_string(dir.join("env.txt")).unwrap();
    let token = env
        .lines()
        .find_map(|l| l.strip_prefix("OPENAI_API_KEY="))
        .expect("the agent gets a key")
        .to_owned();
    assert!(token.starts_with("hmt1_"), "{token}");
    assert!(
        env.lines()
            .any(|l| l.starts_with("OPENAI_BASE_URL=http://127.0.0.1:"))
    );
    assert!(
        env.lines()
            .any(|l| l == format!("ANTHROPIC_API_KEY={token}"))
    );
    assert!(
        !env.contains("UPSTREAM_KEY"),
        "the key's variable is kept from the task"
    );
    assert_eq!(files_holding(&dir, REAL_KEY), Vec::<String>::new());

    // Each call counted on the task, with the provider's usage, the model and the cost.
    let calls = gateway_calls(&server, AGENT, &id);
    assert_eq!(calls.len(), 2, "{calls:#?}");
    for c in &calls {
        assert_eq!(c["status"], 200, "{c}");
        assert_eq!(c["usage_reported"], true, "{c}");
        assert!(c["input_tokens"].as_u64().unwrap() > 0, "{c}");
        assert!(c["output_tokens"].as_u64().unwrap() > 0, "{c}");
        assert_eq!(c["model"], "mock-model", "{c}");
        assert!(c["cost_usd"].as_f64().unwrap() > 0.0, "{c}");
    }
    assert_eq!(
        metric(
            &server,
            r#"handoff_gateway_calls_total{wire="openai_chat",status="2xx"}"#
        ),
        2.0
    );

    // get_task_status sums them: the calls and the tokens the provider reported, the cost.
    let shown = call(&server, AGENT, "get_task_status", json!({"task_id": id}));
    let usage = ok(&shown)["model_usage"].clone();
    let sum = |field: &str| {
        calls
            .iter()
            .map(|c| c[field].as_u64().unwrap())
            .sum::<u64>()
    };
    assert_eq!(usage["calls"], 2, "{usage}");
    for field in ["input_tokens", "output_tokens", "cached_tokens"] {
        assert_eq!(usage[field], sum(field), "{field}: {usage} from {calls:#?}");
    }
    let cost: f64 = calls.iter().map(|c| c["cost_usd"].as_f64().unwrap()).sum();
    assert!(
        (usage["cost_usd"].as_f64().unwrap() - cost).abs() < 1e-9,
        "{usage}"
    );
    let text = shown["text"].as_str().unwrap();
    assert!(text.contains("Model usage: 2 calls, "), "{text}");

    // The run is over: its token is dead. A task token opens nothing but the gateway.
    let gateway = server
        .url
        .replace("/mcp", "/gateway/openai/v1/chat/completions");
    let (status, body) = post(&runtime, &gateway, &token);
    assert_eq!(status, 401, "{body}");
    assert!(
        body["error"]["message"].as_str().unwrap().contains("ended"),
        "{body}"
    );
    let (status, body) = post(&runtime, &gateway, "hmt1_task_forged.1.00");
    assert_eq!(status, 401, "{body}");
    drop(server);
    runtime.block_on(model.shutdown());
}

#[test]
fn the_call_that_would_pass_the_budget_is_refused_and_the_task_stops() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = model(&runtime);
    let server = serve(&model);
    // About 600 input tokens a call (the scripted model counts 4 characters a token).
    let big = format!("budget {}", "x".repeat(2_400));
    let script = format!(
        "{}; {}; sleep 60; exit 0",
        chat(&big, false, "first.json"),
        chat(&big, false, "second.json"),
    );
    let completion = json!({"policy": "none", "budget": {"tokens": 1000}});
    let (id, done) = run(&server, &script, completion, "failed");
    assert!(
        done["error"].as_str().unwrap().contains("budget_exhausted"),
        "{done}"
    );
    // The refusal the agent got (its answer came before the stop, though the stop may cut
    // `curl` off before it wrote it).
    let dir = Path::new(done["workdir"].as_str().unwrap()).to_owned();
    if let Ok(second) = std::fs::read_to_string(dir.join("second.json"))
        && !second.is_empty()
    {
        let second: Value = serde_json::from_str(&second).unwrap();
        assert_eq!(second["error"]["code"], "budget_exhausted", "{second}");
        assert!(
            second["error"]["message"]
                .as_str()
                .unwrap()
                .contains("1000 tokens")
        );
    }
    let said = history(&server, AGENT, &id)["events"].to_string();
    assert!(
        said.contains("budget exhausted at the model gateway: 1000 tokens"),
        "{said}"
    );
    let calls = gateway_calls(&server, AGENT, &id);
    assert_eq!(
        calls.len(),
        1,
        "only the first call reached the provider: {calls:#?}"
    );
    let status = ok(&call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))
    .clone();
    assert!(
        status["error"]
            .as_str()
            .unwrap()
            .contains("budget_exhausted")
    );
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Handoff killed (-9) mid-task and started again: the re-queued task's spending is read back
/// from its recorded calls, so the call that would pass its budget after the restart is refused
/// as it would have been before (a fresh count would have let it through).
#[test]
fn a_tasks_budget_holds_across_a_kill_and_restart() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = model(&runtime);
    let env = server_env(&model, &[]);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = start(&env);
    // About 600 input tokens a call; the first run calls once and waits to be killed, the run
    // after the restart (same directory) calls again.
    let big = format!("budget {}", "x".repeat(2_400));
    let script = format!(
        "if [ -f first.json ]; then {}; else {}; sleep 300; fi; exit 0",
        chat(&big, false, "second.json"),
        chat(&big, false, "first.json"),
    );
    let id = task_id(&call(
        &server,
        AGENT,
        "execute_task",
        json!({"task_description": script, "requeue_on_restart": true,
               "completion": {"policy": "none", "budget": {"tokens": 1000}}}),
    ));
    wait_until("the first call counted", Duration::from_secs(60), || {
        gateway_calls(&server, AGENT, &id).len() == 1
    });
    let server = start_in(server.kill9(), &env);
    let done = wait_status_for(&server, AGENT, &id, &["failed"], Duration::from_secs(120));
    assert!(
        done["error"].as_str().unwrap().contains("budget_exhausted"),
        "{done}"
    );
    let said = history(&server, AGENT, &id)["events"].to_string();
    assert!(
        said.contains("budget exhausted at the model gateway: 1000 tokens"),
        "{said}"
    );
    assert_eq!(
        gateway_calls(&server, AGENT, &id).len(),
        1,
        "the call after the restart never reached the provider"
    );
    let usage = ok(&call(
        &server,
        AGENT,
        "get_task_status",
        json!({"task_id": id}),
    ))["model_usage"]
        .clone();
    assert_eq!(usage["calls"], 1, "{usage}");
    drop(server);
    runtime.block_on(model.shutdown());
}

#[test]
fn a_task_calling_faster_than_its_rate_is_told_when_to_retry_and_goes_on() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let model = model(&runtime);
    let server = serve_with(
        &model,
        &[
            ("HANDOFF_MODELS_TASK_CALLS_PER_MINUTE", "2"),
            ("HANDOFF_MODELS_AGENT_CALLS_PER_MINUTE", "3"),
        ],
    );
    let third = chat("GATEWAY-HELLO three", false, "third.json")
        .replace("curl -sS", "curl -sS -D third.headers");
    let script = format!(
        "{}; {}; {}; exit 0",
        chat("GATEWAY-HELLO one", false, "first.json"),
        chat("GATEWAY-HELLO two", false, "second.json"),
        third,
    );
    let (id, done) = run(&server, &script, json!({"policy": "none"}), "completed");
    let dir = Path::new(done["workdir"].as_str().unwrap()).to_owned();
    let third: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("third.json")).unwrap()).unwrap();
    assert_eq!(third["error"]["type"], "rate_limit_error", "{third}");
    assert!(
        third["error"]["message"]
            .as_str()
            .unwrap()
            .contains("models.task_calls_per_minute"),
        "{third}"
    );
    let headers = std::fs::read_to_string(dir.join("third.headers")).unwrap();
    assert!(headers.starts_with("HTTP/1.1 429"), "{headers}");
    let retry: u64 = headers
        .lines()
        .find_map(|l| l.strip_prefix("retry-after: "))
        .expect("a retry-after header")
        .trim()
        .parse()
        .unwrap();
    assert!((1..=60).contains(&retry), "{retry}");
    assert_eq!(
        gateway_calls(&server, AGENT, &id).len(),
        2,
        "the third call never reached the provider"
    );

    // The agent's next task: its first call is the agent's third this minute, its second one
    // too many for the agent, though not for the task.
    let script = format!(
        "{}; {}; exit 0",
        chat("GATEWAY-HELLO four", false, "fourth.json"),
        chat("GATEWAY-HELLO five", false, "fifth.json"),
    );
    let (id, done) = run(&server, &script, json!({"policy": "none"}), "completed");
    let dir = Path::new(done["workdir"].as_str().unwrap()).to_owned();
    let read = |file: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(dir.join(file)).unwrap()).unwrap()
    };
    assert!(read("fourth.json")["choices"].is_array());
    let fifth = read("fifth.json");
    assert!(
        fifth["error"]["message"]
            .as_str()
            .unwrap()
            .contains("models.agent_calls_per_minute"),
        "{fifth}"
    );
    assert_eq!(gateway_calls(&server, AGENT, &id).len(), 1);
    drop(server);
    runtime.block_on(model.shutdown());
}

/// Posts a small chat request with `token`; the status and the JSON answer.
fn post(runtime: &tokio::runtime::Runtime, url: &str, token: &str) -> (u16, Value) {
    runtime.block_on(async {
        let answer = reqwest::Client::new()
            .post(url)
            .bearer_auth(token)
            .json(&json!({"model": "mock-model", "messages": [{"role": "user", "content": "hi"}]}))
            .send()
            .await
            .unwrap();
        let status = answer.status().as_u16();
        (status, answer.json().await.unwrap_or(Value::Null))
    })
}

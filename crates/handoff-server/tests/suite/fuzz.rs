//! Property tests of the JSON-RPC and tool-argument surface, sent to a live server: arbitrary
//! JSON as any tool's arguments, and arbitrary JSON (free or JSON-RPC shaped) as whole bodies,
//! in both protocol eras. Each answer must come in time, never be a 5xx, be a JSON-RPC error or
//! result of bounded size, and leave the server answering a ping.
//!
//! Reproducible: the seed is fixed (`HANDOFF_FUZZ_SEED=<u64>` picks another), the case count is
//! `PROPTEST_CASES` (default 256), and nothing is persisted between runs.

use std::sync::{
    Arc,
    atomic::{AtomicUsize, Ordering},
};

use proptest::{
    prelude::*,
    test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner},
};
use serde_json::{Map, Value, json};

use super::bad_input::{
    fixture::{Answer, Era, Fixture, META, excerpt},
    generate::{Tool, call_body},
    list_tools,
};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
const DEFAULT_CASES: u32 = 256;
/// Largest error answer: a clear message, not the input back.
const MAX_ERROR: usize = 4096;
/// Length of the longest generated strings (a refusal must not quote them whole).
const LONG: usize = 8192;
/// Largest result (`tools/list` is the biggest legitimate one).
const MAX_RESULT: usize = 256 * 1024;
/// Methods a client may send, so shaped bodies reach past method dispatch.
const METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "tasks/list",
    "server/discover",
    "prompts/list",
    "resources/list",
    "completion/complete",
    "logging/setLevel",
    "notifications/initialized",
    "notifications/cancelled",
];

/// A runner with a fixed seed and no failure files: CI runs the same cases every time.
fn runner() -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_CASES);
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 256,
        ..Config::default()
    };
    let rng = match std::env::var("HANDOFF_FUZZ_SEED") {
        Ok(seed) => {
            let seed: u64 = seed.parse().expect("HANDOFF_FUZZ_SEED is a u64");
            let mut bytes = [0u8; 32];
            bytes[..8].copy_from_slice(&seed.to_le_bytes());
            TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
        }
        Err(_) => TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    };
    TestRunner::new_with_rng(config, rng)
}

/// Words taken from the schemas (member names, enum values) and the protocol, so generated
/// objects hit real fields and real values, not only random keys.
fn vocabulary(tools: &[Tool]) -> Vec<String> {
    fn walk(schema: &Value, out: &mut Vec<String>) {
        match schema {
            Value::Object(map) => {
                if let Some(Value::Object(props)) = map.get("properties") {
                    out.extend(props.keys().cloned());
                }
                if let Some(Value::String(c)) = map.get("const") {
                    out.push(c.clone());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(list) => list.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut words: Vec<String> = METHODS.iter().map(|m| (*m).to_owned()).collect();
    for tool in tools {
        words.push(tool.name.clone());
        walk(&tool.input, &mut words);
    }
    words.extend(
        [
            "2.0",
            "2025-06-18",
            "2026-07-28",
            "task_aaaaaaaaaaaaaaaaaaaaaaaaaa",
            "name",
            "arguments",
            "taskId",
            "inputResponses",
            "_meta",
        ]
        .map(str::to_owned),
    );
    words.sort();
    words.dedup();
    words
}

/// Arbitrary JSON of bounded depth and size; strings are random or schema words.
fn json_value(words: Vec<String>) -> BoxedStrategy<Value> {
    let word = prop::sample::select(words);
    let text = prop_oneof![".{0,24}", word.clone()];
    let leaf = prop_oneof![
        3 => Just(Value::Null),
        3 => any::<bool>().prop_map(Value::from),
        3 => any::<i64>().prop_map(Value::from),
        3 => any::<u64>().prop_map(Value::from),
        3 => any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        6 => text.clone().prop_map(Value::String),
        // Long enough that an error quoting it back breaks the size bound.
        1 => (LONG / 2..LONG).prop_map(|n| Value::String("echo".repeat(n / 4))),
    ];
    let key = prop_oneof![".{0,12}", word];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner), 0..8)
                .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>())),
        ]
    })
    .boxed()
}

/// An object whose members are mostly schema words, so it reaches real fields.
fn object_of_words(words: Vec<String>) -> impl Strategy<Value = Value> {
    let member = (prop::sample::select(words.clone()), json_value(words));
    prop::collection::vec(member, 0..6)
        .prop_map(|members| Value::Object(members.into_iter().collect::<Map<_, _>>()))
}

/// A body shaped like a JSON-RPC request, each part possibly wrong.
fn shaped_body(words: Vec<String>) -> impl Strategy<Value = Value> {
    let object = object_of_words(words.clone());
    let any_json = json_value(words);
    let version = prop_oneof![9 => Just(json!("2.0")), 1 => any_json.clone()];
    let id = prop_oneof![
        8 => any::<u32>().prop_map(Value::from),
        1 => any_json.clone(),
        1 => Just(Value::Null),
    ];
    let method = prop_oneof![
        9 => prop::sample::select(METHODS).prop_map(Value::from),
        1 => any_json.clone(),
    ];
    let params = prop::option::weighted(0.8, prop_oneof![2 => object, 1 => any_json]);
    (version, prop::option::weighted(0.9, id), method, params).prop_map(|(v, id, m, p)| {
        let mut body = json!({"jsonrpc": v, "method": m});
        if let Some(id) = id {
            body["id"] = id;
        }
        if let Some(p) = p {
            body["params"] = p;
        }
        body
    })
}

/// What kind of answer came back (counted, so a run shows what it reached).
#[derive(Debug, Clone, Copy)]
enum Kind {
    /// A JSON-RPC error.
    Error = 0,
    /// A tool result with `isError`.
    ToolError = 1,
    /// Any other result.
    Result = 2,
    /// 202 and no body (a notification).
    Silent = 3,
}

/// Answers counted by kind over a run (checks run twice while shrinking; the counts are a
/// picture of the coverage, not an exact census).
#[derive(Debug, Default)]
struct Tally([AtomicUsize; 4]);

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |i: usize| self.0[i].load(Ordering::Relaxed);
        write!(
            f,
            "{} JSON-RPC errors, {} tool errors, {} results, {} notifications",
            n(0),
            n(1),
            n(2),
            n(3)
        )
    }
}

/// The JSON-RPC property every answer must have; `sent` is the request body.
fn check(answer: &Answer, sent: &Value) -> Result<Kind, String> {
    if answer.status >= 500 {
        return Err(format!("HTTP {}", answer.status));
    }
    if answer.text.trim().is_empty() {
        // Only a notification or a response is answered with nothing.
        let silent = sent.get("id").is_none()
            && (sent["method"].is_string()
                || sent.get("result").is_some()
                || sent.get("error").is_some());
        return match (answer.status, silent) {
            (202, true) => Ok(Kind::Silent),
            (status, _) => Err(format!("empty body (HTTP {status})")),
        };
    }
    let message = answer.message.as_ref().ok_or("not JSON-RPC")?;
    if message["jsonrpc"] != "2.0" {
        return Err("no `jsonrpc: \"2.0\"`".into());
    }
    if let Some(error) = message.get("error") {
        let code = error["code"]
            .as_i64()
            .ok_or("error without an integer code")?;
        let standard = code == -32700
            || (-32603..=-32600).contains(&code)
            || (-32099..=-32000).contains(&code);
        if !standard {
            return Err(format!("error code {code} outside the JSON-RPC ranges"));
        }
        if error["message"]
            .as_str()
            .is_none_or(|m| m.trim().is_empty())
        {
            return Err("error without a message".into());
        }
        if answer.text.len() > MAX_ERROR {
            return Err(format!("{}-byte error", answer.text.len()));
        }
        return Ok(Kind::Error);
    }
    if !message["result"].is_object() {
        return Err("neither an error nor a result object".into());
    }
    if answer.text.len() > MAX_RESULT {
        return Err(format!("{}-byte result", answer.text.len()));
    }
    if message["result"]["isError"] == true {
        if answer.text.len() > MAX_ERROR {
            return Err(format!("{}-byte tool error", answer.text.len()));
        }
        Ok(Kind::ToolError)
    } else {
        Ok(Kind::Result)
    }
}

/// Sends `body`, checks the answer and that the server still answers a ping.
async fn exchange(
    fx: &Fixture,
    headers: &[(String, String)],
    body: Vec<u8>,
    sent: &Value,
    tally: &Tally,
) -> Result<(), TestCaseError> {
    let answer = fx.post(headers, body).await.map_err(TestCaseError::fail)?;
    let kind = check(&answer, sent)
        .map_err(|why| TestCaseError::fail(format!("{why}: {}", excerpt(&answer.text))))?;
    tally.0[kind as usize].fetch_add(1, Ordering::Relaxed);
    fx.alive()
        .await
        .map_err(|dead| TestCaseError::fail(format!("server not alive after it: {dead}")))
}

/// Puts the 2026-07-28 `_meta` into a body's params where there is room for it.
fn with_meta(mut body: Value) -> Value {
    let meta: Value = serde_json::from_str(META).unwrap_or(Value::Null);
    if let Some(object) = body.as_object_mut() {
        match object.get_mut("params") {
            Some(Value::Object(params)) => {
                params.insert("_meta".into(), meta);
            }
            None => {
                object.insert("params".into(), json!({"_meta": meta}));
            }
            Some(_) => {}
        }
    }
    body
}

/// The headers a client in `era` would send with `body`.
fn headers_for(fx: &Fixture, era: Era, body: &Value) -> Vec<(String, String)> {
    let header_safe = |v: &Value| {
        v.as_str()
            .filter(|s| s.bytes().all(|b| (0x20..0x7f).contains(&b)))
            .map(str::to_owned)
    };
    let method = header_safe(&body["method"]);
    let name =
        header_safe(&body["params"]["name"]).or_else(|| header_safe(&body["params"]["taskId"]));
    fx.headers(era, method.as_deref(), name.as_deref())
}

/// Runs the strategy `build` makes on a blocking thread (proptest is synchronous; strategies
/// are not `Send`, so they are built there), each case driven on the runtime by `test`.
async fn run_property<S>(
    title: &'static str,
    tally: Arc<Tally>,
    build: impl FnOnce() -> S + Send + 'static,
    test: impl Fn(S::Value) -> Result<(), TestCaseError> + Send + 'static,
) where
    S: Strategy + 'static,
    S::Value: std::fmt::Debug + Send,
{
    let outcome = tokio::task::spawn_blocking(move || {
        let mut runner = runner();
        let cases = runner.config().cases;
        (runner.run(&build(), test), cases)
    })
    .await
    .unwrap();
    match outcome {
        (Ok(()), cases) => eprintln!("fuzz {title}: {cases} cases passed ({tally})"),
        (Err(TestError::Fail(why, value)), _) => {
            let shown = excerpt(&format!("{value:?}"));
            panic!("fuzz {title}: {why}\nminimal input: {shown}");
        }
        (Err(TestError::Abort(why)), _) => panic!("fuzz {title} aborted: {why}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_tool_arguments_get_a_clear_bounded_answer() {
    let fx = Arc::new(Fixture::start().await);
    let tools = list_tools(&fx).await;
    let names: Vec<String> = tools.iter().map(|t| t.name.clone()).collect();
    let words = vocabulary(&tools);
    let strategy = move || {
        let arguments = prop_oneof![json_value(words.clone()), object_of_words(words)];
        (prop::sample::select(names), any::<bool>(), arguments)
    };
    let handle = tokio::runtime::Handle::current();
    let tally = Arc::new(Tally::default());
    let counts = tally.clone();
    run_property(
        "tool arguments",
        tally,
        strategy,
        move |(tool, legacy, args)| {
            let era = if legacy { Era::Legacy } else { Era::Stateless };
            let body = call_body(era, 7, &tool, &args.to_string());
            let sent: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let headers = fx.headers(era, Some("tools/call"), Some(&tool));
            handle.block_on(exchange(&fx, &headers, body, &sent, &counts))
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arbitrary_json_rpc_bodies_get_a_clear_bounded_answer() {
    let fx = Arc::new(Fixture::start().await);
    let tools = list_tools(&fx).await;
    let words = vocabulary(&tools);
    let strategy = move || {
        let body = prop_oneof![1 => json_value(words.clone()), 3 => shaped_body(words)];
        (any::<bool>(), prop::bool::weighted(0.8), body)
    };
    let handle = tokio::runtime::Handle::current();
    let tally = Arc::new(Tally::default());
    let counts = tally.clone();
    run_property(
        "JSON-RPC bodies",
        tally,
        strategy,
        move |(legacy, meta, body)| {
            let era = if legacy { Era::Legacy } else { Era::Stateless };
            let body = if meta && era == Era::Stateless {
                with_meta(body)
            } else {
                body
            };
            let headers = headers_for(&fx, era, &body);
            handle.block_on(exchange(
                &fx,
                &headers,
                body.to_string().into_bytes(),
                &body,
                &counts,
            ))
        },
    )
    .await;
}

//! The bad-input corpus: hundreds of cases generated from every tool's input schema, plus
//! protocol and header cases, in both protocol eras, against one live server. Every case must
//! be refused with a clear JSON-RPC error or tool error, never a 5xx or an empty body, without
//! the payload coming back, with the server alive and no task created afterwards.

pub mod arguments;
pub mod case;
pub mod fixture;
pub mod generate;
pub mod headers;
pub mod marker;
pub mod protocol;
pub mod raw;
pub mod run;
pub mod schema;
pub mod sessions;

use serde_json::json;

use self::{
    arguments::Builder,
    fixture::{Era, Fixture, GATEWAY},
    generate::Tool,
    marker::Marker,
};

/// The tools and their input schemas, as a client learns them.
pub async fn list_tools(fx: &Fixture) -> Vec<Tool> {
    let mut headers = fx.headers(Era::Stateless, Some("tools/list"), None);
    headers.retain(|(k, _)| k != "mcp-name");
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{}}}}}"#,
        fixture::META
    );
    let answer = fx.post(&headers, body.into_bytes()).await.unwrap();
    let message = answer.message.expect("tools/list answers JSON-RPC");
    let tools: Vec<Tool> = message["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list failed: {message}"))
        .iter()
        .map(|t| Tool {
            name: t["name"].as_str().unwrap().to_owned(),
            input: t["inputSchema"].clone(),
        })
        .collect();
    assert!(tools.iter().any(|t| t.name == "execute_task"), "{message}");
    tools
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_tool_refuses_bad_arguments_clearly() {
    let fx = Fixture::start().await;
    let marker = Marker::new();
    let tools = list_tools(&fx).await;
    let mut cases = Vec::new();
    for (i, era) in Era::ALL.into_iter().enumerate() {
        let mut builder = Builder::new(&fx, &marker, era, i == 0, 1_000_000 * (i as u64 + 1));
        for tool in &tools {
            builder.tool(tool);
        }
        cases.extend(builder.finish());
    }
    assert!(cases.len() > 500, "only {} cases generated", cases.len());
    let report = run::run(&fx, &marker, &cases).await;
    // The task count that judged every batch must see a task that is really created.
    let before = fx.task_count().await;
    let created = fx
        .call(
            GATEWAY,
            "execute_task",
            json!({"task_description": "the count check"}),
        )
        .await
        .unwrap();
    assert!(created["result"]["isError"] != true, "{created}");
    assert_eq!(
        fx.task_count().await,
        before + 1,
        "the task count misses tasks"
    );
    report.finish("tool arguments");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_protocol_messages_are_refused_clearly() {
    let fx = Fixture::start().await;
    let marker = Marker::new();
    let cases: Vec<_> = Era::ALL
        .into_iter()
        .flat_map(|era| protocol::cases(&fx, &marker, era))
        .collect();
    let report = run::run(&fx, &marker, &cases).await;
    report.finish("protocol");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_headers_are_refused_clearly() {
    let fx = Fixture::start().await;
    let marker = Marker::new();
    let cases: Vec<_> = Era::ALL
        .into_iter()
        .flat_map(|era| headers::cases(&fx, &marker, era))
        .collect();
    let report = run::run(&fx, &marker, &cases).await;
    report.finish("headers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_answers_no_one_but_the_caller_that_opened_it() {
    let fx = Fixture::start().await;
    let marker = Marker::new();
    let cases = sessions::cases(&fx);
    let report = run::run(&fx, &marker, &cases).await;
    report.finish("foreign sessions");
}

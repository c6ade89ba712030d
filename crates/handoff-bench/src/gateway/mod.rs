//! `handoff bench --gateway`: what Handoff's model gateway adds to each model call. The
//! scripted model (in this process) is the provider; a real `handoff serve` has it behind its
//! gateway, and a `command` task hands the bench its gateway token. The same streamed Chat
//! Completions calls are made straight to the model and through the gateway, in the same run,
//! at each concurrency: latency to the last byte, and `handoff serve`'s CPU per call against
//! the CPU the direct path's client and model take per call, and against the CPU a real agent
//! (`opencode run`) spends per call to the same model. Those calls are answered at once and
//! back to back, which saturates a small machine; a provider-paced pair of steps at each
//! concurrency, the model answering after a time to first token, shows the gateway's own
//! latency per call.

mod agent;
mod call;
mod step;
mod table;
mod task;

use std::path::{Path, PathBuf};

use axum::body::Bytes;
use handoff_scripted_model::{Script, ScriptedModel};
use reqwest::Client;

use self::{
    agent::Baseline,
    call::{Endpoint, PROVIDER_KEY},
    step::{Plan, Route, Row},
    task::TokenTask,
};
use crate::{
    BenchError,
    client::{Era, McpClient},
    target::Target,
};

/// Calls each client makes in the warm-up step of each route.
const WARM_CALLS: usize = 4;
/// Calls per client in each provider-paced step of a full run: each waits the model's time to
/// first token, so the four steps (two routes at N=1 and N=16) take ~14 s.
const PACED_CALLS: usize = 15;
/// Tool turns of the agent baseline's short and long run, also in a smoke run: its start-up
/// varies by a few tenths of a second, which fewer calls apart would not stand out from.
const AGENT_TURNS: [usize; 2] = [2, 22];

/// How many concurrent clients, and how many calls a step.
#[derive(Debug, Clone)]
pub struct GatewayBenchOptions {
    /// Concurrency levels.
    pub clients: Vec<usize>,
    /// Calls per step (route and concurrency), split over its clients.
    pub calls: usize,
    /// Calls per client in each provider-paced step.
    pub paced_calls: usize,
    /// The `opencode` program whose CPU per model call is the agent baseline; `None`: `opencode`
    /// on PATH, and no baseline when there is none.
    pub agent: Option<PathBuf>,
}

impl GatewayBenchOptions {
    /// The run the issue asks for: N=1 and N=16, enough calls for CPU ticks to count.
    pub fn full() -> Self {
        Self {
            clients: vec![1, 16],
            calls: 2000,
            paced_calls: PACED_CALLS,
            agent: None,
        }
    }

    /// A few calls, to prove the row still works (figures mean little).
    pub fn smoke() -> Self {
        Self {
            clients: vec![1, 16],
            calls: 32,
            paced_calls: 4,
            agent: None,
        }
    }
}

/// Runs the gateway benchmark and prints its table.
pub async fn run_gateway(exe: &Path, options: &GatewayBenchOptions) -> Result<(), BenchError> {
    let script = Script::from_json(&call::script(AGENT_TURNS).to_string())
        .map_err(|e| BenchError::Setup(format!("the gateway bench's script: {e}")))?;
    let model = ScriptedModel::start(script, None)
        .await
        .map_err(|e| BenchError::Setup(format!("scripted model: {e}")))?;
    let result = async {
        // Before `handoff serve` starts: the agent's CPU is read as this process's reaped
        // children's, so no other child may end meanwhile, and `handoff serve` adds no load.
        let agent = agent::measure(options.agent.as_deref(), &model, AGENT_TURNS).await?;
        let handoff = Target::handoff(exe, &task::server_env(&model)).await?;
        let result = with_token(&handoff, &model, options, &agent).await;
        handoff.stop().await;
        result
    }
    .await;
    model.shutdown().await;
    result
}

/// Gets the token from a task, measures, then ends the task (also when measuring failed).
async fn with_token(
    handoff: &Target,
    model: &ScriptedModel,
    options: &GatewayBenchOptions,
    agent: &Baseline,
) -> Result<(), BenchError> {
    let http = crate::run::http()?;
    let mut client =
        McpClient::connect(http.clone(), &handoff.url, Era::Stateless, "bench-gateway")
            .await
            .map_err(BenchError::Setup)?;
    let task = TokenTask::start(&mut client).await?;
    let direct = Endpoint {
        url: format!("{}/chat/completions", model.openai_base_url()),
        key: PROVIDER_KEY.to_owned(),
    };
    let routes = [&direct, &task.endpoint];
    let measured = measure(&http, handoff, routes, options, agent).await;
    let ended = task.end(&mut client).await;
    let made = measured?;
    ended?;
    counted(&http, handoff, made).await;
    Ok(())
}

/// The reference answers, a warm-up, then every step; prints the table, the agent baseline
/// and the targets. The number of calls made through the gateway.
#[allow(clippy::print_stdout)]
async fn measure(
    http: &Client,
    handoff: &Target,
    routes: [&Endpoint; 2],
    options: &GatewayBenchOptions,
    agent: &Baseline,
) -> Result<u64, BenchError> {
    let (plain, paced) = (call::body(), call::paced_body());
    let frames = reference(http, routes, &plain).await?;
    if reference(http, routes, &paced).await? != frames {
        return Err(BenchError::Setup(
            "the paced answer has other frames than the plain one".to_owned(),
        ));
    }
    println!(
        "# handoff bench --gateway — {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    println!("{}", table::header());
    // The two reference calls through the gateway.
    let mut made = 2;
    let mut rows: Vec<Row> = Vec::new();
    let [direct, gateway] = routes;
    for step in steps(options) {
        for route in Route::pair(step.paced) {
            let plan = Plan {
                http,
                route,
                endpoint: if route.through_gateway() {
                    gateway
                } else {
                    direct
                },
                body: if step.paced { &paced } else { &plain },
                frames,
                clients: step.clients,
                calls_per_client: step.calls_per_client,
                handoff: handoff.pid,
                stagger: stagger(&step),
            };
            let row = step::run(&plan).await;
            if route.through_gateway() {
                made += (step.clients * (step.calls_per_client + 1)) as u64;
            }
            if step.shown {
                table::print(&row);
                rows.push(row);
            } else if let Some(error) = row.first_error {
                println!("warm-up {} first error: {error}", route.name());
            }
        }
    }
    table::legend(frames, options.calls, options.paced_calls);
    println!("{}", agent.line());
    table::summary(&rows, agent.per_call_us());
    Ok(made)
}

/// One step of both routes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Step {
    clients: usize,
    calls_per_client: usize,
    /// Its rows are shown (a warm-up's are not).
    shown: bool,
    /// The model answers after its time to first token.
    paced: bool,
}

/// Each step: first a warm-up at the largest concurrency (the first measured step must not pay
/// for first allocations and connections), then each level with the step's calls split over
/// its clients, then each level provider-paced with `paced_calls` per client (each call waits
/// the time to first token, so the step's calls would take minutes).
fn steps(options: &GatewayBenchOptions) -> Vec<Step> {
    let most = options.clients.iter().copied().max().unwrap_or(1).max(1);
    let levels = || options.clients.iter().map(|&n| n.max(1));
    let step = |clients, calls_per_client, shown, paced| Step {
        clients,
        calls_per_client,
        shown,
        paced,
    };
    std::iter::once(step(most, WARM_CALLS, false, false))
        .chain(levels().map(|n| step(n, (options.calls / n).max(1), true, false)))
        .chain(levels().map(|n| step(n, options.paced_calls.max(1), true, true)))
        .collect()
}

/// How far apart a step's clients start: paced clients spread over one time to first token,
/// so their answers do not all stream at the same instant; back-to-back clients at once.
fn stagger(step: &Step) -> std::time::Duration {
    let clients = u32::try_from(step.clients.max(1)).unwrap_or(u32::MAX);
    match step.paced {
        true => std::time::Duration::from_millis(call::TTFT_MS) / clients,
        false => std::time::Duration::ZERO,
    }
}

/// One fully checked call each way with `body`; the answer's frames, which must be the same
/// through the gateway as from the model.
async fn reference(
    http: &Client,
    [direct, gateway]: [&Endpoint; 2],
    body: &Bytes,
) -> Result<usize, BenchError> {
    let frames = checked(http, direct, body).await?;
    if checked(http, gateway, body).await? != frames {
        return Err(BenchError::Setup(
            "the gateway's answer has other frames than the model's".to_owned(),
        ));
    }
    Ok(frames)
}

/// One fully checked call; the answer's frames.
async fn checked(http: &Client, to: &Endpoint, body: &Bytes) -> Result<usize, BenchError> {
    let answer = call::send(http, to, body).await;
    answer
        .and_then(|answer| call::check(&answer))
        .map_err(|e| BenchError::Setup(format!("a call to {}: {e}", to.url)))
}

/// Prints how many calls the gateway counted as answered (its `/metrics`) against `made`.
#[allow(clippy::print_stdout)]
async fn counted(http: &Client, handoff: &Target, made: u64) {
    let series = r#"handoff_gateway_calls_total{wire="openai_chat",status="2xx"}"#;
    let text = match http.get(crate::metrics::url(&handoff.url)).send().await {
        Ok(answer) => answer.text().await.unwrap_or_default(),
        Err(_) => String::new(),
    };
    let counted =
        crate::metrics::value(&text, series).map_or_else(|| "no".to_owned(), |n| format!("{n:.0}"));
    println!("gateway calls: the bench made {made}, handoff counted {counted} answered 2xx");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paced_steps_follow_the_plain_ones_at_each_level() {
        let options = GatewayBenchOptions {
            clients: vec![1, 16],
            calls: 2000,
            paced_calls: 15,
            agent: None,
        };
        let shown: Vec<(usize, usize, bool)> = steps(&options)
            .iter()
            .map(|s| (s.clients, s.calls_per_client, s.paced))
            .collect();
        assert_eq!(
            shown,
            [
                (16, WARM_CALLS, false),
                (1, 2000, false),
                (16, 125, false),
                (1, 15, true),
                (16, 15, true)
            ]
        );
        assert!(steps(&options)[1..].iter().all(|s| s.shown) && !steps(&options)[0].shown);
    }
}

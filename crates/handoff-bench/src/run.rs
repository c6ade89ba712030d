//! The benchmark plan and its order.

use std::{
    path::Path,
    time::{Duration, Instant},
};

use reqwest::Client;

use crate::{
    BenchError,
    client::{Era, McpClient},
    load::{LoadResult, Step, step},
    ops::Op,
    pattern_step::{PATTERN_MAX_CLIENTS, PatternPlan, patterns_at},
    proc::ProcSample,
    report,
    soak::{abandon_sessions, soak},
    target::Target,
};

/// What to run.
#[derive(Debug, Clone)]
pub struct BenchOptions {
    /// Concurrency levels.
    pub clients: Vec<usize>,
    /// Length of each load step.
    pub step: Duration,
    /// Length of the soak.
    pub soak: Duration,
    /// Soak windows (p99 per window).
    pub soak_windows: u32,
    /// Soak request rate per second.
    pub soak_rate: u32,
    /// Sessions opened and abandoned for the memory check.
    pub abandoned: usize,
    /// Server idle timeout for legacy sessions during the run.
    pub idle_timeout: Duration,
    /// Cold starts measured.
    pub cold_starts: usize,
}

impl BenchOptions {
    /// The full run the issue describes (several minutes on 2 cores).
    pub fn full() -> Self {
        Self {
            clients: vec![1, 16, 64, 256, 1000],
            step: Duration::from_secs(3),
            soak: Duration::from_secs(300),
            soak_windows: 5,
            soak_rate: 200,
            // Past the default `server.max_sessions` (1024), to show the limit holding.
            abandoned: 2000,
            idle_timeout: Duration::from_secs(10),
            cold_starts: 5,
        }
    }

    /// A few seconds, to prove the benchmark still works (CI); figures mean little.
    pub fn smoke() -> Self {
        Self {
            clients: vec![1, 4],
            step: Duration::from_millis(300),
            soak: Duration::from_secs(2),
            soak_windows: 2,
            soak_rate: 50,
            abandoned: 20,
            idle_timeout: Duration::from_secs(1),
            cold_starts: 1,
        }
    }
}

pub(crate) fn http() -> Result<Client, BenchError> {
    // reqwest is built with rustls on ring only; the provider must be installed once.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Client::builder()
        .pool_max_idle_per_host(usize::MAX)
        .timeout(Duration::from_secs(60))
        .build()
        .map_err(|e| BenchError::Setup(format!("HTTP client: {e}")))
}

fn server_env(options: &BenchOptions) -> Vec<(&'static str, String)> {
    vec![
        ("HANDOFF_COMMAND_ARGV", r#"["true"]"#.to_owned()),
        ("HANDOFF_DEFAULT_EXECUTOR", "command".to_owned()),
        ("HANDOFF_SUBMISSIONS_PER_MINUTE", "0".to_owned()),
        ("HANDOFF_MAX_QUEUED_TASKS", "1000000".to_owned()),
        ("HANDOFF_MAX_CONCURRENT_TASKS", "4".to_owned()),
        (
            "HANDOFF_SESSION_IDLE_TIMEOUT_SECS",
            options.idle_timeout.as_secs().max(1).to_string(),
        ),
        // The load steps open and abandon thousands of sessions under one agent; the session
        // limits are measured on their own, on a fresh server (`abandoned_sessions`).
        ("HANDOFF_MAX_SESSIONS", "1000000".to_owned()),
        ("HANDOFF_MAX_SESSIONS_PER_CLIENT", "1000000".to_owned()),
        // Every client holds a connection (a Letta-pattern client two: its stream and its
        // requests); the default cap (512) would refuse the largest step.
        (
            "HANDOFF_MAX_CONNECTIONS",
            (2 * options.clients.iter().max().copied().unwrap_or(1) + 64).to_string(),
        ),
    ]
}

/// Spawn → first answered `initialize`, `count` times; the median in milliseconds.
async fn cold_start(exe: &Path, http: &Client, options: &BenchOptions) -> Result<f64, BenchError> {
    let mut samples = Vec::new();
    for _ in 0..options.cold_starts.max(1) {
        let at = Instant::now();
        let target = Target::handoff(exe, &server_env(options)).await?;
        McpClient::connect(http.clone(), &target.url, Era::Session, "bench-cold")
            .await
            .map_err(BenchError::Setup)?;
        samples.push(at.elapsed().as_secs_f64() * 1e3);
        target.stop().await;
    }
    samples.sort_by(f64::total_cmp);
    Ok(samples[samples.len() / 2])
}

/// Waits until no task is queued or running (`health` counts, refreshed every 2 s).
async fn drain(client: &mut McpClient) -> Result<(), BenchError> {
    let until = Instant::now() + Duration::from_secs(300);
    // Let the counts catch up with the last submissions first.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    while Instant::now() < until {
        let health = client
            .call(Op::Health, "")
            .await
            .map_err(BenchError::Setup)?;
        let tasks = &health["structuredContent"]["tasks"];
        let busy = tasks["active"].as_u64().unwrap_or(0) + tasks["queued"].as_u64().unwrap_or(0);
        if busy == 0 {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    Err(BenchError::Setup(
        "submitted tasks did not finish within 300 s".to_owned(),
    ))
}

/// Handoff's session-era answers as the load's agent sees them — `tools/list`, the `ping`
/// tool, `get_task_status` of `task_id` — as the floor's answers file: what it sends back.
async fn floor_answers(http: &Client, url: &str, task_id: &str) -> Result<Vec<u8>, BenchError> {
    let mut client = McpClient::connect(http.clone(), url, Era::Session, crate::load::AGENT)
        .await
        .map_err(BenchError::Setup)?;
    let mut answers = serde_json::Map::new();
    for op in [Op::ToolsList, Op::Ping, Op::GetTaskStatus] {
        let result = client.call(op, task_id).await.map_err(BenchError::Setup)?;
        let key = match op.method() {
            (_, Some(tool)) => format!("{}{tool}", crate::floor::TOOL_CALL_KEY),
            (method, None) => method.to_owned(),
        };
        answers.insert(key, result);
    }
    client.end_session(true).await.map_err(BenchError::Setup)?;
    serde_json::to_vec(&answers).map_err(|e| BenchError::Setup(format!("floor answers: {e}")))
}

/// Runs everything and prints the report on stdout.
pub async fn run(exe: &Path, options: &BenchOptions) -> Result<(), BenchError> {
    let http = http()?;
    println!(
        "# handoff bench — {} CPUs",
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let cold_ms = cold_start(exe, &http, options).await?;

    let handoff = Target::handoff(exe, &server_env(options)).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // Before any request: a served request maps the code it runs, which idle RSS must not count.
    let idle = ProcSample::of(handoff.pid);
    // Stateless: no session to expire between the steps it is used in.
    let mut setup = McpClient::connect(
        http.clone(),
        &handoff.url,
        Era::Stateless,
        crate::load::AGENT,
    )
    .await
    .map_err(BenchError::Setup)?;
    let submitted = setup
        .call(Op::ExecuteTask, "")
        .await
        .map_err(BenchError::Setup)?;
    let task_id = submitted["structuredContent"]["task_id"]
        .as_str()
        .ok_or_else(|| BenchError::Setup(format!("execute_task answered {submitted}")))?
        .to_owned();
    for _ in 1..crate::ops::LIST_PAGE {
        setup
            .call(Op::ExecuteTask, "")
            .await
            .map_err(BenchError::Setup)?;
    }
    drain(&mut setup).await?;
    let answers = floor_answers(&http, &handoff.url, &task_id).await?;
    let floor = Target::floor(exe, &answers).await?;

    let results = table(&http, &handoff, &floor, options, &task_id, &mut setup).await?;

    println!();
    let soaked = soak(
        &http,
        &handoff.url,
        handoff.pid,
        &task_id,
        options.soak_rate,
        options.soak,
        options.soak_windows,
    )
    .await
    .map_err(BenchError::Setup)?;
    let windows: Vec<String> = soaked
        .window_p99
        .iter()
        .map(|p| format!("{:.3}", p / 1e3))
        .collect();
    println!(
        "soak: {} get_task_status at {}/s in one session, {} errors; p99 per {:.0} s window (ms): {}; RSS {} -> {}",
        soaked.requests,
        options.soak_rate,
        soaked.errors,
        soaked.window.as_secs_f64(),
        windows.join(", "),
        report::megabytes(soaked.rss_start),
        report::megabytes(soaked.rss_end)
    );
    handoff.stop().await;
    floor.stop().await;
    abandoned_sessions(exe, &http, options).await?;

    println!();
    summary(&results, &soaked.window_p99, cold_ms, idle);
    Ok(())
}

/// The load table: at each concurrency level the floor, every op in both eras, then the
/// patterns (up to `PATTERN_MAX_CLIENTS`) beside the floor serving the same requests.
async fn table(
    http: &Client,
    handoff: &Target,
    floor: &Target,
    options: &BenchOptions,
    task_id: &str,
    setup: &mut McpClient,
) -> Result<Vec<LoadResult>, BenchError> {
    println!();
    report::header();
    let mut results: Vec<LoadResult> = Vec::new();
    for &clients in &options.clients {
        let plan = |era, op| Step {
            era,
            op,
            clients,
            duration: options.step,
        };
        // The floor sends the same answers (the ~45 KB list, the status) and receives the same
        // requests: a stateless request's `_meta` and headers are parsed by both sides.
        let mut floors = Vec::new();
        for (era, op) in [
            (Era::Floor, Op::Ping),
            (Era::FloorStateless, Op::Ping),
            (Era::Floor, Op::ToolsList),
            (Era::Floor, Op::GetTaskStatus),
            (Era::FloorStateless, Op::GetTaskStatus),
        ] {
            let row = step(http, &floor.url, floor.pid, plan(era, op), "").await;
            report::row(&row, None);
            floors.push(row);
        }
        for (era, op) in [
            (Era::Session, Op::Ping),
            (Era::Stateless, Op::Ping),
            (Era::Session, Op::ToolsList),
            (Era::Session, Op::GetTaskStatus),
            (Era::Stateless, Op::GetTaskStatus),
            (Era::Session, Op::ListTasks),
            (Era::Session, Op::ExecuteTask),
        ] {
            let result = step(http, &handoff.url, handoff.pid, plan(era, op), task_id).await;
            report::row(&result, floor_row(&floors, &result));
            results.push(result);
            if op == Op::ExecuteTask {
                // The submitted tasks still run; the next step must not pay for them.
                drain(setup).await?;
            }
        }
        results.extend(floors);
        if clients <= PATTERN_MAX_CLIENTS {
            let patterns = PatternPlan {
                handoff,
                floor,
                clients,
                duration: options.step,
                task_id,
            };
            results.extend(patterns_at(http, &patterns).await);
        }
    }
    Ok(results)
}

/// Initialize-only sessions nobody closes, against a fresh server with the default session
/// limits (a server that already served the load would hide their cost in its own growth).
async fn abandoned_sessions(
    exe: &Path,
    http: &Client,
    options: &BenchOptions,
) -> Result<(), BenchError> {
    let unused = options.idle_timeout.as_secs().max(1);
    let mut env: Vec<_> = server_env(options)
        .into_iter()
        .filter(|(name, _)| !name.starts_with("HANDOFF_MAX_SESSIONS"))
        .collect();
    env.push(("HANDOFF_UNUSED_SESSION_TIMEOUT_SECS", unused.to_string()));
    let fresh = Target::handoff(exe, &env).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A quarter of the timeout more: the server sweeps unused sessions that often.
    let idle = Duration::from_secs(unused) * 5 / 4 + Duration::from_secs(2);
    let abandoned = abandon_sessions(http, &fresh.url, fresh.pid, options.abandoned, idle).await;
    let [before, open, after, again] = abandoned.rss;
    println!(
        "abandoned sessions: {} tried on a fresh server with the default limits, {} opened, {} refused; RSS {} before, {} with them open, {} after the {unused} s unused-session timeout; the same {} tried again: {} opened, RSS {}",
        options.abandoned,
        abandoned.opened,
        options.abandoned - abandoned.opened,
        report::megabytes(before),
        report::megabytes(open),
        report::megabytes(after),
        options.abandoned,
        abandoned.reopened,
        report::megabytes(again)
    );
    fresh.stop().await;
    Ok(())
}

fn summary(results: &[LoadResult], soak_p99: &[f64], cold_ms: f64, idle: ProcSample) {
    for op in [Op::Ping, Op::ToolsList, Op::GetTaskStatus] {
        let worst = worst_floor_ratio(results, op);
        report::target(
            &format!("server CPU per {} vs the floor (worst)", op.name()),
            worst.map_or_else(|| "-".to_owned(), |r| format!("{r:.1}x")),
            "<= 2x",
            worst.is_some_and(|r| r <= 2.0),
        );
    }
    crate::pattern_step::summary(results);
    report::target(
        "cold start to a served request (median)",
        format!("{cold_ms:.1} ms"),
        "<= 50 ms",
        cold_ms <= 50.0,
    );
    let most = results.iter().map(|r| r.clients).max().unwrap_or(0);
    let errors: u64 = results
        .iter()
        .filter(|r| r.clients == most)
        .map(|r| r.errors)
        .sum();
    report::target(
        &format!("errors with {most} concurrent sessions"),
        errors.to_string(),
        "0",
        errors == 0,
    );
    // File pages are mostly the binary's code: they grow when start-up code is scattered
    // (crates/handoff/build.rs), the rest when memory is kept.
    report::target(
        "idle RSS",
        format!(
            "{} ({} of it file pages)",
            report::megabytes(idle.rss_bytes),
            report::megabytes(idle.rss_file_bytes)
        ),
        "<= 20 MB",
        idle.rss_bytes <= 20 << 20,
    );
    let (lo, hi) = soak_p99
        .iter()
        .fold((f64::MAX, 0.0f64), |(lo, hi), p| (lo.min(*p), hi.max(*p)));
    let spread = if lo > 0.0 {
        (hi - lo) / lo * 100.0
    } else {
        0.0
    };
    report::target(
        "soak p99 spread across windows",
        format!("{spread:.0} %"),
        "<= 20 %",
        spread <= 20.0,
    );
}

/// The floor row `result` is divided by: the floor's row for the same op received in the same
/// era's shape, else its `ping` in that shape.
fn floor_row<'a>(rows: &'a [LoadResult], result: &LoadResult) -> Option<&'a LoadResult> {
    let floor = result.era.floor();
    let find = |name: &str| {
        rows.iter()
            .find(|r| r.era == floor && r.name == name && r.clients == result.clients)
    };
    find(result.name).or_else(|| find(Op::Ping.name()))
}

/// The largest ratio of `op`'s CPU per request to its floor row's at the same concurrency
/// (see [`floor_row`]).
fn worst_floor_ratio(results: &[LoadResult], op: Op) -> Option<f64> {
    results
        .iter()
        .filter(|r| r.name == op.name() && !r.era.is_floor())
        .filter_map(|r| {
            let base = floor_row(results, r)?.cpu_us;
            (base > 0.0).then(|| r.cpu_us / base)
        })
        .reduce(f64::max)
}

//! The `handoff` binary: CLI, logging, signals; everything else lives in the library crates.

mod cli;
mod client;
mod init;
mod letta_connect;
mod logging;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use handoff_config::{Config, LoadOptions};
use handoff_server::{App, DataDirLock, serve_http, serve_stdio};
use handoff_tools::AgentId;
use tokio_util::sync::CancellationToken;

use crate::cli::{BenchArgs, Cli, Command, LettaCommand, ServeArgs};
use crate::client::terminal::print_line;

fn main() -> ExitCode {
    // The isolation launcher runs between fork and the agent: no config, no logging, no clap.
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if args.first().is_some_and(|a| a == "isolate") {
        return isolate(&args[1..]);
    }
    let cli = Cli::parse();
    // Runs go through this very program's `isolate`, whatever the file is called.
    if let Ok(exe) = std::env::current_exe() {
        handoff_server::isolation::set_launcher(vec![
            exe.display().to_string(),
            "isolate".to_owned(),
        ]);
    }
    // Before loading: init must work where the configuration does not load (yet).
    if let Command::Init(args) = &cli.command {
        return init::exit_code(init::run(args));
    }
    let options = LoadOptions::from_process(cli.config.clone(), cli.overrides());
    let config = match Config::load(options) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("handoff: configuration error: {error}");
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Init(_) => Ok(()), // done above, before the configuration loads
        Command::Config { json } => print_config(&config, json),
        Command::Serve(args) => serve(config, args),
        Command::Doctor { json } => doctor(&config, json),
        Command::Bench(args) => bench(args),
        Command::Letta {
            command: LettaCommand::Connect(args),
        } => letta_connect::run(&config, args),
        Command::BenchFloor { answers } => bench_floor(answers.as_deref()),
        Command::Client(command) => return client::main(&config, command),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("handoff: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// `handoff isolate outer|inner <spec> -- <argv…>`: applies the confinement and becomes the
/// agent; only returns (126) when that fails. `handoff isolate keeper [<pid>]`: the run
/// fence's keeper, until its stdin closes.
fn isolate(args: &[std::ffi::OsString]) -> ExitCode {
    if let Some((mode, rest)) = args.split_first()
        && mode == "keeper"
    {
        return match handoff_isolation::keeper::run(rest) {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("handoff isolate keeper: {error}");
                ExitCode::from(126)
            }
        };
    }
    match handoff_isolation::launch::run(args) {
        Ok(never) => match never {},
        Err(error) => {
            eprintln!("handoff isolate: {error}");
            ExitCode::from(126)
        }
    }
}

/// Prints every check; fails when a required one does.
fn doctor(config: &Config, json: bool) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Lines as each check is done (some take seconds); JSON once, whole.
    let show = |check: &handoff_server::doctor::Check| {
        if json {
            return;
        }
        let mark = match (check.ok, check.required) {
            (true, _) => "ok     ",
            (false, true) => "MISSING",
            (false, false) => "absent ",
        };
        print_line(&format!("{mark} {:18} {}", check.name, check.detail));
        if let Some(fix) = &check.fix {
            print_line(&format!("        {:18} fix: {fix}", ""));
        }
    };
    let checks = runtime.block_on(handoff_server::doctor::diagnose_with(config, show));
    if json {
        print_line(&serde_json::to_string_pretty(&checks)?);
    }
    let missing: Vec<&str> = checks
        .iter()
        .filter(|c| c.required && !c.ok)
        .map(|c| c.name.as_str())
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("required for this configuration: {}", missing.join(", "))
    }
}

fn print_config(config: &Config, json: bool) -> anyhow::Result<()> {
    if json {
        print_line(&serde_json::to_string_pretty(&config.effective)?);
        return Ok(());
    }
    let width = config
        .effective
        .iter()
        .map(|e| e.key.len())
        .max()
        .unwrap_or(0);
    for setting in &config.effective {
        print_line(&format!(
            "{:width$} = {}    # {}",
            setting.key, setting.value, setting.source
        ));
    }
    Ok(())
}

fn serve(config: Config, args: ServeArgs) -> anyhow::Result<()> {
    logging::init(&config.log);
    let agent = args
        .agent_id
        .as_deref()
        .map(AgentId::parse)
        .transpose()
        .context("--agent-id")?;
    // Before the store opens: start-up recovery would take over a live instance's tasks. Held
    // until this function returns, after the last run has settled.
    let _lock = DataDirLock::acquire(&config.data_dir)?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    let served = runtime.block_on(async move {
        // Listening before anything starts: a SIGTERM that arrives while the engine starts, or
        // before the waiting task first runs, still shuts down gracefully.
        let signals = Signals::install();
        let app = App::start(config).await.context("starting Handoff")?;
        let shutdown = CancellationToken::new();
        tokio::spawn(stop_on_signal(signals, shutdown.clone(), app.clone()));
        if args.stdio {
            tracing::info!("serving MCP over stdio");
            let served = serve_stdio(&app, agent, shutdown).await;
            // Whatever ended the session, the runs are stopped and recorded.
            app.shutdown().await;
            tracing::info!("handoff stopped");
            return served.map_err(Into::into);
        }
        let server = serve_http(&app, shutdown).await?;
        tracing::info!(
            url = %format!("http://{}/mcp", server.local_addr),
            version = handoff_tools::builtin::VERSION,
            "handoff listening"
        );
        server.task.await.context("server task")??;
        app.shutdown().await;
        tracing::info!("handoff stopped");
        Ok(())
    });
    // Everything that matters has settled; nothing left on the blocking pool (a write to a
    // stdout nobody reads) may hold the exit up.
    runtime.shutdown_timeout(EXIT_WAIT);
    served
}

/// How long the exit waits for blocking work left over after the shutdown.
const EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

fn bench(args: BenchArgs) -> anyhow::Result<()> {
    if args.gateway {
        return bench_gateway(args);
    }
    if let (Some(instances), Some(database_url)) = (args.instances, args.database_url) {
        let options = handoff_bench::ScaleBenchOptions {
            database_url,
            instances,
            tasks: args.tasks.unwrap_or(300),
            clients: args.clients.and_then(|c| c.first().copied()).unwrap_or(16),
        };
        let exe = std::env::current_exe().context("finding the handoff binary")?;
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        runtime.block_on(handoff_bench::run_scale(&exe, &options))?;
        return Ok(());
    }
    if let Some(executors) = args.executors {
        let options = handoff_bench::ExecutorBenchOptions {
            executors,
            tasks: args.tasks.unwrap_or(20),
        };
        let exe = std::env::current_exe().context("finding the handoff binary")?;
        let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
        runtime.block_on(handoff_bench::run_executors(&exe, &options))?;
        return Ok(());
    }
    let mut options = if args.smoke {
        handoff_bench::BenchOptions::smoke()
    } else {
        handoff_bench::BenchOptions::full()
    };
    if let Some(clients) = args.clients {
        options.clients = clients;
    }
    if let Some(secs) = args.step_secs {
        options.step = std::time::Duration::from_secs_f64(secs);
    }
    if let Some(secs) = args.soak_secs {
        options.soak = std::time::Duration::from_secs(secs);
    }
    let exe = std::env::current_exe().context("finding the handoff binary")?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(handoff_bench::run(&exe, &options))?;
    Ok(())
}

fn bench_gateway(args: BenchArgs) -> anyhow::Result<()> {
    let mut options = if args.smoke {
        handoff_bench::GatewayBenchOptions::smoke()
    } else {
        handoff_bench::GatewayBenchOptions::full()
    };
    if let Some(clients) = args.clients {
        options.clients = clients;
    }
    if let Some(calls) = args.calls {
        options.calls = calls;
    }
    if let Some(agent) = args.agent_baseline {
        options.agent = Some(agent);
    }
    let exe = std::env::current_exe().context("finding the handoff binary")?;
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(handoff_bench::run_gateway(&exe, &options))?;
    Ok(())
}

fn bench_floor(answers: Option<&std::path::Path>) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Runtime::new().context("starting the async runtime")?;
    runtime.block_on(handoff_bench::serve_floor(0, answers))?;
    Ok(())
}

/// SIGTERM and SIGINT listeners, registered as soon as they are created.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> Option<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        match (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) {
            (Ok(term), Ok(int)) => Some(Self { term, int }),
            _ => {
                tracing::error!("cannot install signal handlers; stop with SIGKILL");
                None
            }
        }
    }
}

/// Cancels `shutdown` on SIGINT or SIGTERM; a second one kills the runs without waiting for
/// the grace (clients such as Claude Code send SIGINT, SIGTERM and SIGKILL within a second).
async fn stop_on_signal(signals: Option<Signals>, shutdown: CancellationToken, app: App) {
    let Some(Signals { mut term, mut int }) = signals else {
        return;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: shutting down"),
        _ = int.recv() => tracing::info!("SIGINT: shutting down"),
    }
    shutdown.cancel();
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
    tracing::warn!("second signal: stopping the runs without grace");
    app.engine.stop_runs_now().await;
}

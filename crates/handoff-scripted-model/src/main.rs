//! `scripted-model`: serve a script by hand or from a non-Rust test harness.
//!
//! Prints exactly one line, `scripted-model listening on http://127.0.0.1:PORT`, once ready,
//! then serves until SIGTERM or Ctrl-C.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use handoff_scripted_model::{Script, ScriptedModel};
use tokio::signal::unix::{SignalKind, signal};

/// A scripted fake LLM provider (OpenAI chat/Responses, Anthropic, Gemini) on 127.0.0.1.
#[derive(Debug, Parser)]
#[command(name = "scripted-model", version)]
struct Args {
    /// The script (JSON).
    #[arg(long)]
    script: PathBuf,
    /// Port on 127.0.0.1; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append every request to this file as one JSON line.
    #[arg(long)]
    log: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Diagnostics go to stderr: stdout carries only the readiness line.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    let args = Args::parse();
    let script = Script::from_file(&args.script)?;
    let mut terminate = signal(SignalKind::terminate()).context("cannot watch SIGTERM")?;
    let model = ScriptedModel::start_on(script, args.log, args.port).await?;
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "scripted-model listening on {}", model.base_url())
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")?;
    drop(stdout);
    tokio::select! {
        _ = terminate.recv() => {}
        result = tokio::signal::ctrl_c() => result.context("cannot watch Ctrl-C")?,
    }
    model.shutdown().await;
    Ok(())
}

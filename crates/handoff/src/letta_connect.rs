//! `handoff letta connect`: the command line around `handoff_letta::connect`, which does the
//! work; here the flags become a request and the report becomes lines or JSON.

use anyhow::Context;
use handoff_config::Config;
use handoff_letta::connect::{
    self, ConnectOptions, ConnectRequest, Mode, ModeChoice, Report, Targets,
};

use crate::cli::{ConnectArgs, ConnectMode};
use crate::client::terminal::{json_visible, print_line, visible};

/// Runs one connect or remove; prints what it did even when it stops half-way.
pub fn run(config: &Config, args: ConnectArgs) -> anyhow::Result<()> {
    let json = args.json;
    let options = match ConnectOptions::resolve(config, request(args)) {
        Ok(options) => options,
        Err(error) => {
            if json {
                let value = serde_json::json!({"ok": false, "error": error.to_string()});
                print_line(&json_visible(&serde_json::to_string_pretty(&value)?));
            }
            return Err(error.into());
        }
    };
    let client = connect::client(&config.letta)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let mut report = Report::new(&options);
    let outcome = runtime.block_on(connect::run(&client, &options, &mut report));
    let error = outcome.as_ref().err().map(ToString::to_string);
    if json {
        let value = report.to_json(error.as_deref());
        print_line(&json_visible(&serde_json::to_string_pretty(&value)?));
    } else {
        for action in &report.actions {
            print_line(&visible(&action.message));
        }
        if error.is_none() {
            print_line(&visible(&report.summary()));
        }
    }
    outcome.map_err(Into::into)
}

/// The flags as a connect request.
fn request(args: ConnectArgs) -> ConnectRequest {
    ConnectRequest {
        targets: if args.all {
            Targets::All
        } else {
            Targets::Agents(args.agents)
        },
        mode: match args.mode {
            ConnectMode::Auto => ModeChoice::Auto,
            ConnectMode::Mcp => ModeChoice::Fixed(Mode::Mcp),
            ConnectMode::Native => ModeChoice::Fixed(Mode::Native),
        },
        prefix: args.prefix,
        remove: args.remove,
        allow_gateway_token: args.allow_gateway_token,
    }
}

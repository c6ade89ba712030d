//! `handoff instances`: the Handoff instances sharing the server's task store, their
//! heartbeats and the tasks each holds, as the server's `health` tool reports them.

use super::terminal::outln;
use handoff_protocol::builtin::HealthArgs;

use super::{ClientError, Exit, connection::Connection, render};
use crate::cli::InstancesArgs;

/// Runs `handoff instances`.
pub async fn instances(conn: &Connection, args: &InstancesArgs) -> Result<Exit, ClientError> {
    let report = conn.call(&HealthArgs {}).await?.value;
    if args.json {
        render::print_json(&report.instances)?;
        return Ok(Exit::Ok);
    }
    if report.instances.is_empty() {
        outln!("The server has not listed its instances yet; try again in a few seconds.");
        return Ok(Exit::Ok);
    }
    let rows: Vec<Vec<String>> = report
        .instances
        .iter()
        .map(|i| {
            let mut id = i.id.clone();
            if i.this {
                id.push_str(" *");
            }
            vec![
                id,
                render::ago(i.started_at_ms),
                render::ago(i.heartbeat_ms),
                i.tasks_held.to_string(),
                if i.draining { "draining" } else { "serving" }.to_owned(),
            ]
        })
        .collect();
    let headers = ["INSTANCE", "STARTED", "HEARTBEAT", "TASKS", "STATE"];
    outln!("{}", render::table(&headers, &rows));
    outln!("* the instance that answered");
    Ok(Exit::Ok)
}

//! `handoff logs ID [-f] [--all]`: a task's events, and following them live: one line per tool
//! call and none for a request the policy allowed ([`EventLines`]) unless `--all`; `--json`
//! always has every event.

use super::terminal::outln;
use handoff_protocol::{EventLines, EventView, TaskView, tasks::GetTaskHistoryOutput};

use super::{
    ClientError, Exit,
    connection::Connection,
    follow::{Followed, Follower, LiveSink, Sink, ctrl_c, follow},
    render, task_id,
};
use crate::cli::LogsArgs;

/// `handoff logs ID [-f]`: every event; with `-f`, new ones until the task ends.
pub async fn logs(conn: &Connection, args: &LogsArgs) -> Result<Exit, ClientError> {
    let mut follower = Follower::new(task_id(&args.id)?);
    if args.follow {
        return follow_logs(conn, follower, args.json, args.all).await;
    }
    let (task, events) = follower.poll(conn).await?;
    if args.json {
        let whole = GetTaskHistoryOutput {
            task,
            total_events: events.len() as u64,
            events,
            events_offset: 0,
            has_more: false,
            artifacts: None,
        };
        render::print_json(&whole)?;
        return Ok(Exit::Ok);
    }
    let mut lines = EventLines::default();
    for event in events
        .iter()
        .filter(|e| args.all || lines.keep(e.kind, &e.data))
    {
        outln!("{}", render::event_line(event, task.created_at_ms));
    }
    Ok(Exit::Ok)
}

/// `logs -f`: lines above a progress line, or with `--json` one event per line.
async fn follow_logs(
    conn: &Connection,
    mut follower: Follower,
    json: bool,
    all: bool,
) -> Result<Exit, ClientError> {
    if json {
        let mut sink = JsonLines;
        return match follow(conn, &mut follower, &mut sink, ctrl_c()).await? {
            Followed::Ended(_) => Ok(Exit::Ok),
            Followed::Interrupted => Ok(Exit::Detached),
        };
    }
    let mut sink = LiveSink::new(follower.id().as_str(), false, all);
    let followed = follow(conn, &mut follower, &mut sink, ctrl_c()).await?;
    sink.finish();
    match followed {
        Followed::Ended(task) => {
            outln!("{}", render::outcome_line(&task));
            Ok(Exit::Ok)
        }
        Followed::Interrupted => Ok(Exit::Detached),
    }
}

/// Prints each event as one JSON line.
struct JsonLines;

impl Sink for JsonLines {
    fn update(&mut self, _task: &TaskView, events: &[EventView]) {
        for event in events {
            if let Ok(line) = serde_json::to_string(event) {
                outln!("{line}");
            }
        }
    }
}

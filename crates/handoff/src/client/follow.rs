//! Following a task live: `get_task_history` polled from the last event seen (only new events
//! come back), events printed as lines above a progress line (state, the task's age, the
//! agent's latest tool call) until the task ends or the user interrupts.

use super::terminal::{self, outln};
use std::{future::Future, time::Duration};

use handoff_protocol::{
    EventKind, EventLines, EventView, TaskId, TaskView,
    tasks::{GetTaskHistoryArgs, GetTaskHistoryOutput},
};
use indicatif::{ProgressBar, ProgressStyle};

use super::{ClientError, connection::Connection, render};

/// Pause between polls: live enough to read along, light on the server.
const POLL_EVERY: Duration = Duration::from_millis(300);
/// Polls in a row that may find the server unreachable before following gives up.
const RETRIES: u32 = 20;
/// Pause after an unreachable server.
const RETRY_PAUSE: Duration = Duration::from_millis(500);
/// Events per page (the tool's maximum).
const PAGE: u32 = 1000;

/// Reads a task's events page by page, each once.
pub struct Follower {
    id: TaskId,
    /// Events already seen.
    offset: u64,
}

impl Follower {
    /// A follower that has seen none of `id`'s events.
    pub fn new(id: TaskId) -> Self {
        Self { id, offset: 0 }
    }

    /// A follower that has seen `id`'s first `offset` events (a follow-up round's follower
    /// starts past the earlier rounds).
    pub fn from_offset(id: TaskId, offset: u64) -> Self {
        Self { id, offset }
    }

    /// The task.
    pub fn id(&self) -> &TaskId {
        &self.id
    }

    /// Events seen so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The task as it stands and the events recorded since the last poll (all of them or,
    /// on an error, none: the next poll starts from the same place).
    pub async fn poll(
        &mut self,
        conn: &Connection,
    ) -> Result<(TaskView, Vec<EventView>), ClientError> {
        let mut events = Vec::new();
        let mut offset = self.offset;
        loop {
            let page = self.page(conn, offset).await?;
            offset = page.events_offset + page.events.len() as u64;
            events.extend(page.events);
            if !page.has_more {
                self.offset = offset;
                return Ok((page.task, events));
            }
        }
    }

    async fn page(
        &self,
        conn: &Connection,
        offset: u64,
    ) -> Result<GetTaskHistoryOutput, ClientError> {
        let args = GetTaskHistoryArgs {
            agent_id: None,
            task_id: self.id.clone(),
            events_offset: Some(offset),
            events_limit: Some(PAGE),
            include_artifacts: None,
            artifact: None,
            artifact_offset: None,
        };
        Ok(conn.call(&args).await?.value)
    }
}

/// How following ended.
pub enum Followed {
    /// The task reached a final state (every event before it was delivered).
    Ended(Box<TaskView>),
    /// The user pressed Ctrl-C.
    Interrupted,
}

/// Where followed events go.
pub trait Sink {
    /// New events and the task as it stands.
    fn update(&mut self, task: &TaskView, events: &[EventView]);
}

/// Polls until the task ends or `interrupt` completes.
pub async fn follow(
    conn: &Connection,
    follower: &mut Follower,
    sink: &mut dyn Sink,
    interrupt: impl Future<Output = ()>,
) -> Result<Followed, ClientError> {
    tokio::pin!(interrupt);
    let mut ended = false;
    let mut failures = 0;
    loop {
        let polled = tokio::select! {
            polled = follower.poll(conn) => polled,
            () = &mut interrupt => return Ok(Followed::Interrupted),
        };
        let (task, events) = match polled {
            Ok(polled) => {
                failures = 0;
                polled
            }
            // A server restarting: the task is still there when it is back.
            Err(ClientError::Unreachable { .. }) if failures < RETRIES => {
                failures += 1;
                tokio::select! {
                    () = tokio::time::sleep(RETRY_PAUSE) => continue,
                    () = &mut interrupt => return Ok(Followed::Interrupted),
                }
            }
            Err(e) => return Err(e),
        };
        sink.update(&task, &events);
        // One more poll after the end is seen: events recorded just before it are delivered.
        if ended && events.is_empty() {
            return Ok(Followed::Ended(Box::new(task)));
        }
        ended = task.status.is_terminal();
        if ended {
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_EVERY) => {}
            () = &mut interrupt => return Ok(Followed::Interrupted),
        }
    }
}

/// Prints events as log lines above a progress line (drawn only on a terminal).
pub struct LiveSink {
    bar: ProgressBar,
    /// When the task was submitted, for event times.
    origin_ms: Option<i64>,
    /// Print nothing but the progress line (`--json` prints one document at the end).
    quiet: bool,
    /// Which events get a line; `None`: every one (`--all`).
    lines: Option<EventLines>,
    /// The agent's latest tool call.
    tool: Option<String>,
    /// Whether the directory the task works in was printed (once it started: a task that
    /// takes an agent started ahead of it moves into that agent's directory).
    told_workdir: bool,
}

impl LiveSink {
    /// A sink for task `id` whose progress line shows on stderr when it is a terminal; `all`
    /// prints every event, not only [`EventLines`]' choice.
    pub fn new(id: &str, quiet: bool, all: bool) -> Self {
        let bar = ProgressBar::new_spinner();
        // The time shown is the task's age, from the server's record, not since following began.
        if let Ok(style) = ProgressStyle::with_template("{spinner} {prefix} {wide_msg}") {
            bar.set_style(style);
        }
        bar.set_prefix(id.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        Self {
            bar,
            origin_ms: None,
            quiet,
            lines: (!all).then(EventLines::default),
            tool: None,
            told_workdir: false,
        }
    }

    /// Runs `f` (which prints) with the progress line out of the way.
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        self.bar.suspend(f)
    }

    /// Removes the progress line for good.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Sink for LiveSink {
    fn update(&mut self, task: &TaskView, events: &[EventView]) {
        let origin = *self.origin_ms.get_or_insert(task.created_at_ms);
        if let Some(tool) = events.iter().rev().find(|e| e.kind == EventKind::Tool) {
            self.tool = Some(terminal::visible(&render::one_line(&tool.message, 120)).into_owned());
        }
        let tell_workdir = !self.told_workdir && task.started_at_ms.is_some();
        if !self.quiet && (tell_workdir || !events.is_empty()) {
            let lines = &mut self.lines;
            let shown: Vec<&EventView> = events
                .iter()
                .filter(|e| lines.as_mut().is_none_or(|l| l.keep(e.kind, &e.data)))
                .collect();
            self.bar.suspend(|| {
                if tell_workdir {
                    outln!("{} works in {}", task.task_id, task.workdir);
                }
                for event in shown {
                    outln!("{}", render::event_line(event, origin));
                }
            });
        }
        self.told_workdir |= tell_workdir;
        self.bar.set_prefix(format!(
            "{} {} ({}) {}",
            task.task_id,
            task.status,
            task.executor,
            render::duration(age_ms(task)),
        ));
        self.bar.set_message(
            self.tool
                .as_ref()
                .map(|t| format!(" tool: {t}"))
                .unwrap_or_default(),
        );
    }
}

/// How long the task has existed: until its end once it ended, else until now.
fn age_ms(task: &TaskView) -> i64 {
    task.completed_at_ms.unwrap_or_else(render::now_ms) - task.created_at_ms
}

/// Completes on Ctrl-C (never, when no handler can be installed). Until it is first polled,
/// Ctrl-C ends the program as usual.
pub async fn ctrl_c() {
    if tokio::signal::ctrl_c().await.is_err() {
        std::future::pending::<()>().await;
    }
}

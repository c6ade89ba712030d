//! Messages the task's owner sent after the executor's turn ended. They are new input, so the
//! task is not done: the same session is resumed with them, and the result is evaluated afresh.

use std::ops::ControlFlow;

use handoff_task::{EventKind, NewEvent};
use serde_json::json;

use super::{Session, decide::Observed, release, resume};
use crate::{EngineError, driver::Driver, finish::Finish, follow::follow};

/// Resumes the session with `messages` and follows that run; what came of it, or how the task
/// ends when the session could not be resumed.
pub(super) async fn deliver(
    d: &Driver<'_>,
    session: &mut Session,
    messages: Vec<String>,
) -> Result<ControlFlow<Finish, Observed>, EngineError> {
    let prompt = format!(
        "New messages from the task's owner arrived after your last turn. Act on them, then finish the task:\n{}",
        messages
            .iter()
            .map(|m| format!("- {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let run = match resume(d, session.state.as_ref(), &prompt).await {
        Ok(run) => run,
        Err(e) => {
            release(d.executor, session.state.as_ref()).await;
            let why = format!("could not deliver the owner's message(s): {e}");
            return Ok(ControlFlow::Break(Finish {
                exit: session.finish.exit,
                ..Finish::failed(why)
            }));
        }
    };
    let note = format!(
        "{} message(s) sent after the turn ended were delivered by resuming the session",
        messages.len()
    );
    let event = NewEvent::new(EventKind::Log, note)
        .with_data(json!({ "messages": messages, "delivered": true }));
    d.inner.record(&d.task.id, event).await?;
    (session.finish, session.state) = follow(d, run).await?;
    Ok(ControlFlow::Continue(session.ended()))
}

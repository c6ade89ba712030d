//! Messages the task's owner sent after the executor's turn ended. They are new input, so the
//! task is not done: the same session is resumed with them, and the result is evaluated afresh.

use std::sync::Arc;

use handoff_runner::Executor;
use handoff_task::{EventKind, NewEvent, Task, TaskStatus};
use serde_json::{Value, json};

use super::{release, resume, verify};
use crate::{EngineError, finish::Finish, follow::follow, state::EngineState};

/// Resumes the session with `messages`, follows that run, and verifies its end.
pub(super) async fn continue_with(
    inner: &Arc<EngineState>,
    task: &Task,
    executor: &Arc<dyn Executor>,
    state: Option<Value>,
    finish: Finish,
    messages: Vec<String>,
) -> Result<Finish, EngineError> {
    let prompt = format!(
        "New messages from the task's owner arrived after your last turn. Act on them, then finish the task:\n{}",
        messages
            .iter()
            .map(|m| format!("- {m}"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    let run = match resume(inner, task, executor, state.as_ref(), &prompt).await {
        Ok(run) => run,
        Err(e) => {
            release(executor, state.as_ref()).await;
            return Ok(Finish {
                exit: finish.exit,
                ..Finish::failed(format!("could not deliver the owner's message(s): {e}"))
            });
        }
    };
    inner
        .record(
            &task.id,
            NewEvent::new(
                EventKind::Log,
                format!(
                    "{} message(s) sent after the turn ended were delivered by resuming the session",
                    messages.len()
                ),
            )
            .with_data(json!({ "messages": messages, "delivered": true })),
        )
        .await?;
    let (finish, state) = follow(inner, task, executor, run).await?;
    if finish.status != TaskStatus::Completed {
        release(executor, state.as_ref()).await;
        // Every evaluated task ends with a final `completion`, never left at `evaluating`.
        super::interrupted::record_interrupted(inner, task, (1, (0, None)), &finish, false).await?;
        return Ok(finish);
    }
    Box::pin(verify(inner, task, executor, state, finish)).await
}

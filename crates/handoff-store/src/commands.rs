//! The SQL of [`crate::CommandStore`], shared by both stores (written with `?`; the PostgreSQL
//! store numbers the placeholders), and its row reader. Bodies and replies are opaque text:
//! what a command means is the engine's business.

use handoff_task::TaskId;

use crate::{
    PostedCommand, StoreError,
    rows::{StoredRow, corrupt},
};

const COMMANDS: &str = "commands";

/// Posts a command: binds `task_id`, `target`, `body`, `created`; returns its id.
pub(crate) const POST: &str =
    "INSERT INTO commands (task_id, target, body, created) VALUES (?, ?, ?, ?) RETURNING id";

/// Takes every command posted to an instance and not taken yet: binds `taken`, `target`.
pub(crate) const TAKE: &str = "UPDATE commands SET taken = ? \
     WHERE id IN (SELECT id FROM commands WHERE target = ? AND taken IS NULL) \
     RETURNING id, task_id, target, body, created";

/// Takes every command about a task not taken yet, whoever it was posted to (the instance that
/// took the task over answers them): binds `taken`, `task_id`.
pub(crate) const TAKE_FOR_TASK: &str = "UPDATE commands SET taken = ? \
     WHERE id IN (SELECT id FROM commands WHERE task_id = ? AND taken IS NULL) \
     RETURNING id, task_id, target, body, created";

/// Withdraws a command its holder has not taken: binds `id`; a row gone when it was withdrawn.
pub(crate) const WITHDRAW: &str = "DELETE FROM commands WHERE id = ? AND taken IS NULL";

/// Answers a command: binds `reply`, `replied`, `id`.
pub(crate) const REPLY: &str =
    "UPDATE commands SET reply = ?, replied = ? WHERE id = ? AND reply IS NULL";

/// A command's reply, once given: binds `id`.
pub(crate) const REPLY_OF: &str = "SELECT reply FROM commands WHERE id = ?";

/// Forgets the commands posted before `?` (answered or not: their callers stopped waiting).
pub(crate) const PURGE: &str = "DELETE FROM commands WHERE created < ?";

/// The instance that last ran a task: binds `id`.
pub(crate) const RAN_ON: &str = "SELECT ran_on FROM tasks WHERE id = ?";

/// A row of [`TAKE`].
pub(crate) fn from_row(row: &impl StoredRow) -> Result<PostedCommand, StoreError> {
    let task = row.text(COMMANDS, "task_id")?;
    Ok(PostedCommand {
        id: row.int(COMMANDS, "id")?,
        task: TaskId::parse(&task)
            .map_err(|_| corrupt(COMMANDS, "column `task_id` is not a task id"))?,
        target: row.text(COMMANDS, "target")?,
        body: row.text(COMMANDS, "body")?,
        created: row.int(COMMANDS, "created")?,
    })
}

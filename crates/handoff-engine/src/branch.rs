//! What each run of a task changed, committed on the task's own branch (see [`crate::worktree`])
//! when its directory is a worktree of the configured repository: one commit per run, so every
//! completion cycle is a commit. A commit that fails is said on the task; the run's outcome
//! stands either way.

use std::{fmt::Write as _, path::Path, time::Duration};

use handoff_task::{EventKind, NewEvent};
use serde_json::json;

use crate::{EngineError, driver::Driver, worktree};

/// Characters of the description kept in a commit's title line.
const TITLE_CHARS: usize = 72;
/// Characters of the agent's answer kept in a commit's message.
const ANSWER_CHARS: usize = 4_000;
/// The longest a commit may take (a huge tree to stage).
const COMMIT_LIMIT: Duration = Duration::from_secs(120);

/// Commits what the run changed on the task's branch; `answer` is the agent's final answer.
pub(crate) async fn commit_run(d: &Driver<'_>, answer: Option<&str>) -> Result<(), EngineError> {
    let Some(repo) = d.repository() else {
        return Ok(());
    };
    let branch = worktree::branch_for(d.task);
    let message = message(d, answer);
    let dir = Path::new(&d.task.workdir);
    let committed = tokio::time::timeout(
        COMMIT_LIMIT,
        worktree::commit(&repo, dir, &d.task.executor, &message),
    )
    .await
    .unwrap_or_else(|_| Err(format!("it took over {} s", COMMIT_LIMIT.as_secs())));
    let event = match committed {
        Ok(None) => return Ok(()),
        Ok(Some(done)) => NewEvent::new(
            EventKind::Log,
            format!(
                "committed {} on {branch}: {} changed",
                done.commit,
                plural(done.files, "file")
            ),
        )
        .with_data(json!({"branch": branch, "commit": done.commit, "files": done.files})),
        Err(e) => NewEvent::new(
            EventKind::Log,
            format!("could not commit the run's changes on {branch}: {e}"),
        )
        .with_data(json!({"branch": branch, "commit_error": e})),
    };
    d.inner.record(&d.task.id, event).await.map(drop)
}

/// Checks a submission's `branch` and `base` against the repository: they need one (and a
/// directory of Handoff's), the branch must be a new, valid name and the base a commit. The
/// errors name the field, never the value.
pub(crate) async fn check_request(
    repo: Option<&Path>,
    caller_workdir: bool,
    branch: Option<&str>,
    base: Option<&str>,
) -> Result<(), EngineError> {
    let field = match (branch, base) {
        (None, None) => return Ok(()),
        (Some(_), _) => "branch",
        (None, Some(_)) => "base",
    };
    let Some(repo) = repo else {
        return Err(EngineError::invalid(
            field,
            "this server keeps no git repository for tasks (tasks.git_repository)",
        ));
    };
    if caller_workdir {
        return Err(EngineError::invalid(
            field,
            "a task working in a directory of the caller's has no branch of its own",
        ));
    }
    if let Some(name) = branch {
        if !worktree::valid_branch_name(repo, name).await {
            return Err(EngineError::invalid(
                "branch",
                "not a valid git branch name",
            ));
        }
        if worktree::branch_exists(repo, name).await {
            return Err(EngineError::invalid(
                "branch",
                "already exists in the repository; name a new branch",
            ));
        }
    }
    if let Some(rev) = base
        && !worktree::names_a_commit(repo, rev).await
    {
        return Err(EngineError::invalid(
            "base",
            "names no commit of the repository",
        ));
    }
    Ok(())
}

/// The commit message: the task's first line, the agent's answer, and trailers naming the task
/// and its executor.
fn message(d: &Driver<'_>, answer: Option<&str>) -> String {
    let first = d.task.description.lines().next().unwrap_or_default().trim();
    let mut text = clip(
        if first.is_empty() {
            "Handoff task"
        } else {
            first
        },
        TITLE_CHARS,
    );
    let round = d.task.options.round;
    if round > 1 {
        // Each follow-up round's commit says which round it is.
        let _ = write!(text, " (round {round})");
    }
    if let Some(answer) = answer.map(str::trim).filter(|a| !a.is_empty()) {
        text.push_str("\n\n");
        text.push_str(&clip(answer, ANSWER_CHARS));
    }
    let _ = write!(
        text,
        "\n\nHandoff-Task: {}\nHandoff-Executor: {}\n",
        d.task.id, d.task.executor
    );
    if round > 1 {
        let _ = writeln!(text, "Handoff-Round: {round}");
    }
    text
}

/// `text` cut to `max` characters, marked when cut.
fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

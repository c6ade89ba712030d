//! Task directories as `git worktree`s of a configured repository: each task works on a branch
//! of its own (`handoff/<short id>-<slug>`, from the repository's HEAD) without copying the
//! repository, and what each run changed is committed on that branch by Handoff — outside the
//! task's sandbox, with Handoff's identity as committer and the executor as author. The
//! repository's own checkout and checked-out branch are never touched.
//!
//! Git is never run the way the task directory says: its `.git` file is the task's to rewrite,
//! and a git directory of the task's choosing could run code as Handoff (`core.fsmonitor`,
//! hooks). Commits go through the worktree's administrative directory in the repository,
//! checked to belong to the task's directory, with hooks and the file-system monitor off.

use std::{
    ffi::OsStr,
    path::{Path, PathBuf},
};

use handoff_task::{Task, TaskId};

use crate::git_process;

/// Characters of the description kept in a branch name.
const SLUG_CHARS: usize = 40;

/// The committer of every commit Handoff makes.
const COMMITTER: (&str, &str) = ("Handoff", "handoff@localhost");

/// A commit Handoff made on a task's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Committed {
    /// The commit's abbreviated id.
    pub(crate) commit: String,
    /// Files it changed.
    pub(crate) files: usize,
}

/// The branch task `task` works on: the one its caller named (or Handoff's name for it, stored
/// at submission), else Handoff's name for it.
pub(crate) fn branch_for(task: &Task) -> String {
    task.options
        .branch
        .clone()
        .unwrap_or_else(|| default_branch(&task.id, &task.description))
}

/// Handoff's name for the branch of task `id` doing `description`: `handoff/<8 characters of
/// the id>-<words of the description>`.
pub(crate) fn default_branch(id: &TaskId, description: &str) -> String {
    let short: String = id
        .as_str()
        .trim_start_matches("task_")
        .chars()
        .take(8)
        .collect();
    let mut slug = String::new();
    for word in description
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if slug.len() + word.len() + 1 > SLUG_CHARS {
            break;
        }
        if !slug.is_empty() {
            slug.push('-');
        }
        slug.push_str(&word.to_ascii_lowercase());
    }
    if slug.is_empty() {
        format!("handoff/{short}")
    } else {
        format!("handoff/{short}-{slug}")
    }
}

/// Whether `name` may name a new branch (git's own rules: `git check-ref-format --branch`).
pub(crate) async fn valid_branch_name(repo: &Path, name: &str) -> bool {
    !name.starts_with('-')
        && git(
            repo,
            &[
                "check-ref-format".as_ref(),
                "--branch".as_ref(),
                name.as_ref(),
            ],
            &[],
            None,
        )
        .await
        .is_ok()
}

/// The top of the git work tree `dir` lies in (canonical), if it lies in one.
pub(crate) async fn toplevel(dir: &Path) -> Option<PathBuf> {
    let top = git(
        dir,
        &["rev-parse".as_ref(), "--show-toplevel".as_ref()],
        &[],
        None,
    )
    .await
    .ok()?;
    Path::new(&top).canonicalize().ok()
}

/// Whether the repository has a branch `name`.
pub(crate) async fn branch_exists(repo: &Path, name: &str) -> bool {
    resolves(repo, &format!("refs/heads/{name}")).await
}

/// Whether `rev` names a commit of the repository.
pub(crate) async fn names_a_commit(repo: &Path, rev: &str) -> bool {
    !rev.starts_with('-') && resolves(repo, &format!("{rev}^{{commit}}")).await
}

/// Whether `git rev-parse --verify` finds `spec` in the repository.
async fn resolves(repo: &Path, spec: &str) -> bool {
    let verify = [
        "rev-parse".as_ref(),
        "--verify".as_ref(),
        "--quiet".as_ref(),
        "--end-of-options".as_ref(),
        OsStr::new(spec),
    ];
    git(repo, &verify, &[], None).await.is_ok()
}

/// Runs git with `args` (after the safety settings), in `cwd`, feeding `stdin`; stdout, or
/// git's own message.
async fn git(
    cwd: &Path,
    args: &[&OsStr],
    env: &[(&str, &str)],
    stdin: Option<String>,
) -> Result<String, String> {
    let mut all: Vec<&OsStr> = Vec::new();
    for setting in [
        "core.hooksPath=/dev/null",
        "core.fsmonitor=false",
        "commit.gpgsign=false",
    ] {
        all.extend(["-c".as_ref(), OsStr::new(setting)]);
    }
    all.extend_from_slice(args);
    // The subcommand, past `--git-dir X --work-tree Y`, names what failed.
    let mut rest = args.iter();
    let mut first = String::new();
    while let Some(arg) = rest.next() {
        if *arg == OsStr::new("--git-dir") || *arg == OsStr::new("--work-tree") {
            rest.next();
            continue;
        }
        first = arg.to_string_lossy().into_owned();
        break;
    }
    let stdin = stdin.map(String::into_bytes);
    let out = git_process::run(Some(cwd), &all, env, stdin, &first).await?;
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Creates `dir` as a worktree of `repo` on a new `branch` from `base` (the repository's HEAD
/// when unset). With `reuse`, a `branch` that exists already is taken as it is: Handoff's own
/// branch of a task whose directory went and came back; a branch the caller named must be new.
pub(crate) async fn add(
    repo: &Path,
    dir: &Path,
    branch: &str,
    base: Option<&str>,
    reuse: bool,
) -> Result<(), String> {
    let worktree: &OsStr = "worktree".as_ref();
    let mut new = vec![
        worktree,
        "add".as_ref(),
        "-b".as_ref(),
        branch.as_ref(),
        dir.as_os_str(),
    ];
    new.extend(base.map(OsStr::new));
    let added = match git(repo, &new, &[], None).await {
        Ok(_) => Ok(()),
        Err(e) if reuse && e.contains("already exists") => git(
            repo,
            &[worktree, "add".as_ref(), dir.as_os_str(), branch.as_ref()],
            &[],
            None,
        )
        .await
        .map(drop),
        Err(e) => Err(e),
    };
    added.map_err(|e| format!("could not make the task's worktree: {e}"))
}

/// Commits everything that differs in worktree `dir` of `repo` from its branch's last commit,
/// as `author` (the executor) with `message`; `None` when nothing changed.
pub(crate) async fn commit(
    repo: &Path,
    dir: &Path,
    author: &str,
    message: &str,
) -> Result<Option<Committed>, String> {
    let admin = admin_dir(repo, dir).await?;
    let (git_dir, work_tree) = (admin.as_os_str(), dir.as_os_str());
    let at = |args: &[&'static str]| {
        let mut all: Vec<&OsStr> = vec![
            "--git-dir".as_ref(),
            git_dir,
            "--work-tree".as_ref(),
            work_tree,
        ];
        all.extend(args.iter().map(|a| OsStr::new(*a)));
        all
    };
    git(dir, &at(&["add", "--all"]), &[], None).await?;
    let staged = git(
        dir,
        &at(&["diff", "--cached", "--name-only", "-z"]),
        &[],
        None,
    )
    .await?;
    let files = staged.split('\0').filter(|f| !f.is_empty()).count();
    if files == 0 {
        return Ok(None);
    }
    let email = format!("{author}@handoff.invalid");
    let identity = [
        ("GIT_AUTHOR_NAME", author),
        ("GIT_AUTHOR_EMAIL", email.as_str()),
        ("GIT_COMMITTER_NAME", COMMITTER.0),
        ("GIT_COMMITTER_EMAIL", COMMITTER.1),
    ];
    let commit = ["commit", "--quiet", "--no-verify", "--file", "-"];
    git(dir, &at(&commit), &identity, Some(message.to_owned())).await?;
    let commit = git(dir, &at(&["rev-parse", "--short", "HEAD"]), &[], None).await?;
    Ok(Some(Committed { commit, files }))
}

/// The repository's administrative directory of worktree `dir`: the one whose `gitdir` names
/// `dir` — found from the repository, never from what `dir` says.
async fn admin_dir(repo: &Path, dir: &Path) -> Result<PathBuf, String> {
    let common = git(
        repo,
        &[
            "rev-parse".as_ref(),
            "--path-format=absolute".as_ref(),
            "--git-common-dir".as_ref(),
        ],
        &[],
        None,
    )
    .await?;
    let worktrees = Path::new(&common).join("worktrees");
    // Git records the directory as it resolves it: compared resolved, both sides.
    let expected = real(&dir.join(".git")).await;
    let mut entries = tokio::fs::read_dir(&worktrees)
        .await
        .map_err(|e| format!("{}: {e}", worktrees.display()))?;
    while let Ok(Some(entry)) = entries.next_entry().await {
        let Ok(named) = tokio::fs::read_to_string(entry.path().join("gitdir")).await else {
            continue;
        };
        if real(Path::new(named.trim())).await == expected {
            return Ok(entry.path());
        }
    }
    Err(format!(
        "{} is not a worktree of {}",
        dir.display(),
        repo.display()
    ))
}

/// `path` with its links resolved, or as it is when it cannot be.
async fn real(path: &Path) -> PathBuf {
    tokio::fs::canonicalize(path)
        .await
        .unwrap_or_else(|_| path.to_owned())
}

/// Unregisters and deletes the worktree at `dir` (a no-op when it is not one); its branch
/// stays.
pub(crate) async fn remove(repo: &Path, dir: &Path) {
    let worktree: &OsStr = "worktree".as_ref();
    let removed = git(
        repo,
        &[
            worktree,
            "remove".as_ref(),
            "--force".as_ref(),
            dir.as_os_str(),
        ],
        &[],
        None,
    )
    .await;
    if let Err(e) = removed {
        tracing::debug!(dir = %dir.display(), error = %e, "not a registered worktree");
        // Whatever is left (a half-created directory) goes; git forgets it on prune.
        let _ = git(repo, &[worktree, "prune".as_ref()], &[], None).await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_task::{AgentId, TaskOptions, TaskStatus};
    use serde_json::json;

    use super::*;

    fn task(description: &str) -> Task {
        Task {
            id: TaskId::parse("task_abcdefghijklmnopqrstuvwxyz").unwrap(),
            agent_id: AgentId::parse("agent-a").unwrap(),
            description: description.to_owned(),
            executor: "command".into(),
            options: TaskOptions::default(),
            status: TaskStatus::Queued,
            priority: 0,
            queue_seq: 1,
            workdir: "/tmp/w".into(),
            created_at: 0,
            started_at: None,
            completed_at: None,
            exit: None,
            error: None,
            idempotency_key: None,
            metadata: json!({}),
            runner_state: None,
            result_delivered_at: None,
            lease: None,
            fence: 0,
        }
    }

    #[test]
    fn branches_are_named_by_the_task_and_what_it_does() {
        assert_eq!(
            branch_for(&task("Fix the failing test in repo X!")),
            "handoff/abcdefgh-fix-the-failing-test-in-repo-x"
        );
        assert_eq!(branch_for(&task("¿¡ …")), "handoff/abcdefgh");
        let long = branch_for(&task(&"word ".repeat(100)));
        assert!(
            long.len() <= "handoff/abcdefgh-".len() + SLUG_CHARS,
            "{long}"
        );
        assert!(!long.ends_with('-'), "{long}");
    }
}

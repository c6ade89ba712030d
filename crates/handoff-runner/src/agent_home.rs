//! A private home for one agent process's own state. Agents keep a database of every session
//! they ran (OpenCode: `$XDG_DATA_HOME/opencode`); shared by every task's agent, a task's shell
//! could read the other tasks' conversations there. With homes configured, each agent process
//! gets directories of its own, seeded with what it needs from the user's (provider
//! credentials), writable in its sandbox; a continuation reuses its run's home, and the home
//! goes once nothing can continue the run.
//!
//! Used by every executor whose agent keeps such state (`opencode acp`, `opencode run`,
//! Claude Code, Codex).
//!
//! Durable: the home directories, until their run is released. In memory: nothing.

use std::path::{Path, PathBuf};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::{CommandExecutor, RunEvent, RunSpec, RunnerError};

/// The key of a run's state that names its home.
pub(crate) const STATE_KEY: &str = "agent_home";

/// Where an executor's agents keep state of their own: one directory per agent process.
#[derive(Debug, Clone)]
pub struct AgentHomes {
    /// Homes are created under this directory.
    pub root: PathBuf,
    /// Variables pointing into a home: the variable, and its subdirectory.
    pub vars: Vec<(String, String)>,
    /// Files and directory trees copied into a new home when they exist: the source, and the
    /// path in the home.
    pub seed: Vec<(PathBuf, PathBuf)>,
}

impl AgentHomes {
    /// Creates home `name` (or reuses `existing`, a continued run's) and returns it.
    pub(crate) async fn open(
        &self,
        name: &str,
        existing: Option<&Path>,
    ) -> Result<PathBuf, RunnerError> {
        if let Some(dir) = existing.filter(|d| d.starts_with(&self.root) && d.is_dir()) {
            return Ok(dir.to_owned());
        }
        let home = self.root.join(name);
        let io = |message: String| RunnerError::Io {
            context: "creating the agent's home",
            message,
        };
        for (_, sub) in &self.vars {
            let dir = home.join(sub);
            tokio::fs::create_dir_all(&dir)
                .await
                .map_err(|e| io(format!("{}: {e}", dir.display())))?;
        }
        let seed: Vec<(PathBuf, PathBuf)> = self
            .seed
            .iter()
            .map(|(from, to)| (from.clone(), home.join(to)))
            .collect();
        tokio::task::spawn_blocking(move || seed.iter().try_for_each(|(f, t)| copy_seed(f, t)))
            .await
            .map_err(|e| io(e.to_string()))?
            .map_err(io)?;
        Ok(home)
    }

    /// `process` with home `home`: its variables set, and the home writable in the sandbox.
    pub(crate) fn confine(&self, process: &CommandExecutor, home: &Path) -> CommandExecutor {
        let env = self
            .vars
            .iter()
            .map(|(var, sub)| (var.clone(), home.join(sub).display().to_string()))
            .collect();
        process.with_state_dir(env, home.to_owned())
    }
}

/// Starts an executor's agent processes: its program, confined, each in a home of its own
/// when homes are configured (the run's state then names it).
#[derive(Debug, Clone)]
pub(crate) struct Launcher {
    /// The agent's program, confined.
    pub(crate) process: CommandExecutor,
    /// Where its processes get homes of their own, if they do.
    pub(crate) homes: Option<AgentHomes>,
}

impl Launcher {
    /// The agent for `spec`, in `home` (a continued run's) or a new one.
    pub(crate) async fn spawn(
        &self,
        spec: &RunSpec,
        home: Option<&std::path::Path>,
    ) -> Result<crate::command::Spawned, RunnerError> {
        let Some(homes) = &self.homes else {
            return self.process.spawn(spec).await;
        };
        // The run's own: an earlier run of the task (its instance lost) removes only its home.
        let dir = homes.open(&spec.run_name(), home).await?;
        match homes.confine(&self.process, &dir).spawn(spec).await {
            Ok(mut spawned) => {
                spawned.state[STATE_KEY] = serde_json::json!(dir);
                Ok(spawned)
            }
            Err(e) => {
                if home.is_none() {
                    remove(&dir);
                }
                Err(e)
            }
        }
    }

    /// Removes every home: at start-up none belongs to a run that can still continue.
    pub(crate) fn clear_homes(&self) {
        if let Some(homes) = &self.homes
            && homes.root.is_dir()
        {
            remove(&homes.root);
        }
    }
}

/// Copies `from` (a file, or a directory tree) to `to`; nothing when `from` does not exist.
/// A copy, never a link: what the run changes in its home must not reach the original, which
/// other runs read. Symbolic links are copied as links; other special files are skipped.
fn copy_seed(from: &Path, to: &Path) -> Result<(), String> {
    let describe = |e: std::io::Error| format!("{} → {}: {e}", from.display(), to.display());
    let Ok(meta) = std::fs::symlink_metadata(from) else {
        return Ok(());
    };
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).map_err(describe)?;
    }
    let kind = meta.file_type();
    if kind.is_dir() {
        std::fs::create_dir_all(to).map_err(describe)?;
        for entry in std::fs::read_dir(from).map_err(describe)? {
            let entry = entry.map_err(describe)?;
            copy_seed(&entry.path(), &to.join(entry.file_name()))?;
        }
    } else if kind.is_symlink() {
        let target = std::fs::read_link(from).map_err(describe)?;
        std::os::unix::fs::symlink(target, to).map_err(describe)?;
    } else if kind.is_file() {
        std::fs::copy(from, to).map_err(describe)?;
    }
    Ok(())
}

/// `events` of a run in `home` that nothing will continue: the home goes once the run ends,
/// before its end is told (so no later task finds anything of it). Without a home, `events`.
pub(crate) fn discard_at_end(
    mut events: mpsc::Receiver<RunEvent>,
    home: Option<PathBuf>,
) -> mpsc::Receiver<RunEvent> {
    let Some(home) = home else {
        return events;
    };
    let (tx, rx) = mpsc::channel(256);
    tokio::spawn(async move {
        while let Some(event) = events.recv().await {
            if matches!(event, RunEvent::Finished(_)) {
                let home = home.clone();
                let _ = tokio::task::spawn_blocking(move || remove(&home)).await;
            }
            // Read on when nobody listens: the home still goes when the run ends.
            let _ = tx.send(event).await;
        }
    });
    rx
}

/// The home a run recorded in its `state`.
pub(crate) fn of_state(state: &Value) -> Option<PathBuf> {
    state
        .get(STATE_KEY)
        .and_then(Value::as_str)
        .map(PathBuf::from)
}

/// Abandons a run (its process group stopped, as [`crate::command::abandon_state`] does) and
/// removes its home: nothing will continue it.
pub(crate) async fn abandon(state: &Value) -> Result<(), RunnerError> {
    let stopped = crate::command::abandon_state(state).await;
    release(state);
    stopped
}

/// Removes the home a run recorded in its `state`, if any (nothing will continue the run).
pub(crate) fn release(state: &Value) {
    if let Some(home) = of_state(state) {
        remove(&home);
    }
}

/// Removes a home (a run that nothing can continue any more).
pub(crate) fn remove(home: &Path) {
    if let Err(e) = std::fs::remove_dir_all(home)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(home = %home.display(), error = %e, "could not remove an agent's home");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_home_has_its_directories_and_seeds_and_a_continuation_reuses_it() {
        let root = tempfile::tempdir().unwrap();
        let user = tempfile::tempdir().unwrap();
        std::fs::write(user.path().join("auth.json"), "{\"k\":1}").unwrap();
        let homes = AgentHomes {
            root: root.path().to_owned(),
            vars: vec![("XDG_DATA_HOME".into(), "data".into())],
            seed: vec![
                (
                    user.path().join("auth.json"),
                    "data/opencode/auth.json".into(),
                ),
                (user.path().join("missing.json"), "data/missing.json".into()),
                (user.path().join("cache"), "cache/opencode".into()),
            ],
        };
        std::fs::create_dir_all(user.path().join("cache/bin")).unwrap();
        std::fs::write(user.path().join("cache/bin/tool"), "shared").unwrap();
        std::os::unix::fs::symlink("bin/tool", user.path().join("cache/link")).unwrap();
        let home = homes.open("h1", None).await.unwrap();
        assert_eq!(
            std::fs::read_to_string(home.join("data/opencode/auth.json")).unwrap(),
            "{\"k\":1}"
        );
        assert!(!home.join("data/missing.json").exists());
        // The directory is copied: a write in the home never reaches the shared original.
        let copied = home.join("cache/opencode/bin/tool");
        assert_eq!(std::fs::read_to_string(&copied).unwrap(), "shared");
        std::fs::write(&copied, "planted").unwrap();
        assert_eq!(
            std::fs::read_to_string(user.path().join("cache/bin/tool")).unwrap(),
            "shared"
        );
        assert_eq!(
            std::fs::read_link(home.join("cache/opencode/link")).unwrap(),
            PathBuf::from("bin/tool")
        );
        assert_eq!(homes.open("h2", Some(&home)).await.unwrap(), home);
        // A path outside the root is never reused.
        let elsewhere = homes.open("h3", Some(user.path())).await.unwrap();
        assert_eq!(elsewhere, root.path().join("h3"));
        remove(&home);
        assert!(!home.exists());
        assert_eq!(
            of_state(&serde_json::json!({ STATE_KEY: "/x/y" })),
            Some(PathBuf::from("/x/y"))
        );
    }

    #[tokio::test]
    async fn a_discarded_home_is_gone_before_the_end_is_told_and_a_kept_one_stays() {
        let root = tempfile::tempdir().unwrap();
        let home = root.path().join("run");
        std::fs::create_dir_all(home.join("claude/projects")).unwrap();
        let line = RunEvent::Output {
            stream: crate::OutputStream::Stdout,
            line: "working".into(),
        };
        let end = RunEvent::Finished(crate::RunOutcome::default());

        let (tx, rx) = mpsc::channel(4);
        let mut events = discard_at_end(rx, Some(home.clone()));
        tx.send(line.clone()).await.unwrap();
        assert_eq!(events.recv().await, Some(line.clone()));
        assert!(home.is_dir(), "the run still works in its home");
        tx.send(end.clone()).await.unwrap();
        assert_eq!(events.recv().await, Some(end.clone()));
        assert!(!home.exists(), "told of the end, the home is already gone");

        // A continuable run (no home to discard) keeps it.
        std::fs::create_dir_all(&home).unwrap();
        let (tx, rx) = mpsc::channel(4);
        let mut events = discard_at_end(rx, None);
        tx.send(end.clone()).await.unwrap();
        assert_eq!(events.recv().await, Some(end));
        assert!(home.is_dir());
        release(&serde_json::json!({ STATE_KEY: home }));
        assert!(!home.exists(), "released, it goes");
    }
}

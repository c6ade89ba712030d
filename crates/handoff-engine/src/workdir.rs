use std::path::{Path, PathBuf};

use handoff_task::{TaskId, TaskOptions};

use crate::{EngineError, worktree};

/// The branch a task's worktree is made on.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Branch<'a> {
    /// Its name.
    pub(crate) name: &'a str,
    /// What it starts from (unset: the repository's HEAD).
    pub(crate) base: Option<&'a str>,
    /// Handoff named it (it may exist already, from this task); else the caller did.
    pub(crate) own: bool,
}

/// Where task directories may live.
#[derive(Debug, Clone)]
pub(crate) struct Workdirs {
    /// Handoff-created directories go here, one per task.
    root: PathBuf,
    /// Canonical roots a caller may choose a directory inside.
    allowed: Vec<PathBuf>,
    /// New task directories are worktrees of this repository.
    repository: Option<PathBuf>,
}

impl Workdirs {
    /// `root` is made absolute; unreadable allowed roots are dropped with a warning.
    pub(crate) fn new(
        root: &Path,
        allowed: &[PathBuf],
        repository: Option<&Path>,
    ) -> Result<Self, EngineError> {
        let root = std::path::absolute(root)
            .map_err(|e| EngineError::io(format!("workspace dir {}", root.display()), e))?;
        let allowed = allowed
            .iter()
            .filter_map(|dir| match dir.canonicalize() {
                Ok(dir) => Some(dir),
                Err(e) => {
                    tracing::warn!(dir = %dir.display(), error = %e, "ignoring workdir root");
                    None
                }
            })
            .collect();
        Ok(Self {
            root,
            allowed,
            repository: repository.map(Path::to_owned),
        })
    }

    /// Makes sure a task's directory exists before its run: a caller's directory must still be
    /// there; Handoff's own is created (as a worktree on `branch` when a repository is
    /// configured) or, after a re-queue, reused as it was left.
    pub(crate) async fn prepare(
        &self,
        dir: &Path,
        options: &TaskOptions,
        branch: &Branch<'_>,
    ) -> Result<(), String> {
        let caller_chosen = options.caller_workdir;
        if tokio::fs::metadata(dir).await.is_ok_and(|m| m.is_dir()) {
            return Ok(());
        }
        if caller_chosen {
            return Err(format!(
                "the working directory {} no longer exists",
                dir.display()
            ));
        }
        if let Some(parent) = dir.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| format!("could not create {}: {e}", parent.display()))?;
        }
        match self.repository_for(options) {
            Some(repo) => worktree::add(&repo, dir, branch.name, branch.base, branch.own).await,
            None => tokio::fs::create_dir_all(dir).await.map_err(|e| {
                format!(
                    "could not create the working directory {}: {e}",
                    dir.display()
                )
            }),
        }
    }

    /// Makes an empty directory a pooled agent already works in the task's own: a worktree on
    /// `branch` when a repository is configured, as [`Workdirs::prepare`] would have created it.
    pub(crate) async fn adopt(
        &self,
        dir: &Path,
        options: &TaskOptions,
        branch: &Branch<'_>,
    ) -> Result<(), String> {
        match self.repository_for(options) {
            Some(repo) => worktree::add(&repo, dir, branch.name, branch.base, branch.own).await,
            None => Ok(()),
        }
    }

    /// The repository a task with `options` works in a worktree of: the caller's, when its
    /// `workdir` was a git work tree, else the configured one for Handoff's own directories.
    pub(crate) fn repository_for(&self, options: &TaskOptions) -> Option<PathBuf> {
        match &options.repository {
            Some(repo) => Some(PathBuf::from(repo)),
            None if options.caller_workdir => None,
            None => self.repository.clone(),
        }
    }

    /// The repository of the caller's directory `dir` (already checked to be inside an allowed
    /// root), when `dir` lies in a git work tree whose top is inside an allowed root too: the
    /// task then works in a worktree of it and the caller's checkout is never touched.
    pub(crate) async fn caller_repository(&self, dir: &Path) -> Option<PathBuf> {
        let top = worktree::toplevel(dir).await?;
        self.allowed
            .iter()
            .any(|root| top.starts_with(root))
            .then_some(top)
    }

    /// The directory Handoff creates for a task.
    pub(crate) fn for_task(&self, id: &TaskId) -> PathBuf {
        self.root.join(id.as_str())
    }

    /// Validates a caller-chosen directory: it must exist and resolve inside an allowed root.
    pub(crate) fn caller_chosen(&self, requested: &str) -> Result<PathBuf, EngineError> {
        if self.allowed.is_empty() {
            return Err(EngineError::invalid(
                "workdir",
                "choosing a working directory is disabled on this server (no tasks.workdir_roots configured)",
            ));
        }
        let path = Path::new(requested);
        if !path.is_absolute() {
            return Err(EngineError::invalid("workdir", "must be an absolute path"));
        }
        let resolved = path.canonicalize().map_err(|e| {
            EngineError::invalid("workdir", format!("{requested} is not usable: {e}"))
        })?;
        if !resolved.is_dir() {
            return Err(EngineError::invalid(
                "workdir",
                format!("{requested} is not a directory"),
            ));
        }
        if self.allowed.iter().any(|root| resolved.starts_with(root)) {
            Ok(resolved)
        } else {
            let roots: Vec<String> = self
                .allowed
                .iter()
                .map(|r| r.display().to_string())
                .collect();
            Err(EngineError::invalid(
                "workdir",
                format!(
                    "{requested} is outside the allowed roots ({})",
                    roots.join(", ")
                ),
            ))
        }
    }

    /// Removes a Handoff-created task directory; only paths under the workspace root are touched.
    pub(crate) async fn remove(&self, dir: &Path, options: &TaskOptions) {
        if !dir.starts_with(&self.root) || dir == self.root {
            return;
        }
        if let Some(repo) = self.repository_for(options) {
            worktree::remove(&repo, dir).await;
        }
        match tokio::fs::remove_dir_all(dir).await {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!(dir = %dir.display(), error = %e, "could not remove task dir"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caller_dirs_must_be_inside_an_allowed_root() {
        let allowed = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let inside = allowed.path().join("repo");
        std::fs::create_dir(&inside).unwrap();
        let dirs = Workdirs::new(Path::new("ws"), &[allowed.path().to_owned()], None).unwrap();
        assert!(dirs.caller_chosen(inside.to_str().unwrap()).is_ok());
        assert!(
            dirs.caller_chosen(outside.path().to_str().unwrap())
                .is_err()
        );
        assert!(dirs.caller_chosen("relative/dir").is_err());
        let sneaky = format!("{}/../", inside.display());
        let sneaky = format!("{sneaky}{}", "..");
        assert!(dirs.caller_chosen(&sneaky).is_err());
    }

    #[test]
    fn disabled_without_roots() {
        let dirs = Workdirs::new(Path::new("ws"), &[], None).unwrap();
        let err = dirs.caller_chosen("/tmp").unwrap_err().to_string();
        assert!(err.contains("disabled"), "{err}");
    }
}

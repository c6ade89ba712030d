use std::{fmt, path::PathBuf, str::FromStr};

use serde::{Deserialize, Serialize};

use crate::TaskId;

/// What an artifact holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ArtifactKind {
    /// The executor's full standard output / final answer.
    Output,
    /// The full diff of the task's changes.
    Diff,
    /// The executor's full log (stderr and diagnostics).
    Log,
}

impl ArtifactKind {
    /// The kind's stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            ArtifactKind::Output => "output",
            ArtifactKind::Diff => "diff",
            ArtifactKind::Log => "log",
        }
    }
}

impl fmt::Display for ArtifactKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ArtifactKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        [ArtifactKind::Output, ArtifactKind::Diff, ArtifactKind::Log]
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| format!("unknown artifact kind {s:?}"))
    }
}

/// Where an artifact's bytes live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArtifactBody {
    /// Small enough to keep in the store.
    Inline(Vec<u8>),
    /// Spilled to a file under the data dir.
    File(PathBuf),
}

/// A whole output kept for a task (views truncate; artifacts never do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    /// The task it belongs to.
    pub task_id: TaskId,
    /// What it holds.
    pub kind: ArtifactKind,
    /// Full size in bytes.
    pub size: u64,
    /// Bytes beyond the configured cap were not kept (the cap is reported, never silent).
    pub capped: bool,
    /// The bytes, inline or in a file.
    pub body: ArtifactBody,
    /// When it was stored (Unix ms).
    pub created_at: i64,
}

//! Whole outputs of a run, kept in memory while small and spilled to a file when large.

use std::path::PathBuf;

use handoff_store::NewArtifact;
use handoff_task::{ArtifactBody, ArtifactKind};
use tokio::io::AsyncWriteExt;

use crate::EngineError;

/// Accumulates one artifact. Bytes past `max` are counted but not kept, and the artifact says
/// so (`capped`), so nothing is ever dropped silently.
pub(crate) struct ArtifactSink {
    kind: ArtifactKind,
    inline_limit: u64,
    max: u64,
    spill_path: PathBuf,
    buffer: Vec<u8>,
    file: Option<tokio::fs::File>,
    kept: u64,
    size: u64,
}

impl ArtifactSink {
    pub(crate) fn new(
        kind: ArtifactKind,
        spill_path: PathBuf,
        inline_limit: u64,
        max: u64,
    ) -> Self {
        Self {
            kind,
            inline_limit,
            max,
            spill_path,
            buffer: Vec::new(),
            file: None,
            kept: 0,
            size: 0,
        }
    }

    /// Appends one line (a newline is added).
    pub(crate) async fn push_line(&mut self, line: &str) -> Result<(), EngineError> {
        self.push(line.as_bytes()).await?;
        self.push(b"\n").await
    }

    async fn push(&mut self, bytes: &[u8]) -> Result<(), EngineError> {
        self.size += bytes.len() as u64;
        let room = self.max.saturating_sub(self.kept);
        let take = &bytes[..usize::try_from(room.min(bytes.len() as u64)).unwrap_or(0)];
        if take.is_empty() {
            return Ok(());
        }
        self.kept += take.len() as u64;
        if self.file.is_none() && self.kept > self.inline_limit {
            self.spill().await?;
        }
        match &mut self.file {
            Some(file) => file
                .write_all(take)
                .await
                .map_err(|e| EngineError::io(format!("writing {}", self.spill_path.display()), e)),
            None => {
                self.buffer.extend_from_slice(take);
                Ok(())
            }
        }
    }

    async fn spill(&mut self) -> Result<(), EngineError> {
        if let Some(parent) = self.spill_path.parent() {
            tokio::fs::create_dir_all(parent)
                .await
                .map_err(|e| EngineError::io(format!("creating {}", parent.display()), e))?;
        }
        let mut file = tokio::fs::File::create(&self.spill_path)
            .await
            .map_err(|e| EngineError::io(format!("creating {}", self.spill_path.display()), e))?;
        file.write_all(&self.buffer)
            .await
            .map_err(|e| EngineError::io(format!("writing {}", self.spill_path.display()), e))?;
        self.buffer = Vec::new();
        self.file = Some(file);
        Ok(())
    }

    /// The artifact to store, or `None` when nothing was written.
    pub(crate) async fn finish(mut self) -> Result<Option<NewArtifact>, EngineError> {
        if self.size == 0 {
            return Ok(None);
        }
        let body = match self.file.take() {
            Some(mut file) => {
                file.flush()
                    .await
                    .map_err(|e| EngineError::io("flushing artifact", e))?;
                file.sync_all()
                    .await
                    .map_err(|e| EngineError::io("syncing artifact", e))?;
                ArtifactBody::File(self.spill_path.clone())
            }
            None => ArtifactBody::Inline(std::mem::take(&mut self.buffer)),
        };
        Ok(Some(NewArtifact {
            kind: self.kind,
            size: self.size,
            capped: self.size > self.kept,
            body,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_outputs_stay_inline() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = ArtifactSink::new(ArtifactKind::Output, dir.path().join("o"), 100, 1000);
        sink.push_line("hello").await.unwrap();
        let art = sink.finish().await.unwrap().unwrap();
        assert_eq!(art.body, ArtifactBody::Inline(b"hello\n".to_vec()));
        assert_eq!((art.size, art.capped), (6, false));
    }

    #[tokio::test]
    async fn large_outputs_spill_whole_and_caps_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/out.txt");
        let mut sink = ArtifactSink::new(ArtifactKind::Log, path.clone(), 10, 30);
        for i in 0..10 {
            sink.push_line(&format!("line{i}")).await.unwrap();
        }
        let art = sink.finish().await.unwrap().unwrap();
        assert_eq!(art.body, ArtifactBody::File(path.clone()));
        assert_eq!(art.size, 60);
        assert!(art.capped);
        assert_eq!(std::fs::read(&path).unwrap().len(), 30);
    }

    #[tokio::test]
    async fn nothing_written_means_no_artifact() {
        let dir = tempfile::tempdir().unwrap();
        let sink = ArtifactSink::new(ArtifactKind::Diff, dir.path().join("d"), 10, 30);
        assert!(sink.finish().await.unwrap().is_none());
    }
}

//! Whole outputs of a run, kept in memory while small and spilled to a file when large.

use std::path::PathBuf;

use handoff_store::NewArtifact;
use handoff_task::{ArtifactBody, ArtifactKind};
use tokio::io::{AsyncWriteExt, BufWriter};

/// Bytes gathered before the spill file is written.
const SPILL_BUFFER: usize = 64 * 1024;

/// Accumulates one artifact. Bytes past `max` are counted but not kept, and the artifact says
/// so (`capped`), so nothing is ever dropped silently. A file that cannot be written (a full
/// disk) ends the keeping, not the run: what was kept is the artifact, marked capped.
///
/// The spill file is buffered: a fast printer sends one piece per line, and an unbuffered
/// `tokio::fs` write is a blocking-pool round trip each (200,000 lines took ~10 s, minutes on a
/// loaded machine). A write error the buffer defers surfaces at [`ArtifactSink::finish`].
pub(crate) struct ArtifactSink {
    kind: ArtifactKind,
    inline_limit: u64,
    max: u64,
    spill_path: PathBuf,
    buffer: Vec<u8>,
    file: Option<BufWriter<tokio::fs::File>>,
    kept: u64,
    size: u64,
    /// Why keeping stopped early.
    failed: Option<String>,
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
            failed: None,
        }
    }

    /// Appends one line (a newline is added).
    pub(crate) async fn push_line(&mut self, line: &str) {
        self.push(line.as_bytes()).await;
        self.push(b"\n").await;
    }

    /// Appends a piece of a line: a newline only when `ends`.
    pub(crate) async fn push_piece(&mut self, text: &str, ends: bool) {
        self.push(text.as_bytes()).await;
        if ends {
            self.push(b"\n").await;
        }
    }

    async fn push(&mut self, bytes: &[u8]) {
        self.size += bytes.len() as u64;
        if self.failed.is_some() {
            return;
        }
        let room = self.max.saturating_sub(self.kept);
        let take = &bytes[..usize::try_from(room.min(bytes.len() as u64)).unwrap_or(0)];
        if take.is_empty() {
            return;
        }
        if self.file.is_none() && self.kept + take.len() as u64 > self.inline_limit {
            self.spill().await;
        }
        let written = match &mut self.file {
            Some(file) => file.write_all(take).await,
            None if self.failed.is_none() => {
                self.buffer.extend_from_slice(take);
                Ok(())
            }
            None => return,
        };
        match written {
            Ok(()) => self.kept += take.len() as u64,
            Err(e) => self.fail(format!("writing {}: {e}", self.spill_path.display())),
        }
    }

    /// Moves what is kept into the spill file.
    async fn spill(&mut self) {
        if let Some(parent) = self.spill_path.parent()
            && let Err(e) = tokio::fs::create_dir_all(parent).await
        {
            return self.fail(format!("creating {}: {e}", parent.display()));
        }
        let mut file = match tokio::fs::File::create(&self.spill_path).await {
            Ok(file) => BufWriter::with_capacity(SPILL_BUFFER, file),
            Err(e) => return self.fail(format!("creating {}: {e}", self.spill_path.display())),
        };
        if let Err(e) = file.write_all(&self.buffer).await {
            // Some of the buffer may be in the file: the file is the artifact from now on.
            self.file = Some(file);
            self.kept = 0;
            return self.fail(format!("writing {}: {e}", self.spill_path.display()));
        }
        self.buffer = Vec::new();
        self.file = Some(file);
    }

    fn fail(&mut self, why: String) {
        tracing::warn!(kind = self.kind.as_str(), error = %why, "artifact no longer kept");
        self.failed = Some(why);
    }

    /// The artifact to store, or `None` when nothing was written.
    pub(crate) async fn finish(mut self) -> Option<NewArtifact> {
        if self.size == 0 {
            return None;
        }
        let body = match self.file.take() {
            Some(mut file) => {
                let synced = match file.flush().await {
                    Ok(()) => file.get_mut().sync_all().await,
                    Err(e) => Err(e),
                };
                if let Err(e) = synced {
                    self.fail(format!("syncing {}: {e}", self.spill_path.display()));
                }
                ArtifactBody::File(self.spill_path.clone())
            }
            None => ArtifactBody::Inline(std::mem::take(&mut self.buffer)),
        };
        Some(NewArtifact {
            kind: self.kind,
            size: self.size,
            capped: self.size > self.kept || self.failed.is_some(),
            body,
        })
    }
}

/// `artifact` as every instance sharing the store can read it: a spilled file (on this
/// instance's disk only) is read into the artifact and removed. Transient memory up to the
/// artifact's cap (`tasks.artifact_max_bytes`), once, when the run ends; the spilled file stays
/// if it cannot be read.
pub(crate) async fn inline_for_peers(mut artifact: NewArtifact) -> NewArtifact {
    if let ArtifactBody::File(path) = &artifact.body {
        match tokio::fs::read(path).await {
            Ok(bytes) => {
                let path = path.clone();
                artifact.body = ArtifactBody::Inline(bytes);
                if let Err(e) = tokio::fs::remove_file(&path).await {
                    tracing::debug!(error = %e, path = %path.display(), "could not remove a spilled artifact");
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, path = %path.display(), "a spilled artifact stays on this instance only");
            }
        }
    }
    artifact
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn small_outputs_stay_inline() {
        let dir = tempfile::tempdir().unwrap();
        let mut sink = ArtifactSink::new(ArtifactKind::Output, dir.path().join("o"), 100, 1000);
        sink.push_line("hello").await;
        let art = sink.finish().await.unwrap();
        assert_eq!(art.body, ArtifactBody::Inline(b"hello\n".to_vec()));
        assert_eq!((art.size, art.capped), (6, false));
    }

    #[tokio::test]
    async fn large_outputs_spill_whole_and_caps_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/out.txt");
        let mut sink = ArtifactSink::new(ArtifactKind::Log, path.clone(), 10, 30);
        for i in 0..10 {
            sink.push_line(&format!("line{i}")).await;
        }
        let art = sink.finish().await.unwrap();
        assert_eq!(art.body, ArtifactBody::File(path.clone()));
        assert_eq!(art.size, 60);
        assert!(art.capped);
        assert_eq!(std::fs::read(&path).unwrap().len(), 30);
    }

    #[tokio::test]
    async fn a_spilled_artifact_is_read_in_for_other_instances() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.txt");
        let mut sink = ArtifactSink::new(ArtifactKind::Output, path.clone(), 4, 1000);
        sink.push_line("spilled whole").await;
        let art = inline_for_peers(sink.finish().await.unwrap()).await;
        assert_eq!(art.body, ArtifactBody::Inline(b"spilled whole\n".to_vec()));
        assert_eq!((art.size, art.capped), (14, false));
        assert!(!path.exists(), "the spilled file is removed");
        let gone = NewArtifact {
            body: ArtifactBody::File(dir.path().join("missing")),
            ..art
        };
        let kept = inline_for_peers(gone.clone()).await;
        assert_eq!(kept, gone, "unreadable: it stays where it is");
    }

    // A full disk (here: a spill directory that cannot be made) must not end the run: the
    // artifact is what was kept, marked capped.
    #[tokio::test]
    async fn an_unwritable_spill_file_keeps_what_it_has_and_says_capped() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("file"), "").unwrap();
        let mut sink = ArtifactSink::new(
            ArtifactKind::Output,
            dir.path().join("file/out.txt"),
            8,
            100,
        );
        sink.push_line("1234").await;
        sink.push_line("5678").await;
        sink.push_line("9").await;
        let art = sink.finish().await.unwrap();
        assert_eq!(art.body, ArtifactBody::Inline(b"1234\n".to_vec()));
        assert_eq!((art.size, art.capped), (12, true));
    }

    // The buffered spill file defers a full disk's error to `finish`: still capped, never
    // reported as whole. /dev/full answers every write with ENOSPC.
    #[tokio::test]
    async fn a_full_disk_found_at_the_end_still_says_capped() {
        let mut sink = ArtifactSink::new(ArtifactKind::Output, "/dev/full".into(), 4, 1000);
        sink.push_line("spilled").await;
        sink.push_line("more").await;
        let art = sink.finish().await.unwrap();
        assert_eq!((art.size, art.capped), (13, true));
    }

    #[tokio::test]
    async fn nothing_written_means_no_artifact() {
        let dir = tempfile::tempdir().unwrap();
        let sink = ArtifactSink::new(ArtifactKind::Diff, dir.path().join("d"), 10, 30);
        assert!(sink.finish().await.is_none());
    }
}

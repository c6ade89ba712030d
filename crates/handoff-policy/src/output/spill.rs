//! The full text of a cut output, kept in `<data_dir>/tool-output/tool_<id>` (mode 0600) so
//! the caller can read the rest with an offset and a limit; files older than the retention
//! are removed, and nothing else in the directory is touched.

use std::{
    fs,
    io::{self, Read, Seek, SeekFrom, Write},
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use serde::Serialize;

/// Why a spill file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// Not an id this directory hands out.
    #[error("`{0}` is not a tool output id (expected tool_ followed by 32 hex digits)")]
    BadId(String),
    /// No such file (never written, or cleaned up).
    #[error("no tool output {0} (outputs are kept for a limited time)")]
    Missing(String),
    /// The file system failed.
    #[error("tool output {path}: {source}")]
    Io {
        /// The file or directory.
        path: String,
        /// The cause.
        source: io::Error,
    },
}

/// A written spill file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpillFile {
    /// The id to read it back by (`tool_<32 hex>`).
    pub id: String,
    /// Where it is.
    pub path: PathBuf,
}

/// One page read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SpillPage {
    /// The text from `offset` (cut back to a code point boundary).
    pub text: String,
    /// The byte offset read from.
    pub offset: u64,
    /// The file's total size.
    pub total_bytes: u64,
    /// Where the next page starts, when there is more.
    pub next_offset: Option<u64>,
}

/// The spill directory.
#[derive(Debug, Clone)]
pub struct SpillDir {
    dir: PathBuf,
}

impl SpillDir {
    /// The directory `<data_dir>/tool-output`.
    pub fn under(data_dir: &Path) -> Self {
        Self {
            dir: data_dir.join("tool-output"),
        }
    }

    /// The directory itself.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    fn io(&self, path: &Path) -> impl FnOnce(io::Error) -> SpillError {
        let path = path.display().to_string();
        move |source| SpillError::Io { path, source }
    }

    /// Writes `text` to a new private file.
    pub fn write(&self, text: &str) -> Result<SpillFile, SpillError> {
        fs::create_dir_all(&self.dir).map_err(self.io(&self.dir))?;
        let id = format!("tool_{}", uuid::Uuid::new_v4().simple());
        let path = self.dir.join(&id);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(self.io(&path))?;
        file.write_all(text.as_bytes()).map_err(self.io(&path))?;
        Ok(SpillFile { id, path })
    }

    /// Reads up to `limit` bytes and `max_lines` lines from `offset` of the output `id`.
    pub fn read(
        &self,
        id: &str,
        offset: u64,
        limit: usize,
        max_lines: usize,
    ) -> Result<SpillPage, SpillError> {
        let valid = id
            .strip_prefix("tool_")
            .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
        if !valid {
            return Err(SpillError::BadId(id.to_owned()));
        }
        let path = self.dir.join(id);
        let mut file = match fs::File::open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Err(SpillError::Missing(id.to_owned()));
            }
            Err(e) => return Err(self.io(&path)(e)),
        };
        let total_bytes = file.metadata().map_err(self.io(&path))?.len();
        let offset = offset.min(total_bytes);
        file.seek(SeekFrom::Start(offset)).map_err(self.io(&path))?;
        let mut bytes = Vec::with_capacity(limit.min(1 << 20));
        file.take(limit as u64)
            .read_to_end(&mut bytes)
            .map_err(self.io(&path))?;
        // Never hand out half a code point: cut back to the last whole one.
        let text = match String::from_utf8(bytes) {
            Ok(text) => text,
            Err(e) => {
                let valid = e.utf8_error().valid_up_to();
                let mut bytes = e.into_bytes();
                bytes.truncate(valid);
                String::from_utf8_lossy(&bytes).into_owned()
            }
        };
        let mut text = text;
        if let Some((cut, _)) = text.match_indices('\n').nth(max_lines.saturating_sub(1))
            && max_lines > 0
        {
            text.truncate(cut + 1);
        }
        let end = offset + text.len() as u64;
        Ok(SpillPage {
            text,
            offset,
            total_bytes,
            next_offset: (end < total_bytes).then_some(end),
        })
    }

    /// Removes `tool_*` files last written before `now - max_age`; returns how many.
    pub fn cleanup(&self, now: SystemTime, max_age: Duration) -> Result<usize, SpillError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(self.io(&self.dir)(e)),
        };
        let cutoff = now.checked_sub(max_age).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut removed = 0;
        for entry in entries.flatten() {
            let is_spill = entry
                .file_name()
                .to_str()
                .is_some_and(|n| n.starts_with("tool_"));
            let Ok(meta) = entry.metadata() else { continue };
            if !is_spill || !meta.is_file() {
                continue;
            }
            if meta.modified().is_ok_and(|at| at < cutoff) && fs::remove_file(entry.path()).is_ok()
            {
                removed += 1;
            }
        }
        Ok(removed)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn spilled_text_is_private_and_reads_back_in_pages() {
        let data = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(data.path());
        let file = spill.write("héllo world").unwrap();
        assert_eq!(file.path.parent().unwrap(), data.path().join("tool-output"));
        let mode = fs::metadata(&file.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let first = spill.read(&file.id, 0, 2, 100).unwrap();
        // "h" + half of "é" → only "h".
        assert_eq!(first.text, "h");
        assert_eq!(first.next_offset, Some(1));
        let rest = spill.read(&file.id, 1, 100, 100).unwrap();
        assert_eq!(rest.text, "éllo world");
        assert_eq!(rest.next_offset, None);
        assert_eq!(rest.total_bytes, 12);
    }

    #[test]
    fn pages_end_at_the_line_limit() {
        let data = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(data.path());
        let file = spill.write("a\nb\nc\nd\n").unwrap();
        let page = spill.read(&file.id, 0, 100, 2).unwrap();
        assert_eq!(page.text, "a\nb\n");
        assert_eq!(page.next_offset, Some(4));
        let rest = spill.read(&file.id, 4, 100, 2).unwrap();
        assert_eq!(rest.text, "c\nd\n");
        assert_eq!(rest.next_offset, None);
    }

    #[test]
    fn bad_and_missing_ids_are_told_apart() {
        let data = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(data.path());
        assert!(matches!(
            spill.read("../etc/passwd", 0, 10, 10),
            Err(SpillError::BadId(_))
        ));
        let missing = format!("tool_{}", "0".repeat(32));
        assert!(matches!(
            spill.read(&missing, 0, 10, 10),
            Err(SpillError::Missing(_))
        ));
    }

    #[test]
    fn cleanup_removes_only_old_spill_files() {
        let data = tempfile::tempdir().unwrap();
        let spill = SpillDir::under(data.path());
        let old = spill.write("old").unwrap();
        let other = spill.path().join("keep.txt");
        fs::write(&other, "not ours").unwrap();
        let week = Duration::from_secs(7 * 24 * 3600);
        // Written just now: a clock six days ahead keeps it, eight days ahead removes it.
        let now = SystemTime::now();
        assert_eq!(
            spill
                .cleanup(now + Duration::from_secs(6 * 24 * 3600), week)
                .unwrap(),
            0
        );
        assert!(old.path.exists());
        assert_eq!(
            spill
                .cleanup(now + Duration::from_secs(8 * 24 * 3600), week)
                .unwrap(),
            1
        );
        assert!(!old.path.exists());
        assert!(
            other.exists(),
            "files that are not tool_* are never removed"
        );
    }
}

//! The full text of a cut output, kept in `<data_dir>/tool-output/<owner>/tool_<id>` (mode
//! 0600, directories 0700) so the caller can read the rest with an offset and a limit. Each
//! output is bound to the principal whose call produced it: its owner directory is
//! `agent-<id>`, `operator-<name>` or `anonymous`, an agent reads only its own, and another
//! agent's id reads exactly like an unknown one. Files older than the retention are removed,
//! and nothing else in the directory is touched.

use std::{
    fs,
    io::{self, Read, Seek, SeekFrom, Write},
    os::unix::fs::{DirBuilderExt, OpenOptionsExt},
    path::{Path, PathBuf},
    time::{Duration, SystemTime},
};

use handoff_task::Principal;
use serde::Serialize;

/// Why a spill file could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SpillError {
    /// Not an id this directory hands out.
    #[error("`{0}` is not a tool output id (expected tool_ followed by 32 hex digits)")]
    BadId(String),
    /// No such file for this reader (never written, cleaned up, or another agent's).
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

/// The spill directory, seen as one owner: it writes and reads that owner's outputs.
#[derive(Debug, Clone)]
pub struct SpillDir {
    root: PathBuf,
    dir: PathBuf,
}

impl SpillDir {
    /// The directory `<data_dir>/tool-output`, as a caller with no identity.
    pub fn under(data_dir: &Path) -> Self {
        let root = data_dir.join("tool-output");
        Self {
            dir: root.join(owner_dir(None)),
            root,
        }
    }

    /// The same directory as `owner` (`None`: a caller with no identity).
    pub fn owned_by(&self, owner: Option<&Principal>) -> Self {
        Self {
            root: self.root.clone(),
            dir: self.root.join(owner_dir(owner)),
        }
    }

    /// Where this owner's outputs are.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directory holding every owner's outputs.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn io(path: &Path) -> impl FnOnce(io::Error) -> SpillError {
        let path = path.display().to_string();
        move |source| SpillError::Io { path, source }
    }

    /// Writes `text` to a new private file of this owner.
    pub fn write(&self, text: &str) -> Result<SpillFile, SpillError> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(Self::io(&self.dir))?;
        let id = format!("tool_{}", uuid::Uuid::new_v4().simple());
        let path = self.dir.join(&id);
        let mut file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(Self::io(&path))?;
        file.write_all(text.as_bytes()).map_err(Self::io(&path))?;
        Ok(SpillFile { id, path })
    }

    /// Reads up to `limit` bytes and `max_lines` lines from `offset` of this owner's output
    /// `id`; any other owner's output is [`SpillError::Missing`], as an unknown id is.
    pub fn read(
        &self,
        id: &str,
        offset: u64,
        limit: usize,
        max_lines: usize,
    ) -> Result<SpillPage, SpillError> {
        check_id(id)?;
        read_page(&self.dir.join(id), id, offset, limit, max_lines)
    }

    /// Like [`SpillDir::read`], for an operator: the output `id` of any owner (and the
    /// unbound files written before outputs had owners).
    pub fn read_any(
        &self,
        id: &str,
        offset: u64,
        limit: usize,
        max_lines: usize,
    ) -> Result<SpillPage, SpillError> {
        check_id(id)?;
        let legacy = self.root.join(id);
        let found = owner_dirs(&self.root)?
            .into_iter()
            .map(|dir| dir.join(id))
            .chain(std::iter::once(legacy))
            .find(|path| path.is_file());
        match found {
            Some(path) => read_page(&path, id, offset, limit, max_lines),
            None => Err(SpillError::Missing(id.to_owned())),
        }
    }

    /// Removes every owner's `tool_*` files last written before `now - max_age`; returns
    /// how many.
    pub fn cleanup(&self, now: SystemTime, max_age: Duration) -> Result<usize, SpillError> {
        let cutoff = now.checked_sub(max_age).unwrap_or(SystemTime::UNIX_EPOCH);
        let mut removed = remove_old(&self.root, cutoff)?;
        for dir in owner_dirs(&self.root)? {
            removed += remove_old(&dir, cutoff)?;
        }
        Ok(removed)
    }
}

/// An owner's directory name: the id's characters (`[A-Za-z0-9_-]`) are safe in a path, and
/// the prefix keeps an operator and an agent of the same name apart.
fn owner_dir(owner: Option<&Principal>) -> String {
    match owner {
        Some(Principal::Agent(id)) => format!("agent-{id}"),
        Some(Principal::Operator(name)) => format!("operator-{name}"),
        None => "anonymous".to_owned(),
    }
}

fn check_id(id: &str) -> Result<(), SpillError> {
    let valid = id
        .strip_prefix("tool_")
        .is_some_and(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()));
    if valid {
        Ok(())
    } else {
        Err(SpillError::BadId(id.to_owned()))
    }
}

/// The owner directories under `root` (real directories only, never followed links).
fn owner_dirs(root: &Path) -> Result<Vec<PathBuf>, SpillError> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(SpillDir::io(root)(e)),
    };
    Ok(entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect())
}

/// Removes the `tool_*` files in `dir` last written before `cutoff`.
fn remove_old(dir: &Path, cutoff: SystemTime) -> Result<usize, SpillError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(SpillDir::io(dir)(e)),
    };
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
        if meta.modified().is_ok_and(|at| at < cutoff) && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

fn read_page(
    path: &Path,
    id: &str,
    offset: u64,
    limit: usize,
    max_lines: usize,
) -> Result<SpillPage, SpillError> {
    let mut file = match fs::File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SpillError::Missing(id.to_owned()));
        }
        Err(e) => return Err(SpillDir::io(path)(e)),
    };
    let total_bytes = file.metadata().map_err(SpillDir::io(path))?.len();
    let offset = offset.min(total_bytes);
    file.seek(SeekFrom::Start(offset))
        .map_err(SpillDir::io(path))?;
    let mut bytes = Vec::with_capacity(limit.min(1 << 20));
    file.take(limit as u64)
        .read_to_end(&mut bytes)
        .map_err(SpillDir::io(path))?;
    // Never hand out half a code point: cut back to the last whole one.
    let mut text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let valid = e.utf8_error().valid_up_to();
            let mut bytes = e.into_bytes();
            bytes.truncate(valid);
            String::from_utf8_lossy(&bytes).into_owned()
        }
    };
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
        assert_eq!(
            file.path.parent().unwrap(),
            data.path().join("tool-output/anonymous")
        );
        let mode = fs::metadata(&file.path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir = fs::metadata(spill.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(dir, 0o700);
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

    fn agent(name: &str) -> Principal {
        Principal::Agent(handoff_task::AgentId::parse(name).unwrap())
    }

    #[test]
    fn an_output_reads_back_only_for_its_owner_and_operators() {
        let data = tempfile::tempdir().unwrap();
        let root = SpillDir::under(data.path());
        let a = root.owned_by(Some(&agent("agent-a")));
        let b = root.owned_by(Some(&agent("agent-b")));
        let file = a.write("a's secret output").unwrap();
        assert_eq!(
            a.read(&file.id, 0, 100, 100).unwrap().text,
            "a's secret output"
        );
        // Another agent, the same name as an operator, and no identity: not found, worded
        // exactly as an id that was never handed out.
        let unknown = format!("tool_{}", "0".repeat(32));
        let strangers = [
            b,
            root.owned_by(Some(&Principal::Operator(
                handoff_task::AgentId::parse("agent-a").unwrap(),
            ))),
            root.clone(),
        ];
        for stranger in strangers {
            let foreign = stranger.read(&file.id, 0, 100, 100).unwrap_err();
            let never = stranger.read(&unknown, 0, 100, 100).unwrap_err();
            assert!(matches!(foreign, SpillError::Missing(_)), "{foreign}");
            assert_eq!(
                foreign.to_string().replace(&file.id, "ID"),
                never.to_string().replace(&unknown, "ID")
            );
        }
        // An operator reads any owner's output.
        let page = root.read_any(&file.id, 0, 100, 100).unwrap();
        assert_eq!(page.text, "a's secret output");
        assert!(matches!(
            root.read_any(&unknown, 0, 100, 100),
            Err(SpillError::Missing(_))
        ));
        assert!(matches!(
            root.read_any("tool_../x", 0, 100, 100),
            Err(SpillError::BadId(_))
        ));
    }

    #[test]
    fn files_written_before_owners_are_for_operators_only() {
        let data = tempfile::tempdir().unwrap();
        let root = SpillDir::under(data.path());
        let id = format!("tool_{}", "a".repeat(32));
        fs::create_dir_all(root.root()).unwrap();
        fs::write(root.root().join(&id), "unbound").unwrap();
        let a = root.owned_by(Some(&agent("agent-a")));
        assert!(matches!(
            a.read(&id, 0, 10, 10),
            Err(SpillError::Missing(_))
        ));
        assert_eq!(root.read_any(&id, 0, 10, 10).unwrap().text, "unbound");
        let later = SystemTime::now() + Duration::from_secs(8 * 24 * 3600);
        a.write("owned").unwrap();
        assert_eq!(
            root.cleanup(later, Duration::from_secs(7 * 24 * 3600))
                .unwrap(),
            2
        );
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

//! One Handoff per data dir. Start-up recovery takes over every task the store says is
//! running — it kills their processes and fails them — so a second instance on a live data dir
//! would wreck the first one's work before it even noticed its port was taken.

use std::{
    fs::{File, OpenOptions, TryLockError},
    io::{Read, Write},
    path::{Path, PathBuf},
};

/// The lock file inside the data dir; it holds the holder's pid.
pub const LOCK_FILE: &str = "handoff.lock";

/// Why the data dir could not be locked.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another live process holds it.
    #[error(
        "the data dir {} is in use by another Handoff ({}); stop that process, or give this one \
         its own data dir with HANDOFF_DATA_DIR",
        dir.display(),
        holder(*pid)
    )]
    Held {
        /// The data dir.
        dir: PathBuf,
        /// The holder's pid, when it had written it yet.
        pid: Option<u32>,
    },
    /// The lock file could not be created, locked or written.
    #[error("locking the data dir with {}: {source}", path.display())]
    Io {
        /// The lock file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

fn holder(pid: Option<u32>) -> String {
    pid.map_or_else(|| "pid unknown".to_owned(), |pid| format!("pid {pid}"))
}

/// An exclusive lock on a data dir, held until dropped (or the process ends, however it ends).
#[derive(Debug)]
pub struct DataDirLock {
    // Closing the file releases the lock; std opens it close-on-exec, so executors started
    // later never inherit it and cannot keep it past this process.
    _file: File,
    path: PathBuf,
}

impl DataDirLock {
    /// Creates `data_dir` if needed and locks it, or says who holds it.
    pub fn acquire(data_dir: &Path) -> Result<Self, LockError> {
        let dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_owned());
        let path = dir.join(LOCK_FILE);
        let io = |source| LockError::Io {
            path: path.clone(),
            source,
        };
        std::fs::create_dir_all(&dir).map_err(io)?;
        // Not truncated on open: the file names the holder until the lock is ours.
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                return Err(LockError::Held {
                    pid: read_pid(&mut file),
                    dir,
                });
            }
            Err(TryLockError::Error(source)) => return Err(io(source)),
        }
        file.set_len(0).map_err(io)?;
        writeln!(file, "{}", std::process::id()).map_err(io)?;
        Ok(Self { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// The pid a holder wrote; `None` when it has not written it yet.
fn read_pid(file: &mut File) -> Option<u32> {
    let mut text = String::new();
    file.read_to_string(&mut text).ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_second_acquisition_fails_naming_the_holder_and_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let held = DataDirLock::acquire(&data).unwrap();
        assert_eq!(
            std::fs::read_to_string(held.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
        let err = DataDirLock::acquire(&data).unwrap_err();
        let LockError::Held { pid, .. } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(*pid, Some(std::process::id()));
        let text = err.to_string();
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        assert!(text.contains(&data.display().to_string()), "{text}");
        assert!(text.contains("HANDOFF_DATA_DIR"), "{text}");
    }

    #[test]
    fn dropping_the_lock_releases_it() {
        let dir = tempfile::tempdir().unwrap();
        drop(DataDirLock::acquire(dir.path()).unwrap());
        let again = DataDirLock::acquire(dir.path()).unwrap();
        assert_eq!(
            std::fs::read_to_string(again.path()).unwrap(),
            format!("{}\n", std::process::id())
        );
    }

    #[test]
    fn a_holder_that_wrote_no_pid_yet_is_still_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::create(dir.path().join(LOCK_FILE)).unwrap();
        file.try_lock().unwrap();
        let err = DataDirLock::acquire(dir.path()).unwrap_err();
        assert!(matches!(err, LockError::Held { pid: None, .. }), "{err:?}");
        assert!(err.to_string().contains("pid unknown"), "{err}");
    }
}

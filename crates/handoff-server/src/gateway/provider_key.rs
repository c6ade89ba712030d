//! A provider's key as the gateway sends it: the variable's value read at start, or the key
//! file's, re-read when the file changes so that a rotated key (a secrets agent rewriting the
//! file) takes effect at the next call without a restart. In memory: the key last read and the
//! file's modification time then.

use std::{
    path::PathBuf,
    sync::{Mutex, PoisonError},
    time::SystemTime,
};

use handoff_config::{KeySource, ModelProvider, Secret};

/// One provider's key.
pub(crate) enum ProviderKey {
    /// Read once (from the environment at start, or none).
    Fixed(Option<Secret>),
    /// Read from a file, again whenever its modification time changes.
    File {
        /// The file.
        path: PathBuf,
        /// Its modification time when last read, and the key it held.
        last: Mutex<(Option<SystemTime>, Option<Secret>)>,
    },
}

impl ProviderKey {
    /// The key of `provider`, as its config loaded it.
    pub(crate) fn new(provider: &ModelProvider) -> Self {
        match &provider.key_source {
            KeySource::Env(_) => ProviderKey::Fixed(provider.key.clone()),
            KeySource::File(path) => ProviderKey::File {
                last: Mutex::new((modified(path), provider.key.clone())),
                path: path.clone(),
            },
        }
    }

    /// The key to send now. A key file that changed is read again; one that cannot be read
    /// (mid-rewrite, or made readable to others) leaves the last good key in use.
    pub(crate) fn current(&self) -> Option<Secret> {
        let (path, last) = match self {
            ProviderKey::Fixed(key) => return key.clone(),
            ProviderKey::File { path, last } => (path, last),
        };
        let now = modified(path);
        let mut last = last.lock().unwrap_or_else(PoisonError::into_inner);
        if now != last.0 {
            match handoff_config::read_key_file(path) {
                Ok(key) => *last = (now, Some(key)),
                Err(why) => tracing::warn!(
                    file = %path.display(),
                    "model gateway: the provider's key file changed but {why}; the last key stays in use"
                ),
            }
        }
        last.1.clone()
    }
}

/// When `path` was last modified, if it can be read.
fn modified(path: &std::path::Path) -> Option<SystemTime> {
    std::fs::metadata(path).and_then(|m| m.modified()).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn write(path: &std::path::Path, key: &str, mode: u32) {
        std::fs::write(path, key).unwrap();
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    #[test]
    fn a_rewritten_key_file_is_read_again_and_a_bad_rewrite_keeps_the_last_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        write(&path, "sk-one", 0o600);
        let provider = ModelProvider {
            name: "p".into(),
            url: "http://127.0.0.1:9".into(),
            wire: handoff_config::ModelWire::OpenAi,
            key_source: KeySource::File(path.clone()),
            key: Some(Secret::new("sk-one")),
            model: None,
            price: None,
        };
        let key = ProviderKey::new(&provider);
        assert_eq!(key.current().unwrap().expose(), "sk-one");
        // A later modification time, as a rewrite a second later would give.
        let later = SystemTime::now() + std::time::Duration::from_secs(5);
        write(&path, "sk-two\n", 0o600);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later)
            .unwrap();
        assert_eq!(key.current().unwrap().expose(), "sk-two");
        write(&path, "sk-three", 0o644);
        std::fs::File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_modified(later + std::time::Duration::from_secs(5))
            .unwrap();
        assert_eq!(
            key.current().unwrap().expose(),
            "sk-two",
            "not from a file others read"
        );
    }
}

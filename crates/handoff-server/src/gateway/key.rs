//! The gateway key: 32 random bytes kept in `<data_dir>/gateway.key` (mode 0600), made at the
//! first start. Durable so that a run re-attached after a restart keeps a working token.

use std::{io::Write, os::unix::fs::OpenOptionsExt, path::Path};

use handoff_config::Secret;

/// The key in `data_dir`, made there when missing.
pub(crate) fn load_or_create(data_dir: &Path) -> std::io::Result<Secret> {
    let path = data_dir.join("gateway.key");
    match std::fs::read_to_string(&path) {
        Ok(text) if text.trim().len() >= 32 => return Ok(Secret::new(text.trim())),
        Ok(_) => {
            return Err(std::io::Error::other(format!(
                "{} is too short to be a gateway key; remove it to make a new one",
                path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let key = crate::dashboard::random_token()
        .ok_or_else(|| std::io::Error::other("the system gave no randomness for a key"))?;
    std::fs::create_dir_all(data_dir)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(key.as_bytes())?;
    file.sync_all()?;
    Ok(Secret::new(key))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn the_key_is_made_once_private_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let first = load_or_create(dir.path()).unwrap();
        assert_eq!(first.expose().len(), 64);
        let mode = std::fs::metadata(dir.path().join("gateway.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(load_or_create(dir.path()).unwrap(), first);
        std::fs::write(dir.path().join("gateway.key"), "short").unwrap();
        assert!(load_or_create(dir.path()).is_err());
    }
}

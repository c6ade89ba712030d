//! Running git on a task directory with Handoff's private git directory.

use std::{ffi::OsStr, path::Path};

/// Runs git on `workdir` with the private `git_dir`, feeding `stdin`; returns stdout or git's
/// own message. Dropping the future kills git (a diff abandoned for time or a cancel).
pub(super) async fn git_bytes(
    git_dir: &Path,
    workdir: &Path,
    args: &[&OsStr],
    stdin: Option<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    let mut all: Vec<&OsStr> = vec![
        "--git-dir".as_ref(),
        git_dir.as_os_str(),
        "--work-tree".as_ref(),
        workdir.as_os_str(),
    ];
    // Our identity and defaults, whatever the user's git config says.
    for setting in [
        "user.name=handoff",
        "user.email=handoff@localhost",
        "commit.gpgsign=false",
        "core.autocrlf=false",
        "core.quotepath=false",
    ] {
        all.extend(["-c".as_ref(), OsStr::new(setting)]);
    }
    all.extend_from_slice(args);
    let first = args
        .first()
        .map_or(String::new(), |a| a.to_string_lossy().into_owned());
    let env = [("GIT_CONFIG_NOSYSTEM", "1")];
    crate::git_process::run(None, &all, &env, stdin, &first).await
}

/// [`git_bytes`] without input, as text.
pub(super) async fn git(git_dir: &Path, workdir: &Path, args: &[&OsStr]) -> Result<String, String> {
    let out = git_bytes(git_dir, workdir, args, None).await?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The NUL-separated names git printed (`-z`), without a directory's trailing slash (a
/// nested repository is listed as `dir/`).
pub(super) fn names(out: &[u8]) -> Vec<Vec<u8>> {
    out.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| n.strip_suffix(b"/").unwrap_or(n).to_vec())
        .collect()
}

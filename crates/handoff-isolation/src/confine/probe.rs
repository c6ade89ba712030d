//! Whether bubblewrap can build a sandbox on this host.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::{Duration, Instant},
};

/// Runs a minimal sandbox; the bubblewrap version when it works, the reason when not.
pub fn bwrap_works(bwrap: &Path) -> Result<String, String> {
    let status = run(Command::new(bwrap).args([
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--unshare-pid",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--",
        "true",
    ]))?;
    if !status.0 {
        return Err(format!(
            "bubblewrap cannot build a sandbox here: {}",
            status.1.trim()
        ));
    }
    let version = run(Command::new(bwrap).arg("--version"))?;
    Ok(version.1.trim().to_owned())
}

/// Runs `command` for at most 5 s: (success, stdout or stderr).
fn run(command: &mut Command) -> Result<(bool, String), String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("bubblewrap: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("bubblewrap hung".to_owned());
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = if output.status.success() {
        output.stdout
    } else {
        output.stderr
    };
    Ok((
        output.status.success(),
        String::from_utf8_lossy(&text).into_owned(),
    ))
}

//! Probes of the host's tools: whether bubblewrap can build the sandbox Handoff uses, and a
//! bounded run of a command for the other probes.

use std::{
    path::Path,
    process::{Command, Output, Stdio},
    time::{Duration, Instant},
};

use super::{BwrapSpec, bwrap_args};
use crate::NetworkMode;

/// How long one probe may take.
const PROBE: Duration = Duration::from_secs(5);

/// Runs the sandbox Handoff would build (with the temp dir as task directory); the bubblewrap
/// version when it works, the reason when not.
pub fn bwrap_works(bwrap: &Path) -> Result<String, String> {
    let args = bwrap_args(&BwrapSpec {
        bwrap: bwrap.to_owned(),
        workdir: Some(std::env::temp_dir())
            .filter(|dir| dir.is_dir())
            .unwrap_or_else(|| "/".into()),
        network: NetworkMode::Shared,
        writable: Vec::new(),
        hide: Vec::new(),
        expose: Vec::new(),
        argv: vec!["true".into()],
    });
    let (program, args) = args.split_first().ok_or("no bubblewrap command")?;
    let sandbox =
        output_within(Command::new(program).args(args)).map_err(|e| format!("bubblewrap: {e}"))?;
    if !sandbox.status.success() {
        return Err(format!(
            "bubblewrap cannot build a sandbox here: {}",
            String::from_utf8_lossy(&sandbox.stderr).trim()
        ));
    }
    let version = output_within(Command::new(bwrap).arg("--version"))
        .map_err(|e| format!("bubblewrap: {e}"))?;
    Ok(String::from_utf8_lossy(&version.stdout).trim().to_owned())
}

/// Runs `command` (stdin closed, output captured) for at most 5 s.
pub(crate) fn output_within(command: &mut Command) -> Result<Output, String> {
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + PROBE;
    // Probes run before the server is up and usually end within milliseconds: look soon and
    // often at first, so start-up does not wait a whole polling gap after each probe.
    let mut gap = Duration::from_micros(200);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().map_err(|e| e.to_string()),
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(gap);
                gap = (gap * 2).min(Duration::from_millis(5));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("no answer within {PROBE:?}"));
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}

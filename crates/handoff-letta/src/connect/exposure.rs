//! Handoff tokens in a Letta server's environment. Letta's local tool sandbox hands the
//! server's whole environment to every tool it runs (measured on Letta 0.16.8), so a token
//! there is readable by every agent's tools. Connect can only look on this host: at the
//! processes running `letta server` whose environment it may read; a Letta elsewhere (another
//! host, a container) stays unseen.

use std::path::Path;

/// One `letta server` process carrying Handoff tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Exposure {
    /// Its pid.
    pub(crate) pid: u32,
    /// The variables holding them, by name (never their values).
    pub(crate) variables: Vec<String>,
}

/// Every `letta server` process under `proc_root` (`/proc`) whose environment holds a
/// `HANDOFF_*TOKEN*` variable or one of `tokens` (this Handoff's token values).
pub(crate) fn exposures(proc_root: &Path, tokens: &[&str]) -> Vec<Exposure> {
    let Ok(entries) = std::fs::read_dir(proc_root) else {
        return Vec::new();
    };
    let mut found: Vec<Exposure> = entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let dir = proc_root.join(pid.to_string());
            let cmdline = std::fs::read(dir.join("cmdline")).ok()?;
            if !is_letta_server(&cmdline) {
                return None;
            }
            // Another user's process: not readable, and not ours to judge.
            let environ = std::fs::read(dir.join("environ")).ok()?;
            let variables = token_variables(&environ, tokens);
            (!variables.is_empty()).then_some(Exposure { pid, variables })
        })
        .collect();
    found.sort_by_key(|e| e.pid);
    found
}

/// Whether a NUL-separated command line runs `letta server` (`…/letta server`, also behind
/// an interpreter).
fn is_letta_server(cmdline: &[u8]) -> bool {
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    args.windows(2).any(|pair| {
        let program = pair[0].rsplit(|b| *b == b'/').next().unwrap_or_default();
        program == b"letta" && pair[1] == b"server"
    })
}

/// The names of the variables in a NUL-separated environment that hold a Handoff token.
fn token_variables(environ: &[u8], tokens: &[&str]) -> Vec<String> {
    environ
        .split(|b| *b == 0)
        .filter_map(|pair| {
            let text = String::from_utf8_lossy(pair);
            let (name, value) = text.split_once('=')?;
            let named = name.starts_with("HANDOFF_") && name.contains("TOKEN");
            let valued = !value.is_empty() && tokens.contains(&value);
            (named || valued).then(|| name.to_owned())
        })
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::process::{Command, Stdio};

    use super::*;

    #[test]
    fn a_letta_server_with_handoff_tokens_is_found_by_name_or_value() {
        let proc_root = tempfile::tempdir().unwrap();
        let process = |pid: u32, cmdline: &[&str], environ: &[&str]| {
            let dir = proc_root.path().join(pid.to_string());
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("cmdline"), cmdline.join("\0")).unwrap();
            std::fs::write(dir.join("environ"), environ.join("\0")).unwrap();
        };
        let letta = [
            "/venv/bin/python",
            "/venv/bin/letta",
            "server",
            "--port",
            "8283",
        ];
        process(10, &letta, &["PATH=/bin", "HANDOFF_AUTH_TOKEN=secret-1"]);
        process(11, &letta, &["PATH=/bin", "MY_KEY=agent-token-2"]);
        process(12, &letta, &["PATH=/bin", "HANDOFF_URL=http://x"]);
        process(13, &["bash", "-c", "letta"], &["HANDOFF_TOKEN=secret-1"]);
        std::fs::create_dir_all(proc_root.path().join("self")).unwrap();
        let found = exposures(proc_root.path(), &["agent-token-2"]);
        assert_eq!(
            found,
            [
                Exposure {
                    pid: 10,
                    variables: vec!["HANDOFF_AUTH_TOKEN".into()]
                },
                Exposure {
                    pid: 11,
                    variables: vec!["MY_KEY".into()]
                },
            ]
        );
    }

    #[test]
    fn a_real_process_of_this_host_is_read_from_proc() {
        // `sh -c CMD letta server`: its command line ends in `letta server`, as Letta's does.
        let mut child = Command::new("sh")
            .args(["-c", "read _", "letta", "server"])
            .env("HANDOFF_AUTH_TOKEN", "exported-where-letta-starts")
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        // Until the child has exec'd, /proc shows the test's own command line: wait for it.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let mine = loop {
            let found = exposures(Path::new("/proc"), &[]);
            if let Some(mine) = found.into_iter().find(|e| e.pid == child.id()) {
                break Some(mine);
            }
            if std::time::Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        drop(child.stdin.take());
        child.wait().unwrap();
        assert_eq!(
            mine.map(|e| e.variables),
            Some(vec!["HANDOFF_AUTH_TOKEN".to_owned()])
        );
    }
}

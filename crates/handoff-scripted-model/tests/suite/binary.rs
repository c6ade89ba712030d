//! The `scripted-model` binary: one readiness line, serves, exits cleanly on SIGTERM.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pretty_assertions::assert_eq;

use super::common::{SCRIPT, client};

#[tokio::test]
async fn prints_its_address_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("script.json");
    let log = dir.path().join("requests.jsonl");
    std::fs::write(&script, SCRIPT).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_scripted-model"))
        .arg("--script")
        .arg(&script)
        .args(["--port", "0", "--log"])
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line
        .trim_end()
        .strip_prefix("scripted-model listening on http://127.0.0.1:")
        .map(|port| format!("http://127.0.0.1:{port}"))
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));

    let models: serde_json::Value = client()
        .get(format!("{url}/v1/models"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(models["data"][0]["id"], "mock-model");

    kill(
        Pid::from_raw(i32::try_from(child.id()).unwrap()),
        Signal::SIGTERM,
    )
    .unwrap();
    let status = tokio::task::spawn_blocking(move || child.wait())
        .await
        .unwrap()
        .unwrap();
    assert!(status.success(), "{status:?}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "", "only one line on stdout");
    assert_eq!(std::fs::read_to_string(&log).unwrap().lines().count(), 1);
}

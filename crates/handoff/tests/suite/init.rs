//! `handoff init`: the commented handoff.toml it writes loads, its provider example resolves,
//! and it never overwrites a file without --force.

use std::{os::unix::fs::PermissionsExt, path::Path, process::Command};

use super::harness::BIN;

/// Runs the binary in `dir` with HOME inside it and no Handoff variables from the caller.
fn handoff(dir: &Path, args: &[&str]) -> std::process::Output {
    let mut command = Command::new(BIN);
    command.args(args).current_dir(dir).env("HOME", dir);
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("HANDOFF_") {
            command.env_remove(name);
        }
    }
    command.output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn init_writes_a_private_file_that_config_loads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("conf").join("handoff.toml");
    std::fs::create_dir(path.parent().unwrap()).unwrap();
    let p = path.to_str().unwrap();
    let out = handoff(dir.path(), &["init", "--path", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(written.contains("[executors.opencode]"), "{written}");

    let out = handoff(dir.path(), &["config", "--config", p]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown = text(&out.stdout);
    // Everything is commented out: every value is the default.
    assert!(shown.contains("server.port"), "{shown}");
    assert!(
        !shown.contains(" in "),
        "a value came from the file: {shown}"
    );
}

#[test]
fn the_uncommented_provider_example_resolves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("handoff.toml");
    assert!(handoff(dir.path(), &["init"]).status.success());
    let mut inside = false;
    let mut edited = String::new();
    for line in std::fs::read_to_string(&path).unwrap().lines() {
        if line.starts_with("# --- Example:") {
            inside = true;
        } else if line == "# --- end of example" {
            inside = false;
        } else if inside {
            edited.push_str(line.strip_prefix("# ").unwrap_or(line));
            edited.push('\n');
            continue;
        }
        edited.push_str(line);
        edited.push('\n');
    }
    std::fs::write(&path, edited).unwrap();
    // ./handoff.toml is read without --config too.
    let out = handoff(dir.path(), &["config", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let settings: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let value = |key: &str| {
        settings
            .iter()
            .find(|s| s["key"] == key)
            .map(|s| (s["value"].clone(), s["source"].clone()))
            .unwrap()
    };
    let (model, source) = value("models.model");
    assert_eq!(model, "qwen2.5-coder:14b");
    assert_eq!(source, "models.model in handoff.toml");
    assert_eq!(value("models.provider_url").0, "http://127.0.0.1:11434/v1");
    assert_eq!(value("evaluator.provider").0, "openai_compatible");
    assert_eq!(value("evaluator.base_url").0, "http://127.0.0.1:11434/v1");
}

#[test]
fn init_keeps_an_existing_file_unless_forced_and_refuses_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("handoff.toml");
    std::fs::write(&path, "[tasks]\nmax_queued = 7\n").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();

    let out = handoff(dir.path(), &["init"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("already exists") && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "[tasks]\nmax_queued = 7\n"
    );

    // A broken existing file does not stop init (it runs before the configuration loads).
    std::fs::write(&path, "not toml [").unwrap();
    let out = handoff(dir.path(), &["init", "--force"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(std::fs::read_to_string(&path).unwrap().contains("[server]"));
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "--force leaves the file private");
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["handoff.toml"], "no temporary file is left");

    let out = handoff(
        dir.path(),
        &["init", "--path", dir.path().to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("is a directory"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn init_with_a_provider_sets_it_and_refuses_bad_flags_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "init",
        "--provider",
        "http://127.0.0.1:9/v1",
        "--model",
        "coder:7b",
        "--key-env",
        "MY_PROVIDER_KEY",
    ];
    let out = handoff(dir.path(), &args);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("coder:7b through Handoff's model gateway"),
        "{}",
        text(&out.stdout)
    );
    let out = handoff(dir.path(), &["config", "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let settings: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    let value = |key: &str| settings.iter().find(|s| s["key"] == key).unwrap()["value"].clone();
    assert_eq!(value("models.provider_url"), "http://127.0.0.1:9/v1");
    assert_eq!(value("models.model"), "coder:7b");
    assert_eq!(value("models.provider_key_env"), "MY_PROVIDER_KEY");
    assert_eq!(value("evaluator.base_url"), "http://127.0.0.1:9/v1");
    assert_eq!(value("evaluator.api_key_env"), "MY_PROVIDER_KEY");

    let other = tempfile::tempdir().unwrap();
    let refusals = [
        (
            vec!["--provider", "ftp://host/v1", "--model", "m"],
            "--provider",
        ),
        (
            vec!["--provider", "http://u:hunter2@host/v1", "--model", "m"],
            "--provider",
        ),
        (
            vec!["--provider", "http://host/v1", "--model", "a b"],
            "--model",
        ),
        (
            vec![
                "--provider",
                "http://host/v1",
                "--model",
                "m",
                "--key-env",
                "HANDOFF_AUTH_TOKEN",
            ],
            "--key-env",
        ),
        (vec!["--provider", "http://host/v1"], "--model"),
        (vec!["--model", "m"], "--provider"),
    ];
    for (flags, named) in refusals {
        let out = handoff(other.path(), &[&["init"], flags.as_slice()].concat());
        let stderr = text(&out.stderr);
        assert_ne!(out.status.code(), Some(0), "{flags:?}");
        assert!(stderr.contains(named), "{flags:?}: {stderr}");
        assert!(!stderr.contains("hunter2"), "{stderr}");
        assert!(
            !other.path().join("handoff.toml").exists(),
            "{flags:?} wrote a file"
        );
    }
}

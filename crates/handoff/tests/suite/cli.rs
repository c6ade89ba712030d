//! The binary's own behaviour: config printing, start-up validation, signals.

use std::{process::Command, time::Duration};

use super::{
    harness::{BIN, start},
    wait::exit_within,
};

#[test]
fn config_prints_effective_values_with_sources_and_masks_secrets() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("handoff.toml"),
        "[tasks]\nmax_queued = 77\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .arg("config")
        .current_dir(dir.path())
        .env("MCP_PORT", "4555")
        .env("HANDOFF_AUTH_TOKEN", "very-secret-token")
        .output()
        .unwrap();
    assert!(output.status.success());
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.contains("server.port"), "{text}");
    assert!(
        text.contains("4555    # environment variable MCP_PORT"),
        "{text}"
    );
    assert!(
        text.contains("77    # tasks.max_queued in handoff.toml"),
        "{text}"
    );
    assert!(!text.contains("very-secret-token"), "{text}");
    assert!(text.contains("server.auth_token"), "{text}");
}

#[test]
fn config_masks_api_keys_inside_json_settings_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let opencode = r#"{"provider":{"openai":{"options":{"apiKey":"sk-provider-key-1","baseURL":"https://api.example/v1","headers":{"Authorization":"Bearer hdr-token-2"}}}},"mcp":{"gh":{"environment":{"GITHUB_TOKEN":"ghp-token-3"}}}}"#;
    for args in [&["config"][..], &["config", "--json"][..]] {
        let output = Command::new(BIN)
            .args(args)
            .current_dir(dir.path())
            .env("HANDOFF_OPENCODE_CONFIG", opencode)
            .output()
            .unwrap();
        assert!(output.status.success(), "{args:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        for secret in ["sk-provider-key-1", "hdr-token-2", "ghp-token-3"] {
            assert!(!text.contains(secret), "{args:?} shows {secret}: {text}");
        }
        // The structure stays readable: key names and non-secret values are shown.
        assert!(text.contains("apiKey"), "{args:?}: {text}");
        assert!(text.contains("https://api.example/v1"), "{args:?}: {text}");
    }
}

#[test]
fn invalid_setting_stops_start_up_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(BIN)
        .args(["serve"])
        .current_dir(dir.path())
        .env("MAX_CONCURRENT_TASKS", "lots")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("MAX_CONCURRENT_TASKS"), "{stderr}");
    assert!(stderr.contains("lots"), "{stderr}");
}

#[test]
fn dotenv_file_is_loaded_below_the_environment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join(".env"),
        "MCP_PORT=4600\nMAX_CONCURRENT_TASKS=3\n",
    )
    .unwrap();
    let output = Command::new(BIN)
        .args(["config", "--json"])
        .current_dir(dir.path())
        .env("MAX_CONCURRENT_TASKS", "4")
        .output()
        .unwrap();
    let settings: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let find = |key: &str| {
        settings
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["key"] == key)
            .unwrap()
            .clone()
    };
    assert_eq!(find("server.port")["value"], "4600");
    assert!(
        find("server.port")["source"]
            .as_str()
            .unwrap()
            .contains(".env")
    );
    assert_eq!(find("tasks.max_concurrent")["value"], "4");
}

#[test]
fn sigterm_shuts_down_gracefully() {
    let mut server = start(&[]);
    let pid = nix::unistd::Pid::from_raw(i32::try_from(server.child.id()).unwrap());
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
    let exit = exit_within(&mut server.child, Duration::from_secs(10));
    let exit = exit.expect("still running 10 s after SIGTERM");
    assert!(exit.success(), "exit status {exit}");
}

/// An operator learns at start that tasks will be refused, not from the first refused task.
#[test]
fn serve_says_at_start_when_its_default_executor_is_missing() {
    let server = start(&[("HANDOFF_OPENCODE_BINARY", "/nonexistent/opencode")]);
    // Logged before the server listens, which `start` waited for.
    assert!(server.has_logged("the default executor is not available"));
}

#[test]
fn doctor_reports_what_is_missing_and_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let doctor = |env: &[(&str, &str)]| {
        Command::new(BIN)
            .args(["doctor", "--json"])
            .current_dir(dir.path())
            .env("HANDOFF_DATA_DIR", dir.path().join("data"))
            .envs(env.iter().copied())
            .output()
            .unwrap()
    };
    let missing = doctor(&[("HANDOFF_OPENCODE_BINARY", "/nonexistent/opencode")]);
    assert!(!missing.status.success(), "the default executor is missing");
    let checks: serde_json::Value = serde_json::from_slice(&missing.stdout).unwrap();
    let check = |checks: &serde_json::Value, name: &str| {
        checks
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no {name} check in {checks}"))
            .clone()
    };
    let opencode = check(&checks, "opencode");
    assert_eq!(opencode["ok"], false, "{opencode}");
    assert_eq!(opencode["required"], true, "{opencode}");
    assert!(
        opencode["fix"].as_str().unwrap().contains("opencode-ai"),
        "{opencode}"
    );
    assert_eq!(check(&checks, "data dir")["ok"], true);
    assert!(String::from_utf8_lossy(&missing.stderr).contains("opencode"));

    let fine = doctor(&[
        ("HANDOFF_DEFAULT_EXECUTOR", "command"),
        ("HANDOFF_COMMAND_ARGV", r#"["bash", "-c", "{prompt}"]"#),
        ("HANDOFF_OPENCODE_BINARY", "/nonexistent/opencode"),
    ]);
    assert!(
        fine.status.success(),
        "{}",
        String::from_utf8_lossy(&fine.stderr)
    );
    let checks: serde_json::Value = serde_json::from_slice(&fine.stdout).unwrap();
    assert_eq!(check(&checks, "command executor")["ok"], true);
    assert_eq!(check(&checks, "opencode")["required"], false);
}

//! `handoff letta connect` in MCP mode. Letta refuses non-public MCP URLs, so a loopback
//! `server.public_url` must fail before Letta is called; against the REAL Letta, a public name
//! that does not resolve shows the registration bookkeeping (register, keep, update, delete)
//! and the error when Letta cannot reach Handoff. The full MCP path runs in the network
//! namespace test (`letta_netns.rs`).

use std::path::Path;

use serde_json::{Value, json};

use super::letta_connect::{GATEWAY, connect_command, connect_ok, letta, prefix};

const AGENT: &str = "agent-00000000-0000-4000-8000-000000000001";

/// Runs a connect that must fail; its stdout and stderr.
fn connect_fails(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let output = connect_command(dir, args, env).output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "succeeded:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

#[test]
fn mcp_mode_with_a_loopback_or_private_public_url_fails_before_calling_letta() {
    let dir = tempfile::tempdir().unwrap();
    // Nothing listens on port 9: had connect called Letta, it would say Letta is unreachable.
    let dead = [("LETTA_API_URL", "http://127.0.0.1:9")];
    for url in [
        "http://127.0.0.1:3500",
        "http://localhost:3500",
        "http://192.168.1.20:3500",
    ] {
        let env = [dead[0], ("HANDOFF_PUBLIC_URL", url)];
        let (_, stderr) = connect_fails(dir.path(), &["--agent", AGENT, "--mode", "mcp"], &env);
        assert!(
            stderr.contains(&format!("server.public_url {url}")),
            "{stderr}"
        );
        assert!(
            stderr.contains("Letta refuses MCP servers on non-public addresses"),
            "{stderr}"
        );
        assert!(stderr.contains("--mode native"), "{stderr}");
        assert!(!stderr.contains("cannot reach Letta"), "{stderr}");
    }
    // `auto` picks MCP when a public URL is set, so it refuses the same way; JSON says so too.
    let env = [dead[0], ("HANDOFF_PUBLIC_URL", "http://127.0.0.1:3500")];
    let (stdout, _) = connect_fails(dir.path(), &["--agent", AGENT, "--json"], &env);
    let summary: Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(summary["ok"], false);
    assert!(
        summary["error"].as_str().unwrap().contains("non-public"),
        "{summary}"
    );
}

#[test]
fn connect_names_what_is_missing_before_calling_letta() {
    let dir = tempfile::tempdir().unwrap();
    let dead = ("LETTA_API_URL", "http://127.0.0.1:9");
    let (_, stderr) = connect_fails(dir.path(), &["--agent", AGENT, "--mode", "mcp"], &[dead]);
    assert!(
        stderr.contains("MCP mode needs server.public_url (HANDOFF_PUBLIC_URL)"),
        "{stderr}"
    );

    // Handoff takes tokens, but no gateway token to derive the agent's from: said before Letta
    // is called, without the token.
    let operator = (
        "HANDOFF_AUTH_TOKENS",
        r#"[{"token":"operator-token-0123","role":"operator"}]"#,
    );
    let native = ["--agent", AGENT, "--mode", "native"];
    let mut no_gateway = connect_command(dir.path(), &native, &[dead, operator]);
    no_gateway.env_remove("HANDOFF_AUTH_TOKEN");
    let output = no_gateway.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("no gateway token to derive"), "{stderr}");
    assert!(stderr.contains("HANDOFF_AUTH_TOKEN"), "{stderr}");
    assert!(!stderr.contains("operator-token"), "{stderr}");

    // A gateway token, or no token at all (an open Handoff): nothing more is needed, and
    // connect goes on to Letta.
    let (_, stderr) = connect_fails(dir.path(), &native, &[dead]);
    assert!(
        stderr.contains("cannot reach Letta at http://127.0.0.1:9"),
        "{stderr}"
    );
    let mut open = connect_command(dir.path(), &native, &[dead]);
    open.env_remove("HANDOFF_AUTH_TOKEN");
    let output = open.output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("cannot reach Letta at http://127.0.0.1:9"),
        "{stderr}"
    );
}

/// The registrations Letta holds.
fn servers() -> Value {
    let (status, servers) = letta("GET", "/v1/tools/mcp/servers", None);
    assert_eq!(status, 200, "{servers}");
    servers
}

#[test]
fn mcp_registration_is_kept_updated_and_deleted_on_the_real_letta() {
    let agent = handoff_letta::testing::agent_request("connect-mcp");
    let (status, agent) = letta("POST", "/v1/agents/", Some(agent));
    assert_eq!(status, 200, "{agent}");
    let agent = agent["id"].as_str().unwrap().to_owned();
    let prefix = prefix("hcm");
    let dir = tempfile::tempdir().unwrap();
    // A public-looking name that resolves nowhere: Letta registers it (it resolves names only
    // when connecting), then cannot list Handoff's tools.
    let public = format!("http://{prefix}.invalid:3500");
    let endpoint = format!("{public}/mcp");
    let env = [("HANDOFF_PUBLIC_URL", public.as_str())];
    let args = ["--agent", agent.as_str(), "--prefix", prefix.as_str()];

    let (stdout, stderr) = connect_fails(dir.path(), &args, &env);
    assert!(
        stdout.contains(&format!("registered MCP server {prefix} at {endpoint}")),
        "{stdout}"
    );
    assert!(
        stderr.contains("Letta could not register execute_task"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("Letta itself must reach {endpoint}")),
        "{stderr}"
    );
    let registered = &servers()[&prefix];
    assert_eq!(registered["server_url"], json!(endpoint));
    assert_eq!(registered["auth_token"], json!(format!("Bearer {GATEWAY}")));
    assert_eq!(registered["type"], "streamable_http");
    assert!(
        registered.get("custom_headers").is_none_or(Value::is_null),
        "{registered}"
    );

    let (stdout, _) = connect_fails(dir.path(), &args, &env);
    assert!(
        stdout.contains(&format!("MCP server {prefix} is already registered")),
        "{stdout}"
    );

    let rotated = "connect-rotated-token-9876543210";
    let mut rotate = connect_command(dir.path(), &args, &env);
    rotate.env("HANDOFF_AUTH_TOKEN", rotated);
    let stdout = String::from_utf8_lossy(&rotate.output().unwrap().stdout).into_owned();
    assert!(
        stdout.contains(&format!("updated MCP server {prefix}")),
        "{stdout}"
    );
    assert_eq!(
        servers()[&prefix]["auth_token"],
        json!(format!("Bearer {rotated}"))
    );

    let removed = connect_ok(dir.path(), &[&args[..], &["--remove"]].concat(), &env);
    assert!(
        removed.contains(&format!("deleted MCP server {prefix}")),
        "{removed}"
    );
    assert!(servers().get(&prefix).is_none(), "{}", servers());
}

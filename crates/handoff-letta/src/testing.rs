//! Test support (feature `test-support`): a real Letta server and agents on it, for the
//! integration tests and the benchmark of this crate and of the `handoff` binary.

use std::{process::Command, sync::OnceLock, time::Duration};

use serde_json::{Value, json};

pub use crate::client::time_millis;

/// The base URL of a real Letta server: `HANDOFF_TEST_LETTA_URL` when set (`scripts/test.sh`
/// starts one), else the one `scripts/letta/up.sh` starts (or finds running) now. Panics with
/// the script's output when it cannot: these tests need the real server.
pub fn letta_url() -> String {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        if let Ok(url) = std::env::var("HANDOFF_TEST_LETTA_URL") {
            return url;
        }
        let script =
            std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../scripts/letta/up.sh");
        let out = Command::new(&script)
            .output()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "scripts/letta/up.sh failed (a real Letta server is required):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("LETTA_URL="))
            .unwrap_or_else(|| panic!("no LETTA_URL= line from up.sh: {stdout}"))
            .trim()
            .to_owned()
    })
    .clone()
}

/// An HTTP client (with the process's TLS provider installed).
pub fn http() -> reqwest::Client {
    // Installing twice is harmless: the first provider stays.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// The body that creates an agent whose model is the scripted model server behind Letta.
pub fn agent_request(name: &str) -> Value {
    json!({
        "name": format!("{name}-{}", std::process::id()),
        "model": "openai-proxy/gpt-4o-mini",
        "embedding": "openai/text-embedding-3-small",
    })
}

/// Creates an agent on the server at `url`; its id.
pub async fn create_agent(url: &str, name: &str) -> String {
    let answer = http()
        .post(format!("{url}/v1/agents/"))
        .json(&agent_request(name))
        .timeout(Duration::from_secs(120))
        .send()
        .await
        .unwrap_or_else(|e| panic!("creating a Letta agent: {e}"));
    let status = answer.status();
    let body: Value = answer.json().await.unwrap_or(Value::Null);
    assert!(
        status.is_success(),
        "creating a Letta agent: {status} {body}"
    );
    body["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no agent id in {body}"))
        .to_owned()
}

//! Where the client connects and as whom: flags and environment first, then the client config
//! file (`$XDG_CONFIG_HOME/handoff/client.toml` or `~/.config/handoff/client.toml`), then the
//! effective server configuration.

use std::{
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use handoff_config::Config;
use serde::Deserialize;

use super::ClientError;
use crate::cli::Remote;

/// The agent a client without a token, an `--agent` or a configured default acts as.
const FALLBACK_AGENT: &str = "cli";

/// What a client connects with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The MCP endpoint.
    pub url: String,
    /// The bearer token, if any.
    pub token: Option<String>,
    /// The `x-agent-id` to send, if any.
    pub agent: Option<String>,
    /// Where the client config file is (or would be), for hints.
    pub config_path: PathBuf,
}

/// The client config file's keys.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ClientFile {
    url: Option<String>,
    token: Option<String>,
    agent: Option<String>,
}

impl Settings {
    /// Resolves the settings from the flags, `HANDOFF_TOKEN`, the client file and `config`.
    pub fn resolve(remote: &Remote, config: &Config) -> Result<Self, ClientError> {
        let path = client_file_path();
        let file = read_client_file(&path)?;
        let token = std::env::var("HANDOFF_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
            .or(file.token);
        let url = remote
            .url
            .clone()
            .or(file.url)
            .unwrap_or_else(|| default_url(&config.server.host, config.server.port));
        // Without a token the header is the identity; a token decides it at the server, where a
        // header it does not match would be refused.
        let agent = remote.agent.clone().or(file.agent).or_else(|| {
            token.is_none().then(|| {
                config
                    .server
                    .default_agent
                    .as_ref()
                    .map_or(FALLBACK_AGENT.to_owned(), |a| a.to_string())
            })
        });
        Ok(Self {
            url,
            token,
            agent,
            config_path: path,
        })
    }
}

/// `http://HOST:PORT/mcp` for a server bound to `host`: a wildcard address is reached on
/// loopback.
fn default_url(host: &str, port: u16) -> String {
    let host = match host {
        "" | "0.0.0.0" => "127.0.0.1".to_owned(),
        "::" | "[::]" => "[::1]".to_owned(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_owned(),
    };
    format!("http://{host}:{port}/mcp")
}

/// `$XDG_CONFIG_HOME/handoff/client.toml`, else `~/.config/handoff/client.toml`.
fn client_file_path() -> PathBuf {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
        .unwrap_or_else(|| PathBuf::from(".config"));
    base.join("handoff").join("client.toml")
}

/// Reads the client file (absent: empty); refuses one holding a token that others can read.
fn read_client_file(path: &Path) -> Result<ClientFile, ClientError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ClientFile::default()),
        Err(e) => {
            return Err(ClientError::Usage(format!(
                "cannot read {}: {e}",
                path.display()
            )));
        }
    };
    let file: ClientFile = toml::from_str(&text).map_err(|e| {
        ClientError::Usage(format!(
            "{} is not valid (keys: url, token, agent): {}",
            path.display(),
            e.message()
        ))
    })?;
    if file.token.is_some() {
        let mode = std::fs::metadata(path)
            .map_err(|e| ClientError::Usage(format!("cannot read {}: {e}", path.display())))?
            .permissions()
            .mode();
        check_private(path, mode)?;
    }
    Ok(file)
}

/// A file holding a token must be readable by its owner only.
fn check_private(path: &Path, mode: u32) -> Result<(), ClientError> {
    if mode & 0o077 == 0 {
        return Ok(());
    }
    Err(ClientError::Usage(format!(
        "{} holds a token but others can read it (mode {:o}): run `chmod 600 {}`",
        path.display(),
        mode & 0o777,
        path.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_and_ipv6_hosts_become_reachable_urls() {
        assert_eq!(default_url("127.0.0.1", 3500), "http://127.0.0.1:3500/mcp");
        assert_eq!(default_url("0.0.0.0", 80), "http://127.0.0.1:80/mcp");
        assert_eq!(default_url("::", 1), "http://[::1]:1/mcp");
        assert_eq!(default_url("::1", 1), "http://[::1]:1/mcp");
        assert_eq!(default_url("localhost", 9), "http://localhost:9/mcp");
    }

    #[test]
    fn a_token_file_others_can_read_is_refused() {
        let path = Path::new("/x/client.toml");
        assert!(check_private(path, 0o100600).is_ok());
        assert!(check_private(path, 0o100400).is_ok());
        let refused = check_private(path, 0o100644).unwrap_err().to_string();
        assert!(refused.contains("chmod 600 /x/client.toml"), "{refused}");
        assert!(check_private(path, 0o100640).is_err());
    }
}

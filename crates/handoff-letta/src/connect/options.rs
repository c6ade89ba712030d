//! From the configuration and the command line to what `connect` does, checked before any call
//! to Letta: the mode, where Letta reaches Handoff, the tokens it presents, the prefix.

use handoff_config::{Config, Secret, ServerConfig, derived_agent_token};
use handoff_task::AgentId;
use serde::Serialize;

use super::{ConnectError, address};

/// How Letta reaches Handoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Letta's own MCP client calls Handoff's `/mcp` (needs a public address).
    Mcp,
    /// Custom Python tools in Letta's tool sandbox call Handoff's `/mcp` themselves.
    Native,
}

impl Mode {
    /// The mode's name on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Mcp => "mcp",
            Mode::Native => "native",
        }
    }
}

/// The mode asked for: `Auto` is MCP when `server.public_url` is set, else native.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModeChoice {
    /// Decide from the configuration.
    Auto,
    /// A fixed mode.
    Fixed(Mode),
}

/// Which agents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Targets {
    /// These agents.
    Agents(Vec<String>),
    /// Every agent of the Letta organisation.
    All,
}

/// What the command line asked for.
#[derive(Debug, Clone)]
pub struct ConnectRequest {
    /// Which agents.
    pub targets: Targets,
    /// Which mode.
    pub mode: ModeChoice,
    /// Overrides `letta.tool_prefix`.
    pub prefix: Option<String>,
    /// Detach and delete what connect made instead.
    pub remove: bool,
    /// Native mode may put the gateway token in an agent's secrets (`--allow-gateway-token`).
    pub allow_gateway_token: bool,
}

/// A checked request with everything it needs from the configuration.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// Which agents.
    pub targets: Targets,
    /// The mode (a remove cleans up after both).
    pub mode: Mode,
    /// What names are made from.
    pub prefix: String,
    /// Handoff's `/mcp` endpoint as Letta (or its tool sandbox) reaches it; `None` only for a
    /// remove, which does not need it.
    pub endpoint: Option<String>,
    /// Letta's base URL.
    pub letta_url: String,
    /// Detach and delete instead.
    pub remove: bool,
    gateway: Option<Secret>,
    agent_tokens: Vec<(String, Secret)>,
    allow_gateway_token: bool,
    /// Handoff takes no token at all (an open server): the tools present none.
    open: bool,
}

/// What native tools present to an open Handoff, which reads no token.
pub(crate) const NO_TOKEN: &str = "none";

impl ConnectOptions {
    /// Every token value of this Handoff connect knows: the gateway's and the agents'.
    pub(crate) fn token_values(&self) -> Vec<&str> {
        self.gateway
            .iter()
            .chain(self.agent_tokens.iter().map(|(_, token)| token))
            .map(Secret::expose)
            .collect()
    }

    /// Checks `request` against `config`: everything that can be wrong without asking Letta.
    pub fn resolve(config: &Config, request: ConnectRequest) -> Result<Self, ConnectError> {
        let letta_url = config.letta.api_url.clone().ok_or(ConnectError::NoLetta)?;
        let prefix = request
            .prefix
            .unwrap_or_else(|| config.letta.tool_prefix.clone());
        handoff_config::check_tool_prefix(&prefix).map_err(|reason| ConnectError::BadPrefix {
            prefix: prefix.clone(),
            reason,
        })?;
        if let Targets::Agents(agents) = &request.targets {
            for agent in agents {
                if !AgentId::parse(agent).is_ok_and(|a| a.is_letta_agent()) {
                    return Err(ConnectError::BadAgent {
                        agent: agent.clone(),
                    });
                }
            }
        }
        let server = &config.server;
        let mode = match request.mode {
            ModeChoice::Fixed(mode) => mode,
            ModeChoice::Auto if server.public_url.is_some() => Mode::Mcp,
            ModeChoice::Auto => Mode::Native,
        };
        let mut options = Self {
            targets: request.targets,
            mode,
            prefix,
            endpoint: None,
            letta_url,
            remove: request.remove,
            gateway: server.gateway_token().cloned(),
            agent_tokens: agent_tokens(server),
            allow_gateway_token: request.allow_gateway_token,
            open: server.auth_token.is_none() && server.tokens.0.is_empty(),
        };
        if !options.remove {
            options.endpoint = Some(endpoint(server, mode)?);
            options.check_tokens()?;
        }
        Ok(options)
    }

    /// Every agent must have a token to present: MCP mode needs the gateway's, native mode one
    /// bound to each named agent (with `--all`, each agent is checked as it is found).
    fn check_tokens(&self) -> Result<(), ConnectError> {
        match (&self.targets, self.mode) {
            (Targets::Agents(agents), Mode::Native) => {
                agents.iter().try_for_each(|a| self.token_for(a).map(drop))
            }
            (Targets::All, Mode::Native) => Ok(()),
            (_, Mode::Mcp) => self.gateway().map(drop),
        }
    }

    /// The token Letta presents for `agent`. MCP mode: the gateway token, which stays in Letta's
    /// server registration. Native mode: a token that speaks for that agent only, because it is
    /// kept in the agent's secrets where code in its tool sandbox can read it — the one bound
    /// to it in `auth.tokens`, else one derived from the gateway token for it (no
    /// configuration, no restart); the gateway token itself only with `--allow-gateway-token`.
    /// An open Handoff (no tokens) reads none.
    pub(crate) fn token_for(&self, agent: &str) -> Result<Secret, ConnectError> {
        let bound = self.agent_tokens.iter().find(|(a, _)| a == agent);
        match (self.mode, bound, &self.gateway) {
            (Mode::Native, Some((_, token)), _) => Ok(token.clone()),
            (Mode::Native, None, Some(gateway)) if self.allow_gateway_token => Ok(gateway.clone()),
            (Mode::Native, None, Some(gateway)) => Ok(derived_agent_token(gateway, agent)),
            (Mode::Native, None, None) if self.open => Ok(Secret::new(NO_TOKEN)),
            (Mode::Native, None, None) => Err(ConnectError::NoAgentToken {
                agent: agent.to_owned(),
            }),
            (Mode::Mcp, _, Some(gateway)) => Ok(gateway.clone()),
            (Mode::Mcp, _, None) => Err(ConnectError::NoToken {
                agent: format!(" (agent {agent})"),
            }),
        }
    }

    /// The gateway token (MCP mode checked it is there).
    pub(crate) fn gateway(&self) -> Result<&Secret, ConnectError> {
        self.gateway.as_ref().ok_or(ConnectError::NoToken {
            agent: String::new(),
        })
    }

    /// The endpoint (set for every connect).
    pub(crate) fn endpoint(&self) -> Result<&str, ConnectError> {
        self.endpoint
            .as_deref()
            .ok_or_else(|| ConnectError::NoEndpoint("no address".to_owned()))
    }

    /// MCP mode: a public URL's name must not resolve to an address Letta refuses (it checks
    /// again before every call). A name that does not resolve here may resolve where Letta runs.
    pub async fn check_resolution(&self) -> Result<(), ConnectError> {
        let Some(endpoint) = self.endpoint.as_deref().filter(|_| self.mode == Mode::Mcp) else {
            return Ok(());
        };
        let Some((host, port)) = host_port(endpoint) else {
            return Ok(());
        };
        let lookup = tokio::net::lookup_host((host.as_str(), port));
        let Ok(Ok(addrs)) = tokio::time::timeout(LOOKUP_WAIT, lookup).await else {
            return Ok(());
        };
        for addr in addrs {
            if let Some(why) = address::refused_ip(addr.ip()) {
                return Err(ConnectError::NotPublic {
                    url: endpoint.trim_end_matches("/mcp").to_owned(),
                    why: format!("a name that resolves to {why}"),
                });
            }
        }
        Ok(())
    }
}

/// How long a public name's resolution may take before the check is skipped.
const LOOKUP_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// The tokens bound to one agent each.
fn agent_tokens(server: &ServerConfig) -> Vec<(String, Secret)> {
    server
        .tokens
        .0
        .iter()
        .filter_map(|g| match &g.role {
            handoff_config::TokenRole::Agent(a) => Some((a.as_str().to_owned(), g.token.clone())),
            _ => None,
        })
        .collect()
}

/// Handoff's `/mcp` as Letta reaches it: `<public_url>/mcp` (or the public URL itself when it
/// names `/mcp` already), or (native mode only) the bind
/// address, which Letta's local tool sandbox reaches when both run on one host.
fn endpoint(server: &ServerConfig, mode: Mode) -> Result<String, ConnectError> {
    if let Some(public) = &server.public_url {
        if mode == Mode::Mcp
            && let Some(why) = host_port(public).and_then(|(h, _)| address::refused_host(&h))
        {
            return Err(ConnectError::NotPublic {
                url: public.clone(),
                why,
            });
        }
        // `https://host` or `https://host/mcp` (the address Handoff logs) mean the same.
        return Ok(if public.ends_with("/mcp") {
            public.clone()
        } else {
            format!("{public}/mcp")
        });
    }
    if mode == Mode::Mcp {
        return Err(ConnectError::NoPublicUrl);
    }
    if server.port == 0 {
        return Err(ConnectError::NoEndpoint(
            "server.port is 0 (any free port)".to_owned(),
        ));
    }
    let host = match server.host.as_str() {
        "0.0.0.0" => "127.0.0.1".to_owned(),
        "::" | "[::]" => "[::1]".to_owned(),
        h if h.contains(':') && !h.starts_with('[') => format!("[{h}]"),
        h => h.to_owned(),
    };
    Ok(format!("http://{host}:{}/mcp", server.port))
}

/// The host (IPv6 unbracketed) and port of an http(s) URL.
fn host_port(url: &str) -> Option<(String, u16)> {
    let parsed = reqwest::Url::parse(url).ok()?;
    let host = parsed.host_str()?.trim_matches(['[', ']']).to_owned();
    Some((host, parsed.port_or_known_default()?))
}

#[cfg(test)]
#[path = "options_tests.rs"]
mod tests;

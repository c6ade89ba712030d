//! Why `handoff letta connect` stopped: each error names the problem and the fix.

use crate::LettaError;

/// A failed connect or remove.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// No Letta server configured.
    #[error(
        "no Letta server configured: set LETTA_API_URL (letta.api_url), and LETTA_API_TOKEN when it runs --secure"
    )]
    NoLetta,
    /// Letta did not answer.
    #[error(
        "cannot reach Letta at {url}: {detail}. Is it running? Check letta.api_url (LETTA_API_URL)"
    )]
    LettaUnreachable {
        /// Letta's URL.
        url: String,
        /// What failed.
        detail: String,
    },
    /// Letta refused Handoff's credentials.
    #[error(
        "Letta at {url} refused the request ({detail}): set LETTA_API_TOKEN (letta.api_token) to a token of that server"
    )]
    LettaAuth {
        /// Letta's URL.
        url: String,
        /// Letta's answer.
        detail: String,
    },
    /// MCP mode without `server.public_url`.
    #[error(
        "MCP mode needs server.public_url (HANDOFF_PUBLIC_URL), the address Letta calls Handoff at: set it to Handoff's public https URL, or use --mode native"
    )]
    NoPublicUrl,
    /// MCP mode with an address Letta refuses.
    #[error(
        "server.public_url {url} is {why}: Letta refuses MCP servers on non-public addresses (loopback, private ranges, .local names) when registering and on every call, so MCP mode cannot work. Serve Handoff at a public address (TLS through a reverse proxy) and set HANDOFF_PUBLIC_URL to it, or use --mode native"
    )]
    NotPublic {
        /// The configured URL.
        url: String,
        /// What makes it non-public.
        why: String,
    },
    /// The address native tools would call cannot be derived.
    #[error(
        "cannot tell where Letta's tools reach Handoff: {0}. Set server.public_url (HANDOFF_PUBLIC_URL) to Handoff's address as Letta's tool sandbox reaches it"
    )]
    NoEndpoint(String),
    /// No token for Letta to present to Handoff.
    #[error(
        "no gateway token configured for Letta to present to Handoff{agent}: set HANDOFF_AUTH_TOKEN (server.auth_token), or add {{\"token\": …, \"role\": \"gateway\"}} to auth.tokens (HANDOFF_AUTH_TOKENS)"
    )]
    NoToken {
        /// ` (agent …)` when only that agent lacks one, else empty.
        agent: String,
    },
    /// Native mode and an agent with no token of its own.
    #[error(
        "agent {agent} has no token to present: Handoff takes tokens but has no gateway token to derive one for it from. Set HANDOFF_AUTH_TOKEN (server.auth_token), from which every agent gets a token of its own that speaks for it only, or add {{\"token\": …, \"role\": \"agent\", \"agent_id\": \"{agent}\"}} to auth.tokens (HANDOFF_AUTH_TOKENS)"
    )]
    NoAgentToken {
        /// The agent.
        agent: String,
    },
    /// A bad `--prefix`.
    #[error("--prefix {prefix:?}: {reason}")]
    BadPrefix {
        /// The prefix given.
        prefix: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A bad `--agent`.
    #[error("--agent {agent:?} is not a Letta agent id (agent-<uuid>)")]
    BadAgent {
        /// The id given.
        agent: String,
    },
    /// Letta does not know an agent.
    #[error("Letta at {url} has no agent {agent}: check the id (GET /v1/agents/)")]
    AgentNotFound {
        /// Letta's URL.
        url: String,
        /// The agent.
        agent: String,
    },
    /// Handoff did not answer where Letta's tools would call it.
    #[error(
        "cannot reach Handoff at {url}: {detail}. Start it (`handoff serve`) with this configuration; Letta's tools will call this address"
    )]
    HandoffUnreachable {
        /// The `/mcp` endpoint.
        url: String,
        /// What failed.
        detail: String,
    },
    /// Handoff answered with an error.
    #[error(
        "Handoff at {url} refused the request ({detail}); the token Letta will present must be one Handoff accepts (HANDOFF_AUTH_TOKEN / auth.tokens of the running server)"
    )]
    HandoffRefused {
        /// The `/mcp` endpoint.
        url: String,
        /// Its answer.
        detail: String,
    },
    /// Handoff offers none of the tools to connect.
    #[error(
        "Handoff at {url} offers no execute_task to agent {agent} (tools.permissions?): nothing to connect"
    )]
    NoTools {
        /// The `/mcp` endpoint.
        url: String,
        /// The agent it was asked for.
        agent: String,
    },
    /// A tool's schema cannot become a Python function.
    #[error("Handoff tool {tool}: {problem}")]
    Schema {
        /// The tool.
        tool: String,
        /// What cannot be expressed.
        problem: String,
    },
    /// A name Handoff would use is taken by something `connect` did not make.
    #[error(
        "Letta already has a {what} named {name} that `handoff letta connect --prefix {prefix}` did not make ({owner}): tool and server names are unique per Letta organisation. Give this Handoff its own prefix (--prefix or HANDOFF_LETTA_TOOL_PREFIX){hint}"
    )]
    NameTaken {
        /// `tool` or `MCP server`.
        what: &'static str,
        /// The name.
        name: String,
        /// The prefix in use.
        prefix: String,
        /// Who holds it.
        owner: String,
        /// More advice for the mode.
        hint: &'static str,
    },
    /// Letta could not reach Handoff's MCP endpoint to register its tools.
    #[error(
        "Letta could not register {tool} from MCP server {server} ({detail}): Letta itself must reach {url} at a public address"
    )]
    McpUnreachable {
        /// The registration.
        server: String,
        /// The tool.
        tool: String,
        /// The endpoint.
        url: String,
        /// Letta's answer.
        detail: String,
    },
    /// Letta kept a value this command must not overwrite blindly.
    #[error(
        "Letta did not return the value of agent {agent}'s secret {key}: rewriting the agent's secrets would lose it; set {names} on the agent by hand"
    )]
    SecretUnreadable {
        /// The agent.
        agent: String,
        /// The secret whose value is missing.
        key: String,
        /// The variables connect would set.
        names: String,
    },
    /// Letta did not apply an update.
    #[error(
        "Letta did not apply the update of MCP server {server}: run `handoff letta connect --remove --all`, then connect again"
    )]
    UpdateIgnored {
        /// The registration.
        server: String,
    },
    /// Any other failed call to Letta.
    #[error("{0}")]
    Letta(#[from] LettaError),
}

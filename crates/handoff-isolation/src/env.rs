//! The environment an isolated process starts with: an allow-list of the inherited variables,
//! never Handoff's own secrets, plus what the executor sets itself.

use std::ffi::{OsStr, OsString};

/// Inherited variables a coding agent needs: the basics of a Unix session, proxies and
/// certificates, and the model providers' own settings.
pub const DEFAULT_ALLOW: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TERM",
    "TZ",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
    "XDG_RUNTIME_DIR",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "ANTHROPIC_*",
    "OPENAI_*",
    "OPENCODE_*",
    "CLAUDE_*",
    "CODEX_*",
    "GEMINI_*",
    "GOOGLE_*",
    "XAI_*",
    "OPENROUTER_*",
    "AZURE_OPENAI_*",
    "MISTRAL_*",
    "GROQ_*",
    "DEEPSEEK_*",
];

/// Never passed on, whatever the allow-list says: Handoff's and Letta's credentials.
pub const ALWAYS_DENIED: &[&str] = &["HANDOFF_*", "LETTA_*"];

/// Which inherited variables pass.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvPolicy {
    allow: Vec<String>,
}

impl Default for EnvPolicy {
    fn default() -> Self {
        Self::new(std::iter::empty::<String>())
    }
}

impl EnvPolicy {
    /// The default allow-list plus `extra` names (`NAME` or `PREFIX*`).
    pub fn new(extra: impl IntoIterator<Item = impl Into<String>>) -> Self {
        let mut allow: Vec<String> = DEFAULT_ALLOW.iter().map(|s| (*s).to_owned()).collect();
        allow.extend(extra.into_iter().map(Into::into));
        Self { allow }
    }

    /// Whether `name` may be inherited.
    pub fn allows(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        !ALWAYS_DENIED.iter().any(|p| matches(p, name))
            && self.allow.iter().any(|p| matches(p, name))
    }

    /// The inherited variables that pass, in their original order.
    pub fn filter(
        &self,
        vars: impl IntoIterator<Item = (OsString, OsString)>,
    ) -> Vec<(OsString, OsString)> {
        vars.into_iter().filter(|(k, _)| self.allows(k)).collect()
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(names: &[&str]) -> Vec<(OsString, OsString)> {
        names
            .iter()
            .map(|n| (OsString::from(n), OsString::from("v")))
            .collect()
    }

    #[test]
    fn secrets_never_pass_and_the_basics_do() {
        let policy = EnvPolicy::new(["HANDOFF_AUTH_TOKEN", "MY_KEY", "CORP_*"]);
        let kept: Vec<_> = policy
            .filter(vars(&[
                "PATH",
                "HOME",
                "LC_ALL",
                "ANTHROPIC_API_KEY",
                "HANDOFF_AUTH_TOKEN",
                "LETTA_API_TOKEN",
                "AWS_SECRET_ACCESS_KEY",
                "MY_KEY",
                "CORP_PROXY",
                "SSH_AUTH_SOCK",
            ]))
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap_or_default())
            .collect();
        assert_eq!(
            kept,
            [
                "PATH",
                "HOME",
                "LC_ALL",
                "ANTHROPIC_API_KEY",
                "MY_KEY",
                "CORP_PROXY"
            ]
        );
    }
}

//! What `handoff letta connect` did, one action at a time: for people one line each, for
//! machines one JSON summary.

use serde::Serialize;
use serde_json::{Value, json};

use super::Mode;

/// One thing connect did or found already done.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// What kind of action (`registered_server`, `attached`, `already_attached`, …).
    pub kind: &'static str,
    /// The tool, server or variables it concerns.
    pub subject: String,
    /// The agent, for per-agent actions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// Whether Letta was changed.
    pub changed: bool,
    /// The line printed for it.
    pub message: String,
}

/// Everything one run did.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The mode.
    pub mode: Mode,
    /// The prefix names are made from.
    pub prefix: String,
    /// Letta's base URL.
    pub letta_url: String,
    /// Handoff's `/mcp` as Letta reaches it (not known to a remove).
    pub endpoint: Option<String>,
    /// Whether this was a remove.
    pub remove: bool,
    /// The agents it worked on.
    pub agents: Vec<String>,
    /// What it did, in order.
    pub actions: Vec<Action>,
}

impl Report {
    /// An empty report for a run.
    pub fn new(options: &super::ConnectOptions) -> Self {
        Self {
            mode: options.mode,
            prefix: options.prefix.clone(),
            letta_url: options.letta_url.clone(),
            endpoint: options.endpoint.clone(),
            remove: options.remove,
            agents: Vec::new(),
            actions: Vec::new(),
        }
    }

    /// Records something that changed Letta.
    pub(crate) fn did(
        &mut self,
        kind: &'static str,
        subject: &str,
        agent: Option<&str>,
        message: String,
    ) {
        self.push(kind, subject, agent, true, message);
    }

    /// Records something found already as wanted.
    pub(crate) fn saw(
        &mut self,
        kind: &'static str,
        subject: &str,
        agent: Option<&str>,
        message: String,
    ) {
        self.push(kind, subject, agent, false, message);
    }

    fn push(
        &mut self,
        kind: &'static str,
        subject: &str,
        agent: Option<&str>,
        changed: bool,
        message: String,
    ) {
        self.actions.push(Action {
            kind,
            subject: subject.to_owned(),
            agent: agent.map(str::to_owned),
            changed,
            message,
        });
    }

    /// Whether anything in Letta changed.
    pub fn changed(&self) -> bool {
        self.actions.iter().any(|a| a.changed)
    }

    /// The closing line: what the run amounts to.
    pub fn summary(&self) -> String {
        let agents = match self.agents.len() {
            1 => self.agents[0].clone(),
            n => format!("{n} agents"),
        };
        let how = format!("{} mode, prefix {}", self.mode.as_str(), self.prefix);
        // A remove cleans up after both modes: only the prefix says what it looked for.
        let prefix = &self.prefix;
        match (self.remove, self.changed()) {
            (true, true) => format!("removed Handoff (prefix {prefix}) from {agents}"),
            (true, false) => {
                format!("nothing to remove: no Handoff tools (prefix {prefix}) on {agents}")
            }
            (false, true) => format!("connected {agents} to Handoff ({how})"),
            (false, false) => format!("nothing changed: {agents} already connected ({how})"),
        }
    }

    /// The machine-readable summary; `error` when the run stopped early.
    pub fn to_json(&self, error: Option<&str>) -> Value {
        let mut value = json!(self);
        value["changed"] = json!(self.changed());
        value["ok"] = json!(error.is_none());
        value["summary"] = json!(self.summary());
        if let Some(error) = error {
            value["error"] = json!(error);
        }
        value
    }
}

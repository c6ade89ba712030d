//! The ordered rule list, assembled from layers without reordering.

use serde::{Deserialize, Serialize};
use wildmatch::WildMatch;

use handoff_task::{PermissionAction, PermissionRule};

use super::pattern::{Pattern, is_path_permission};

/// Where a rule comes from; later layers come later in the list (and so win ties).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    /// Handoff's built-in defaults.
    Defaults,
    /// The operator's configuration file / environment.
    Global,
    /// The operator's rules for one project (working directory).
    Project,
    /// The operator's rules for one agent (rules with an `agent` field).
    Agent,
    /// Rules the calling agent gave with the task: they may tighten, never lift an operator's deny.
    Task,
}

impl Layer {
    /// Rules set by the operator (every layer but the task's).
    pub fn is_operator(self) -> bool {
        self != Layer::Task
    }

    /// The layer's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Defaults => "defaults",
            Layer::Global => "global",
            Layer::Project => "project",
            Layer::Agent => "agent",
            Layer::Task => "task",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Compiled {
    pub(crate) layer: Layer,
    pub(crate) rule: PermissionRule,
    permission: WildMatch,
    agent: Option<WildMatch>,
    project: Option<(String, WildMatch)>,
    pattern: Pattern,
}

impl Compiled {
    fn new(layer: Layer, rule: PermissionRule) -> Self {
        Self {
            layer,
            permission: WildMatch::new(&rule.permission),
            agent: rule.agent.as_deref().map(WildMatch::new),
            project: rule
                .project
                .as_deref()
                .map(|p| (p.trim_end_matches('/').to_owned(), WildMatch::new(p))),
            pattern: Pattern::new(&rule.pattern),
            rule,
        }
    }

    fn applies(&self, permission: &str, agent: Option<&str>, cwd: Option<&str>) -> bool {
        self.permission.matches(permission)
            && match (&self.agent, agent) {
                (None, _) => true,
                (Some(wanted), Some(agent)) => wanted.matches(agent),
                (Some(_), None) => false,
            }
            && match (&self.project, cwd) {
                (None, _) => true,
                (Some((root, glob)), Some(cwd)) => {
                    cwd == root || cwd.starts_with(&format!("{root}/")) || glob.matches(cwd)
                }
                (Some(_), None) => false,
            }
    }

    pub(crate) fn matches(
        &self,
        permission: &str,
        subject: &str,
        agent: Option<&str>,
        cwd: Option<&str>,
    ) -> bool {
        self.applies(permission, agent, cwd)
            && if is_path_permission(permission) {
                self.pattern.matches_path(subject, cwd)
            } else {
                self.pattern.matches_text(subject)
            }
    }
}

/// Rules in evaluation order: layer by layer, each layer in the order it was written.
#[derive(Debug, Clone, Default)]
pub struct RuleStack {
    rules: Vec<Compiled>,
}

impl RuleStack {
    /// An empty stack (every request is asked).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `rules` as `layer`; an operator's rule naming a `project` joins the project layer,
    /// one naming an `agent` the agent layer.
    /// Layers may be added in any order: the stack keeps layer order, and the written order
    /// within each layer.
    pub fn with_layer(mut self, layer: Layer, rules: &[PermissionRule]) -> Self {
        for rule in rules {
            let layer = if rule.agent.is_some() && layer < Layer::Agent {
                Layer::Agent
            } else if rule.project.is_some() && layer < Layer::Project {
                Layer::Project
            } else {
                layer
            };
            let at = self.rules.partition_point(|c| c.layer <= layer);
            self.rules.insert(at, Compiled::new(layer, rule.clone()));
        }
        self
    }

    /// The rules in evaluation order.
    pub fn rules(&self) -> impl Iterator<Item = (Layer, &PermissionRule)> {
        self.rules.iter().map(|c| (c.layer, &c.rule))
    }

    /// How many rules there are.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether there are no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The last rule matching `subject`, among operator layers only when `operator_only`.
    pub(crate) fn last_match(
        &self,
        permission: &str,
        subject: &str,
        agent: Option<&str>,
        cwd: Option<&str>,
        operator_only: bool,
    ) -> Option<&Compiled> {
        self.rules.iter().rev().find(|c| {
            (!operator_only || c.layer.is_operator()) && c.matches(permission, subject, agent, cwd)
        })
    }

    /// Whether `permission` (a tool) is hidden from `agent`: the last rule naming it is a
    /// blanket deny — in the operator's layers or over all of them.
    pub fn hidden(&self, permission: &str, agent: Option<&str>) -> bool {
        let blanket_deny = |operator_only: bool| {
            self.rules
                .iter()
                .rev()
                .find(|c| {
                    (!operator_only || c.layer.is_operator()) && c.applies(permission, agent, None)
                })
                .is_some_and(|c| c.rule.is_blanket() && c.rule.action == PermissionAction::Deny)
        };
        blanket_deny(true) || blanket_deny(false)
    }
}

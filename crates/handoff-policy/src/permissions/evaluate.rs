//! Judging one request: every subject (each path, each part of each command) is judged on its
//! own — an operator's deny is final, a grant turns ask into allow and nothing else — and the
//! strictest part decides (deny > ask > allow), so a request is prompted at most once.

use serde::Serialize;

use handoff_task::{PermissionAction, PermissionRule};

use super::{
    command::split_command,
    pattern::{Pattern, is_command_permission, is_path_permission, normalize_command},
    stack::{Layer, RuleStack},
};

/// A question: may `agent` exercise `permission` on `patterns`?
#[derive(Debug, Clone, Copy)]
pub struct PermissionRequest<'a> {
    /// `bash`, `edit`, `read`… or a Handoff tool's name.
    pub permission: &'a str,
    /// Commands, paths or `key=value` arguments; empty for a whole-permission question.
    pub patterns: &'a [String],
    /// Who asks (selects agent rules).
    pub agent: Option<&'a str>,
    /// The task's working directory: relative path rules apply under it.
    pub cwd: Option<&'a str>,
    /// Nobody can answer a prompt: what would be asked is denied instead.
    pub headless: bool,
}

/// A standing runtime approval: `permission` on subjects matching `pattern`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The approval's id (for audit and revocation).
    pub id: String,
    /// The permission granted.
    pub permission: String,
    /// The subject granted: exactly the command part or path shown, unless the approver
    /// wrote a wildcard.
    pub pattern: String,
}

/// What decided one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum RuleSource {
    /// A rule.
    Rule {
        /// Its layer.
        layer: Layer,
        /// The rule.
        rule: PermissionRule,
    },
    /// A runtime approval turned an ask into an allow.
    Grant {
        /// The approval's id.
        id: String,
    },
    /// No rule matched: asked.
    NoMatch,
    /// The command does not parse as shell: asked (denied when headless).
    Unparseable,
}

/// The verdict on one subject.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartVerdict {
    /// The path, command part or argument judged.
    pub subject: String,
    /// The action for it.
    pub action: PermissionAction,
    /// Why.
    pub source: RuleSource,
}

/// The verdict on a whole request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The strictest part's action.
    pub action: PermissionAction,
    /// Every subject judged, in order.
    pub parts: Vec<PartVerdict>,
}

impl Verdict {
    /// The subjects that decided the action (the denied ones, else the asked ones).
    pub fn deciding(&self) -> impl Iterator<Item = &PartVerdict> {
        self.parts.iter().filter(move |p| p.action == self.action)
    }

    /// One line saying why, naming the deciding subjects and rules.
    pub fn reason(&self) -> String {
        let reasons: Vec<String> = self
            .deciding()
            .map(|part| {
                let why = match &part.source {
                    RuleSource::Rule { layer, rule } => format!(
                        "{} rule {{permission: {}, pattern: {}, action: {}}}",
                        layer.as_str(),
                        rule.permission,
                        rule.pattern,
                        rule.action.as_str()
                    ),
                    RuleSource::Grant { id } => format!("approval {id}"),
                    RuleSource::NoMatch => "no rule matches".to_owned(),
                    RuleSource::Unparseable => "the command does not parse as shell".to_owned(),
                };
                format!("`{}`: {why}", part.subject)
            })
            .collect();
        format!("{} — {}", self.action.as_str(), reasons.join("; "))
    }
}

impl RuleStack {
    /// Judges `request`, letting `grants` turn asks into allows.
    pub fn evaluate(&self, request: &PermissionRequest<'_>, grants: &[Grant]) -> Verdict {
        let mut parts = Vec::new();
        for subject in subjects(request) {
            parts.push(match subject {
                Some(subject) => self.judge(request, subject, grants),
                None => PartVerdict {
                    subject: request.patterns.join(" "),
                    action: if request.headless {
                        PermissionAction::Deny
                    } else {
                        PermissionAction::Ask
                    },
                    source: RuleSource::Unparseable,
                },
            });
        }
        let action = parts
            .iter()
            .map(|p| p.action)
            .fold(PermissionAction::Allow, PermissionAction::strictest);
        Verdict { action, parts }
    }

    fn judge(
        &self,
        request: &PermissionRequest<'_>,
        subject: String,
        grants: &[Grant],
    ) -> PartVerdict {
        let find = |operator_only| {
            self.last_match(
                request.permission,
                &subject,
                request.agent,
                request.cwd,
                operator_only,
            )
        };
        let source = |c: &super::stack::Compiled| RuleSource::Rule {
            layer: c.layer,
            rule: c.rule.clone(),
        };
        // An operator's deny stands whatever the task's own rules or any approval say.
        if let Some(operator) = find(true)
            && operator.rule.action == PermissionAction::Deny
        {
            return PartVerdict {
                subject,
                action: PermissionAction::Deny,
                source: source(operator),
            };
        }
        let (mut action, mut why) = match find(false) {
            Some(rule) => (rule.rule.action, source(rule)),
            None => (PermissionAction::Ask, RuleSource::NoMatch),
        };
        if action == PermissionAction::Ask {
            if let Some(grant) = grants.iter().find(|g| grant_covers(g, request, &subject)) {
                action = PermissionAction::Allow;
                why = RuleSource::Grant {
                    id: grant.id.clone(),
                };
            } else if request.headless {
                action = PermissionAction::Deny;
            }
        }
        PartVerdict {
            subject,
            action,
            source: why,
        }
    }
}

fn grant_covers(grant: &Grant, request: &PermissionRequest<'_>, subject: &str) -> bool {
    grant.permission == request.permission
        && pattern_covers(request.permission, &grant.pattern, subject, request.cwd)
}

/// Whether `pattern` covers `subject` for `permission` (paths as globs, the rest as wildcards).
pub fn pattern_covers(permission: &str, pattern: &str, subject: &str, cwd: Option<&str>) -> bool {
    if pattern == subject {
        return true;
    }
    let pattern = Pattern::new(pattern);
    if is_path_permission(permission) {
        pattern.matches_path(subject, cwd)
    } else {
        pattern.matches_text(subject)
    }
}

/// The subjects of a request: each command part (`None` for a line that does not parse),
/// each path or argument, or `*` for a whole-permission question.
fn subjects(request: &PermissionRequest<'_>) -> Vec<Option<String>> {
    if request.patterns.is_empty() {
        return vec![Some("*".to_owned())];
    }
    if !is_command_permission(request.permission) {
        return request.patterns.iter().cloned().map(Some).collect();
    }
    let mut out = Vec::new();
    for line in request.patterns {
        match split_command(line) {
            Some(parts) if !parts.is_empty() => out.extend(parts.into_iter().map(Some)),
            Some(_) => out.push(Some(normalize_command(line))),
            None => out.push(None),
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "evaluate_tests.rs"]
mod tests;

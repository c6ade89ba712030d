//! Finding the agent's working directory in a request, and substituting it for `{{cwd}}`.
//!
//! Each agent states its working directory in its prompt in its own words; the markers are
//! tried in order across every string of the request, so the first agent-specific marker wins
//! no matter where in the request (system prompt, messages, input items) it appears.

use serde_json::Value;

/// The placeholder replaced by the working directory.
const PLACEHOLDER: &str = "{{cwd}}";

/// How an agent announces its working directory: a prefix, and what ends the path.
struct Marker {
    prefix: &'static str,
    /// `None`: the path ends at whitespace; `Some(c)`: it ends at `c`.
    terminator: Option<char>,
}

const MARKERS: [Marker; 3] = [
    // OpenCode's system prompt.
    Marker {
        prefix: "Working directory: ",
        terminator: None,
    },
    // Claude Code's environment section.
    Marker {
        prefix: "Primary working directory: ",
        terminator: None,
    },
    // Codex's <environment_context>.
    Marker {
        prefix: "<cwd>",
        terminator: Some('<'),
    },
];

/// The working directory the agent reports in `body`, if any.
pub(crate) fn find_cwd(body: &Value) -> Option<String> {
    let mut strings = Vec::new();
    collect_strings(body, &mut strings);
    MARKERS
        .iter()
        .find_map(|marker| strings.iter().find_map(|s| marker.find_in(s)))
}

/// `text` with every `{{cwd}}` replaced, or unchanged when the directory is unknown.
pub(crate) fn substitute_str(text: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(cwd) => text.replace(PLACEHOLDER, cwd),
        None => text.to_string(),
    }
}

/// `value` with `{{cwd}}` replaced in every string value, at any depth.
pub(crate) fn substitute_value(value: &Value, cwd: Option<&str>) -> Value {
    map_strings(value, &|s| substitute_str(s, cwd))
}

/// `value` with `f` applied to every string value, at any depth (keys are kept).
pub(crate) fn map_strings(value: &Value, f: &impl Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(f(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| map_strings(v, f)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), map_strings(v, f)))
                .collect(),
        ),
        other => other.clone(),
    }
}

impl Marker {
    fn find_in(&self, text: &str) -> Option<String> {
        text.match_indices(self.prefix).find_map(|(at, _)| {
            let rest = &text[at + self.prefix.len()..];
            let end = match self.terminator {
                None => rest.find(char::is_whitespace),
                Some(c) => rest.find(c),
            }
            .unwrap_or(rest.len());
            let path = rest[..end].trim();
            (!path.is_empty()).then(|| path.to_string())
        })
    }
}

pub(crate) fn collect_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| collect_strings(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_strings(v, out)),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn finds_opencode_cwd_in_system_prompt() {
        let body = json!({"messages": [
            {"role": "system", "content": "You are opencode.\n<env>\n  Working directory: /tmp/oc/work\n  Is directory a git repo: yes\n</env>"},
            {"role": "user", "content": "hi"}
        ]});
        assert_eq!(find_cwd(&body).as_deref(), Some("/tmp/oc/work"));
    }

    #[test]
    fn finds_claude_cwd_in_a_system_role_message() {
        let body = json!({
            "system": [{"type": "text", "text": "You are a Claude agent."}],
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "system", "content": [{"type": "text", "text": "# Environment\n - Primary working directory: /tmp/cc/work\n - Is a git repository: false"}]}
            ]
        });
        assert_eq!(find_cwd(&body).as_deref(), Some("/tmp/cc/work"));
    }

    #[test]
    fn finds_codex_cwd_in_environment_context() {
        let body = json!({"input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text",
             "text": "<environment_context>\n  <cwd>/tmp/cx/work dir</cwd>\n  <shell>bash</shell>\n</environment_context>"}]}
        ]});
        assert_eq!(find_cwd(&body).as_deref(), Some("/tmp/cx/work dir"));
    }

    #[test]
    fn earlier_marker_wins_and_absence_is_none() {
        let body = json!([
            "<cwd>/from/codex</cwd>",
            "Working directory: /from/opencode"
        ]);
        assert_eq!(find_cwd(&body).as_deref(), Some("/from/opencode"));
        assert_eq!(
            find_cwd(&json!({"messages": ["Working directory: "]})),
            None
        );
    }

    #[test]
    fn substitutes_recursively_in_strings_only() {
        let args = json!({"filePath": "{{cwd}}/a.txt", "n": 1, "list": ["{{cwd}}", {"deep": "x{{cwd}}y"}]});
        assert_eq!(
            substitute_value(&args, Some("/w")),
            json!({"filePath": "/w/a.txt", "n": 1, "list": ["/w", {"deep": "x/wy"}]})
        );
        assert_eq!(substitute_value(&args, None), args);
        assert_eq!(substitute_str("in {{cwd}}", Some("/w")), "in /w");
    }
}

//! Choosing the scripted turn for a request, from what the wire module read out of it.

use crate::script::{Script, Turn};

/// What the selection needs to know about a request, whatever its wire format.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Conversation {
    /// Text of the last user message that is real user input (not a tool result).
    pub user_message: Option<String>,
    /// Assistant turns since that message.
    pub turn: usize,
    /// Whether the request offers any tools.
    pub tooled: bool,
    /// Number of history entries; makes generated tool call ids unique within a conversation.
    pub history_len: usize,
    /// Tools declared as freeform (`"type": "custom"`, Responses API): called with raw input.
    pub custom_tools: Vec<String>,
}

/// The reply chosen for a request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Selection<'a> {
    /// Label of the matching scenario, if any (untooled requests have none).
    pub scenario: Option<&'a str>,
    /// The turn to play.
    pub turn: &'a Turn,
}

/// Picks the reply: untooled requests get `untooled`; otherwise the first scenario whose
/// `match` occurs in the user message supplies `turns[turn]`, falling back to `default`.
pub(crate) fn select<'a>(
    script: &'a Script,
    conversation: &Conversation,
    api: crate::log::Api,
) -> Selection<'a> {
    let message = conversation.user_message.as_deref().unwrap_or_default();
    let scenario = script.scenarios.iter().find(|s| {
        (conversation.tooled || s.untooled)
            && !s.matches.is_empty()
            && message.contains(&s.matches)
            && s.and.iter().all(|more| message.contains(more.as_str()))
            && s.api.is_none_or(|wanted| wanted == api)
    });
    if !conversation.tooled && scenario.is_none() {
        return Selection {
            scenario: None,
            turn: &script.untooled,
        };
    }
    match scenario {
        Some(s) => Selection {
            scenario: Some(s.label()),
            turn: s.turns.get(conversation.turn).unwrap_or(&script.default),
        },
        None => Selection {
            scenario: None,
            turn: &script.default,
        },
    }
}

/// Counts maximal runs of model-produced entries after the last real user entry. A run is one
/// turn because a single reply can become several history entries (text plus parallel tool
/// calls); entries classified `Neutral` (e.g. system messages) neither count nor break a run.
pub(crate) fn count_turns_after<T>(
    entries: &[T],
    classify: impl Fn(&T) -> Entry,
) -> (Option<usize>, usize) {
    let last_user = entries
        .iter()
        .rposition(|e| matches!(classify(e), Entry::User));
    let start = last_user.map_or(0, |i| i + 1);
    let mut turns = 0;
    let mut in_run = false;
    for entry in &entries[start..] {
        match classify(entry) {
            Entry::Model => {
                if !in_run {
                    turns += 1;
                }
                in_run = true;
            }
            Entry::User | Entry::ToolResult => in_run = false,
            Entry::Neutral => {}
        }
    }
    (last_user, turns)
}

/// How a history entry counts for turn selection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// Real user input.
    User,
    /// A result of a tool call (even if sent with a user role).
    ToolResult,
    /// Produced by the model: text, tool calls, reasoning.
    Model,
    /// Anything else (system/developer messages, unknown items).
    Neutral,
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;
    use crate::script::Scenario;

    fn script() -> Script {
        Script::new(vec![
            Scenario::new("CREATE", vec![Turn::text("zero"), Turn::text("one")]),
            Scenario::new(
                "CREATE-FILE",
                vec![Turn::text("never: earlier scenario wins")],
            ),
        ])
    }

    fn conversation(message: &str, turn: usize) -> Conversation {
        Conversation {
            user_message: Some(message.to_string()),
            turn,
            tooled: true,
            ..Conversation::default()
        }
    }

    #[test]
    fn a_scenario_can_require_more_substrings_and_one_api() {
        use crate::log::Api;
        let judge_cycle_two = Scenario {
            and: vec!["cycle: 2".to_owned()],
            api: Some(Api::Anthropic),
            ..Scenario::new("TASK", vec![Turn::text("judge 2")])
        };
        let script = Script::new(vec![
            judge_cycle_two,
            Scenario::new("TASK", vec![Turn::text("agent")]),
        ]);
        let pick =
            |message: &str, api| select(&script, &conversation(message, 0), api).turn.clone();
        assert_eq!(
            pick("TASK, cycle: 2", Api::Anthropic),
            Turn::text("judge 2")
        );
        assert_eq!(pick("TASK, cycle: 1", Api::Anthropic), Turn::text("agent"));
        assert_eq!(pick("TASK, cycle: 2", Api::Chat), Turn::text("agent"));
    }

    #[test]
    fn untooled_requests_reach_only_scenarios_that_accept_them() {
        let judge = Scenario {
            untooled: true,
            ..Scenario::new("JUDGE", vec![Turn::text("{\"done\": true}")])
        };
        let script = Script::new(vec![
            judge,
            Scenario::new("AGENT", vec![Turn::text("tooled")]),
        ]);
        let untooled = |message: &str| Conversation {
            tooled: false,
            ..conversation(message, 0)
        };
        let pick = |c: &Conversation| select(&script, c, crate::log::Api::Chat).turn.clone();
        assert_eq!(
            pick(&untooled("JUDGE this")),
            Turn::text("{\"done\": true}")
        );
        assert_eq!(pick(&untooled("AGENT title")), script.untooled);
    }

    #[test]
    fn first_matching_scenario_supplies_the_indexed_turn() {
        let script = script();
        let picked = select(
            &script,
            &conversation("please CREATE-FILE now", 1),
            crate::log::Api::Chat,
        );
        assert_eq!(picked.scenario, Some("CREATE"));
        assert_eq!(picked.turn, &Turn::text("one"));
    }

    #[test]
    fn past_the_last_turn_or_unmatched_gets_default() {
        let script = script();
        let past = select(&script, &conversation("CREATE", 2), crate::log::Api::Chat);
        assert_eq!(past.scenario, Some("CREATE"));
        assert_eq!(past.turn, &script.default);
        let none = select(&script, &conversation("hello", 0), crate::log::Api::Chat);
        assert_eq!(none.scenario, None);
        assert_eq!(none.turn, &script.default);
    }

    #[test]
    fn untooled_requests_get_untooled_even_when_matching() {
        let script = script();
        let mut title = conversation("CREATE", 0);
        title.tooled = false;
        let picked = select(&script, &title, crate::log::Api::Chat);
        assert_eq!(picked.scenario, None);
        assert_eq!(picked.turn, &script.untooled);
    }

    #[test]
    fn counts_runs_after_the_last_user_entry() {
        use Entry::*;
        let history = [
            User, Model, ToolResult, User, Neutral, Model, Model, ToolResult, ToolResult, Neutral,
            Model,
        ];
        assert_eq!(count_turns_after(&history, |e| *e), (Some(3), 2));
        assert_eq!(
            count_turns_after(&[Model, ToolResult, Model], |e| *e),
            (None, 2)
        );
        assert_eq!(count_turns_after(&[User], |e| *e), (Some(0), 0));
    }
}

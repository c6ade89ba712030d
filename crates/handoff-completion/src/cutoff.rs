//! Cut-off detection (part of docs/completion.md, Steps: Deterministic checks first): a turn that
//! ended "normally" may still have been cut off — the model hit its output limit, or it stopped
//! after tool calls with an empty or near-empty answer, or with a todo still marked in progress.
//! Such a stop is not a finish, whatever the policy.

/// Finish reasons that mean the model's output was truncated (OpenAI `length`, Anthropic
/// `max_tokens`, Responses `max_output_tokens`, Gemini `MAX_TOKENS`).
const TRUNCATED: [&str; 4] = ["length", "max_tokens", "max_output_tokens", "incomplete"];

/// A final answer at most this many output tokens long, after tool activity, is a stop, not a
/// report of finished work.
pub const TINY_TOKENS: u64 = 2;

/// A final answer with fewer non-blank characters than this, after tool activity, is tiny.
const TINY_CHARS: usize = 4;

/// What the last turn showed (the engine reads it from the executor's events).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnSignals {
    /// The finish reason of the turn's last model step, as the executor reported it.
    pub finish_reason: Option<String>,
    /// Output tokens of the turn's last model step, when reported.
    pub last_output_tokens: Option<u64>,
    /// Tool calls the turn made.
    pub tool_calls: usize,
    /// The text after the turn's last tool call (empty when there was none).
    pub final_answer: String,
    /// Todo items still marked `in_progress`.
    pub in_progress: Vec<String>,
}

/// Why the turn looks cut off, or `None` when it looks like a deliberate stop.
pub fn detect(turn: &TurnSignals) -> Option<String> {
    if let Some(reason) = &turn.finish_reason
        && TRUNCATED.contains(&reason.to_ascii_lowercase().as_str())
    {
        return Some(format!(
            "the last model step was cut off (finish reason `{reason}`)"
        ));
    }
    if let Some(item) = turn.in_progress.first() {
        return Some(format!("it stopped with a todo still in progress: {item}"));
    }
    if turn.tool_calls == 0 {
        return None;
    }
    let chars = turn
        .final_answer
        .chars()
        .filter(|c| !c.is_whitespace())
        .count();
    if chars == 0 {
        return Some("it stopped after tool calls without a final answer".to_owned());
    }
    let tokens_tiny = turn.last_output_tokens.is_some_and(|t| t <= TINY_TOKENS);
    if tokens_tiny || chars < TINY_CHARS {
        return Some(format!(
            "it stopped after tool calls with a near-empty answer ({chars} characters)"
        ));
    }
    None
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn after_tools(answer: &str, tokens: Option<u64>) -> TurnSignals {
        TurnSignals {
            finish_reason: Some("stop".to_owned()),
            last_output_tokens: tokens,
            tool_calls: 2,
            final_answer: answer.to_owned(),
            in_progress: Vec::new(),
        }
    }

    #[test]
    fn truncation_finish_reasons_are_cut_offs() {
        for reason in ["length", "max_tokens", "MAX_TOKENS", "max_output_tokens"] {
            let turn = TurnSignals {
                finish_reason: Some(reason.to_owned()),
                final_answer: "A long and complete looking answer".to_owned(),
                ..TurnSignals::default()
            };
            assert!(detect(&turn).unwrap().contains(reason), "{reason}");
        }
    }

    #[test]
    fn empty_or_tiny_answers_after_tool_calls_are_cut_offs() {
        assert!(detect(&after_tools("", None)).unwrap().contains("without"));
        assert!(detect(&after_tools("  \n", Some(0))).is_some());
        assert!(detect(&after_tools("ok", None)).is_some());
        assert!(
            detect(&after_tools("Done now", Some(2))).is_some(),
            "a 2-token stop"
        );
        assert_eq!(
            detect(&after_tools("I wrote a.txt and ran the tests.", Some(9))),
            None
        );
        assert_eq!(detect(&after_tools("Done now", None)), None);
    }

    #[test]
    fn a_todo_in_progress_is_a_cut_off_and_a_short_answer_without_tools_is_not() {
        let turn = TurnSignals {
            in_progress: vec!["write b.txt".to_owned()],
            final_answer: "All good, finished.".to_owned(),
            ..TurnSignals::default()
        };
        assert!(detect(&turn).unwrap().contains("write b.txt"));
        let chat = TurnSignals {
            final_answer: "4".to_owned(),
            last_output_tokens: Some(1),
            ..TurnSignals::default()
        };
        assert_eq!(detect(&chat), None);
    }
}

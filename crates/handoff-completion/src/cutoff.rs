//! Cut-off detection (part of docs/completion.md, Steps: Deterministic checks first): a turn that
//! ended "normally" may still have been cut off — the model hit its output limit, it stopped
//! with no answer at all, after tool calls with a near-empty answer, with a todo still in
//! progress, or with a short answer and no change when nothing says the task wants only an
//! answer. Such a stop is not a finish, whatever the policy. Length alone cannot tell "Sure."
//! from "1024": the task's own fields ([`AnswerRule`]) or the judge decide.

/// Finish reasons that mean the model's output was truncated (OpenAI `length`, Anthropic
/// `max_tokens`, Responses `max_output_tokens`, Gemini `MAX_TOKENS`).
const TRUNCATED: [&str; 4] = ["length", "max_tokens", "max_output_tokens", "incomplete"];

/// A final answer at most this many output tokens long, after tool activity, is a stop, not a
/// report of finished work.
pub const TINY_TOKENS: u64 = 2;

/// A final answer with fewer non-blank characters than this, after tool activity, is tiny.
const TINY_CHARS: usize = 4;

/// A final answer with fewer non-blank characters than this is short: with no change made, it
/// reports no work unless the task wants only an answer.
pub const SHORT_CHARS: usize = 40;

/// What decides whether a short answer with no change can be the task's result.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AnswerRule {
    /// Nothing says so: a short answer that changed nothing is a stop.
    #[default]
    Unsaid,
    /// The task's fields say an answer alone may be the result (`requires_changes: false`).
    AnswerOnly,
    /// A judge reads the task and the answer and decides ([`answer_note`] tells it to).
    Judged,
}

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
    /// The task's diff is empty (nothing changed since the run started).
    pub diff_empty: bool,
    /// Whether a short answer alone may be the result.
    pub answer: AnswerRule,
    /// The turn was a model's: it reported a message, a tool call or a model step. A plain
    /// command's run is not, and has no answer to judge (its exit code is its verdict).
    pub model_turn: bool,
}

impl TurnSignals {
    fn answer_chars(&self) -> usize {
        self.final_answer
            .chars()
            .filter(|c| !c.is_whitespace())
            .count()
    }
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
    if !turn.model_turn {
        return None;
    }
    let chars = turn.answer_chars();
    if chars == 0 {
        return Some(if turn.tool_calls == 0 {
            "it stopped without a final answer".to_owned()
        } else {
            "it stopped after tool calls without a final answer".to_owned()
        });
    }
    let tokens_tiny = turn.last_output_tokens.is_some_and(|t| t <= TINY_TOKENS);
    if turn.tool_calls > 0 && !turn.diff_empty && (tokens_tiny || chars < TINY_CHARS) {
        return Some(format!(
            "it stopped after tool calls with a near-empty answer ({chars} characters)"
        ));
    }
    if turn.diff_empty && chars < SHORT_CHARS && turn.answer == AnswerRule::Unsaid {
        return Some(format!(
            "it answered in {chars} characters and changed nothing (a task that wants only an \
             answer is submitted with `completion.requires_changes: false`)"
        ));
    }
    None
}

/// What the judge is told about a short answer with no change, for it to decide.
pub fn answer_note(turn: &TurnSignals) -> Option<String> {
    let chars = turn.answer_chars();
    let judged = turn.model_turn && turn.answer == AnswerRule::Judged;
    (judged && turn.diff_empty && chars < SHORT_CHARS).then(|| {
        format!(
            "the final answer is {chars} characters and no file changed: done only if the task \
             asks for an answer alone and this answer is it"
        )
    })
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
            model_turn: true,
            ..TurnSignals::default()
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
    fn a_todo_in_progress_is_a_cut_off_and_a_short_answer_after_changes_without_tools_is_not() {
        let turn = TurnSignals {
            in_progress: vec!["write b.txt".to_owned()],
            final_answer: "All good, finished.".to_owned(),
            ..TurnSignals::default()
        };
        assert!(detect(&turn).unwrap().contains("write b.txt"));
        let continued = TurnSignals {
            final_answer: "Yes.".to_owned(),
            last_output_tokens: Some(1),
            model_turn: true,
            ..TurnSignals::default()
        };
        assert_eq!(detect(&continued), None);
        let command = TurnSignals {
            diff_empty: true,
            ..TurnSignals::default()
        };
        assert_eq!(
            detect(&command),
            None,
            "a plain command has no answer to judge"
        );
    }

    fn answered(answer: &str, tool_calls: usize, rule: AnswerRule) -> TurnSignals {
        TurnSignals {
            finish_reason: Some("stop".to_owned()),
            last_output_tokens: Some(2),
            tool_calls,
            final_answer: answer.to_owned(),
            diff_empty: true,
            answer: rule,
            model_turn: true,
            ..TurnSignals::default()
        }
    }

    #[test]
    fn an_empty_answer_is_always_a_cut_off() {
        for rule in [
            AnswerRule::Unsaid,
            AnswerRule::AnswerOnly,
            AnswerRule::Judged,
        ] {
            assert!(
                detect(&answered("", 0, rule))
                    .unwrap()
                    .contains("without a final answer")
            );
            assert!(detect(&answered(" \n", 1, rule)).is_some());
        }
    }

    #[test]
    fn a_short_answer_with_no_change_stands_only_where_the_task_or_a_judge_says_so() {
        for (answer, tools) in [("Sure.", 0), ("1024", 1)] {
            let unsaid = detect(&answered(answer, tools, AnswerRule::Unsaid)).unwrap();
            assert!(unsaid.contains("requires_changes: false"), "{unsaid}");
            assert_eq!(
                detect(&answered(answer, tools, AnswerRule::AnswerOnly)),
                None
            );
            let judged = answered(answer, tools, AnswerRule::Judged);
            assert_eq!(detect(&judged), None);
            assert!(answer_note(&judged).unwrap().contains("answer alone"));
            assert_eq!(
                answer_note(&answered(answer, tools, AnswerRule::Unsaid)),
                None
            );
        }
        let long = "The failing test expects UTC; the code uses local time.";
        assert_eq!(detect(&answered(long, 0, AnswerRule::Unsaid)), None);
        assert_eq!(answer_note(&answered(long, 0, AnswerRule::Judged)), None);
    }
}

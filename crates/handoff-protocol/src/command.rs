//! A command to a running task, in one shape wherever it goes: from a tool, the CLI or the
//! dashboard to the task's supervisor, in the same process or posted through the shared store
//! to the instance holding the task. Plain serde data (a run's submission queue), so the
//! in-process value and the JSON between instances are one type.

use handoff_task::AgentId;
use serde::{Deserialize, Serialize};

use crate::tasks::ApprovalAnswer;

/// What a task's owner (or an operator) asks of its running supervisor.
///
/// As JSON: `{"command": "cancel", "reason": "…"}`, `{"command": "pause"}`, …; commands
/// posted for another instance are stored in this form, so it never changes incompatibly.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case", deny_unknown_fields)]
pub enum TaskCommand {
    /// Stop for good.
    Cancel {
        /// Why, in words.
        reason: String,
    },
    /// Freeze the executor's processes.
    Pause,
    /// Unfreeze them.
    Resume,
    /// Deliver a message into the running executor.
    Message {
        /// The text as the executor should read it.
        text: String,
    },
    /// Stop because the task's budget is spent (the model gateway saw it).
    Exhaust {
        /// Which cap, in words.
        reason: String,
    },
    /// Answer one of the executor's pending requests.
    Answer {
        /// The answer (naming the request, or the oldest).
        answer: ApprovalAnswer,
        /// Who answers (checked again when read from another instance's post).
        by: AgentId,
    },
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tasks::AnswerScope;

    #[test]
    fn commands_round_trip_under_their_tag() {
        let by = AgentId::parse("agent-a").unwrap();
        let commands = [
            TaskCommand::Cancel {
                reason: "stop".into(),
            },
            TaskCommand::Pause,
            TaskCommand::Resume,
            TaskCommand::Message { text: "hi".into() },
            TaskCommand::Exhaust {
                reason: "1000 tokens".into(),
            },
            TaskCommand::Answer {
                answer: ApprovalAnswer::allow(AnswerScope::Task).for_request(Some("per_1".into())),
                by,
            },
        ];
        for command in commands {
            let value = serde_json::to_value(&command).unwrap();
            assert_eq!(
                serde_json::from_value::<TaskCommand>(value).unwrap(),
                command
            );
        }
    }

    // Commands posted for another instance wait in the store as JSON text: a row an older
    // server wrote (its `WireCommand`) must still read as the same command.
    #[test]
    fn commands_stored_by_an_older_server_still_read() {
        let stored = [
            (
                r#"{"command":"cancel","reason":"requested by op in the dashboard"}"#,
                TaskCommand::Cancel {
                    reason: "requested by op in the dashboard".into(),
                },
            ),
            (r#"{"command":"pause"}"#, TaskCommand::Pause),
            (r#"{"command":"resume"}"#, TaskCommand::Resume),
            (
                r#"{"command":"message","text":"[instruction] go on"}"#,
                TaskCommand::Message {
                    text: "[instruction] go on".into(),
                },
            ),
            (
                r#"{"command":"answer","answer":{"decision":"allow","scope":"always","request_id":"per_1","patterns":["ls *"]},"by":"agent-a"}"#,
                TaskCommand::Answer {
                    answer: ApprovalAnswer {
                        patterns: vec!["ls *".into()],
                        ..ApprovalAnswer::allow(AnswerScope::Task).for_request(Some("per_1".into()))
                    },
                    by: AgentId::parse("agent-a").unwrap(),
                },
            ),
            (
                r#"{"command":"answer","answer":{"decision":"deny","message":"no"},"by":"agent-a"}"#,
                TaskCommand::Answer {
                    answer: ApprovalAnswer::deny().with_message(Some("no".into())),
                    by: AgentId::parse("agent-a").unwrap(),
                },
            ),
        ];
        for (text, command) in stored {
            assert_eq!(
                serde_json::from_str::<TaskCommand>(text).unwrap(),
                command,
                "{text}"
            );
        }
    }

    #[test]
    fn forged_or_unknown_commands_are_refused() {
        for text in [
            r#"{"command":"answer","answer":{"decision":"allow"},"by":"not an agent!"}"#,
            r#"{"command":"cancel"}"#,
            r#"{"command":"cancel","reason":"x","extra":1}"#,
            r#"{"command":"rm"}"#,
            r#"{"query":"files"}"#,
        ] {
            assert!(serde_json::from_str::<TaskCommand>(text).is_err(), "{text}");
        }
    }
}

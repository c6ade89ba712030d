//! Commands, queries and replies as they travel between instances through the store (JSON
//! text). A command is the protocol's [`TaskCommand`] itself, as in process. A reply is not
//! the in-process [`CommandReply`]: that one carries live values (a boxed task), this one only
//! what the other side cannot read from the store itself, and the kind of a refusal.

use handoff_protocol::TaskCommand;
use handoff_runner::InputRequest;
use handoff_task::TaskId;
use serde::{Deserialize, Serialize};

use crate::{EngineError, FileChunk, FileListing, shared::Shared, supervisor::CommandReply};

/// What one instance posts for another: a command for a run it holds, or a question about the
/// files of a task it ran (they are on its disk).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub(super) enum Posted {
    Command(TaskCommand),
    Query(WireQuery),
}

/// A question about a task's working directory, answered from the disk of the instance that
/// ran it (the caller checked who may read the task).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "query", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum WireQuery {
    Files {
        path: Option<String>,
    },
    ReadFile {
        path: String,
        offset: u64,
        max_bytes: u64,
    },
}

/// What kind of refusal a [`WireReply::Failed`] carries, so the caller's error keeps its kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum FailureKind {
    NotFound,
    Forbidden,
    Conflict,
    Unavailable,
    /// An argument was refused; the reply's `field` names it.
    Invalid,
    Other,
}

/// The argument names a refusal from another instance may carry (the engine's are static).
const FIELDS: [&str; 4] = ["file_path", "path", "offset", "max_bytes"];

/// A supervisor's answer (or its absence) on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "reply", rename_all = "snake_case", deny_unknown_fields)]
pub(super) enum WireReply {
    /// The holder has no run of the task (it ended meanwhile).
    NoRun,
    Stopping,
    /// The task afterwards is read from the store by the caller.
    Steered {
        changed: bool,
        message: String,
    },
    Message {
        delivered: bool,
        note: String,
    },
    Answered {
        request: InputRequest,
    },
    Listing {
        listing: FileListing,
    },
    Chunk {
        chunk: FileChunk,
    },
    Failed {
        kind: FailureKind,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        field: Option<String>,
    },
}

impl WireReply {
    /// The holder's supervisor's answer, ready to post.
    pub(super) fn from_result(result: Result<Option<CommandReply>, EngineError>) -> Self {
        match result {
            Ok(None) => Self::NoRun,
            Ok(Some(CommandReply::Stopping)) => Self::Stopping,
            Ok(Some(CommandReply::Steered {
                changed, message, ..
            })) => Self::Steered { changed, message },
            Ok(Some(CommandReply::Message { delivered, note })) => {
                Self::Message { delivered, note }
            }
            Ok(Some(CommandReply::Answered(request))) => Self::Answered { request },
            Err(e) => Self::failed(e),
        }
    }

    /// A refusal, keeping its kind (and the field an argument error names).
    pub(super) fn failed(error: EngineError) -> Self {
        let (kind, message, field) = match error {
            EngineError::NotFound(id) => (FailureKind::NotFound, id, None),
            EngineError::Forbidden(m) => (FailureKind::Forbidden, m, None),
            EngineError::Conflict(m) => (FailureKind::Conflict, m, None),
            EngineError::Unavailable(m) => (FailureKind::Unavailable, m, None),
            EngineError::Invalid { field, message } => {
                (FailureKind::Invalid, message, Some(field.to_owned()))
            }
            other => (FailureKind::Other, other.to_string(), None),
        };
        Self::Failed {
            kind,
            message,
            field,
        }
    }

    /// The error a [`WireReply::Failed`] stands for; any other reply passes through.
    pub(super) fn into_error(self) -> Result<Self, EngineError> {
        let Self::Failed {
            kind,
            message,
            field,
        } = self
        else {
            return Ok(self);
        };
        Err(match kind {
            FailureKind::NotFound => EngineError::NotFound(message),
            FailureKind::Forbidden => EngineError::Forbidden(message),
            FailureKind::Unavailable => EngineError::Unavailable(message),
            FailureKind::Invalid => match FIELDS.iter().find(|f| Some(**f) == field.as_deref()) {
                Some(field) => EngineError::invalid(field, message),
                None => EngineError::Conflict(message),
            },
            // What the executor could not do reads as the conflict it is for the caller.
            FailureKind::Conflict | FailureKind::Other => EngineError::Conflict(message),
        })
    }

    /// The reply as the caller's engine returns it (a steered task re-read from the store).
    pub(super) async fn into_reply(
        self,
        shared: &Shared,
        id: &TaskId,
    ) -> Result<Option<CommandReply>, EngineError> {
        Ok(Some(match self.into_error()? {
            Self::NoRun => return Ok(None),
            Self::Stopping => CommandReply::Stopping,
            Self::Steered { changed, message } => {
                let task = shared
                    .store
                    .get_task(id)
                    .await?
                    .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
                CommandReply::Steered {
                    task: Box::new(task),
                    changed,
                    message,
                }
            }
            Self::Message { delivered, note } => CommandReply::Message { delivered, note },
            Self::Answered { request } => CommandReply::Answered(request),
            other => {
                return Err(EngineError::Internal(format!(
                    "a command was answered as a query: {other:?}"
                )));
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use handoff_protocol::{AgentId, tasks::ApprovalAnswer};

    use super::*;

    #[test]
    fn commands_survive_the_wire() {
        let by = AgentId::parse("agent-a").unwrap();
        let commands = [
            TaskCommand::Cancel {
                reason: "stop".into(),
            },
            TaskCommand::Pause,
            TaskCommand::Resume,
            TaskCommand::Message { text: "hi".into() },
            TaskCommand::Answer {
                answer: ApprovalAnswer::deny().with_message(Some("no".into())),
                by,
            },
        ];
        for command in commands {
            let text = serde_json::to_string(&Posted::Command(command.clone())).unwrap();
            let back: Posted = serde_json::from_str(&text).unwrap();
            assert_eq!(back, Posted::Command(command), "{text}");
        }
    }

    // A row an older server posted (its `WireCommand`'s JSON) is still taken as the command.
    #[test]
    fn commands_posted_by_an_older_server_still_read() {
        let text = r#"{"command":"cancel","reason":"requested by op in the dashboard"}"#;
        assert_eq!(
            serde_json::from_str::<Posted>(text).unwrap(),
            Posted::Command(TaskCommand::Cancel {
                reason: "requested by op in the dashboard".into()
            })
        );
        let text =
            r#"{"command":"answer","answer":{"decision":"allow","scope":"once"},"by":"agent-a"}"#;
        assert!(matches!(
            serde_json::from_str::<Posted>(text).unwrap(),
            Posted::Command(TaskCommand::Answer { .. })
        ));
    }

    #[test]
    fn a_forged_answerer_is_refused() {
        let text = r#"{"command":"answer","answer":{"decision":"allow"},"by":"not an agent!"}"#;
        assert!(serde_json::from_str::<Posted>(text).is_err());
    }

    #[test]
    fn refusals_keep_their_kind() {
        let reply = WireReply::from_result(Err(EngineError::Conflict("no pending request".into())));
        let text = serde_json::to_string(&reply).unwrap();
        assert_eq!(
            serde_json::from_str::<WireReply>(&text).unwrap(),
            WireReply::Failed {
                kind: FailureKind::Conflict,
                message: "no pending request".into(),
                field: None,
            }
        );
        assert_eq!(
            WireReply::from_result(Err(EngineError::NotFound("task_x".into()))),
            WireReply::Failed {
                kind: FailureKind::NotFound,
                message: "task_x".into(),
                field: None,
            }
        );
        let invalid = WireReply::failed(EngineError::invalid("file_path", "must not contain `..`"));
        let text = serde_json::to_string(&invalid).unwrap();
        let back = serde_json::from_str::<WireReply>(&text)
            .unwrap()
            .into_error();
        assert!(
            matches!(
                back,
                Err(EngineError::Invalid {
                    field: "file_path",
                    ..
                })
            ),
            "{back:?}"
        );
    }

    #[test]
    fn commands_and_queries_are_told_apart() {
        let pause: Posted = serde_json::from_str(r#"{"command":"pause"}"#).unwrap();
        assert_eq!(pause, Posted::Command(TaskCommand::Pause));
        let files: Posted = serde_json::from_str(r#"{"query":"files","path":"src"}"#).unwrap();
        assert_eq!(
            files,
            Posted::Query(WireQuery::Files {
                path: Some("src".into())
            })
        );
        assert!(serde_json::from_str::<Posted>(r#"{"query":"rm","path":"/"}"#).is_err());
    }
}

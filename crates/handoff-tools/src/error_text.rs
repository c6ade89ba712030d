//! A failed call as a model reads it: the code and what went wrong, then how to fix it. The
//! machine-readable body ([`ToolError::body`]) travels beside it, for programs.

use crate::ToolError;

impl ToolError {
    /// The text of a failed call: `Error CODE: what went wrong.` then `Fix: …`. As bounded as
    /// the message it repeats (a caller's values appear only as excerpts).
    pub fn text(&self) -> String {
        let message = self.to_string();
        let stop = if message.ends_with(['.', '!', '?']) {
            ""
        } else {
            "."
        };
        format!(
            "Error {}: {message}{stop}\nFix: {}",
            self.code(),
            self.fix()
        )
    }

    /// What the caller can do about it.
    fn fix(&self) -> String {
        match self {
            ToolError::UnknownTool { .. } => {
                "call one of the tools tools/list names, spelled exactly.".to_owned()
            }
            ToolError::InvalidArguments { tool, pointer, .. } => {
                // A long pointer is already in the message once; the answer stays small.
                let field = match pointer.as_str() {
                    "" => "the arguments",
                    short if short.len() <= 80 => short,
                    _ => "the field named above",
                };
                format!(
                    "correct {field} as the message says (the tool's input schema lists every \
                     field) and call {tool} again."
                )
            }
            ToolError::Denied { .. } => "do not repeat the same call: it will be refused again. \
                 get_audit_log shows the decision; ask the operator if the rule is wrong."
                .to_owned(),
            ToolError::Timeout { .. } => "the call ran out of time, not necessarily the work: \
                 check list_tasks or get_task_status before calling again."
                .to_owned(),
            ToolError::Cancelled { .. } => "the call was cancelled; call again if you still \
                 need it."
                .to_owned(),
            ToolError::NotFound { what } => not_found_fix(what),
            ToolError::Busy { retry_after, .. } => {
                let wait = retry_after.map_or_else(|| "1 s".to_owned(), wait_text);
                format!("wait {wait}, then call again with the same arguments.")
            }
            ToolError::Conflict { .. } => "the request does not fit the task's state now: \
                 get_task_status shows it."
                .to_owned(),
            ToolError::NotSetUp { .. } => "the server is not set up for this yet; its operator \
                 must fix it (`handoff doctor` on the server says what is missing), and the same \
                 call fails the same way until then."
                .to_owned(),
            ToolError::Unsupported { .. } => "this cannot be done here; do it another way \
                 (cancel instead of pause, or another executor)."
                .to_owned(),
            ToolError::Internal { .. } => "a failure inside Handoff (its log has the details); \
                 try again later, and tell the operator if it persists."
                .to_owned(),
        }
    }
}

/// Unknown ids and other agents' ids look alike, so the fix names where the caller's own are.
fn not_found_fix(what: &str) -> String {
    let listed = if what.starts_with("task ") {
        "list_tasks shows your tasks"
    } else if what.starts_with("tool output ") {
        "output ids come from truncation notices and are kept 7 days"
    } else if what.starts_with("approval ") {
        "list_approvals shows your approvals"
    } else {
        "check the id you sent"
    };
    format!("it does not exist or is not yours: {listed}.")
}

/// A wait as the fix says it: milliseconds under a second, else whole seconds rounded up (a
/// caller that waits what it reads is never early).
fn wait_text(wait: std::time::Duration) -> String {
    let ms = wait.as_millis();
    if ms < 1_000 {
        format!("{} ms", ms.max(1))
    } else {
        format!("{} s", ms.div_ceil(1_000))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use handoff_protocol::codes;

    use super::*;

    #[test]
    fn an_invalid_argument_names_the_field_and_the_fix() {
        let error = ToolError::InvalidArguments {
            tool: "execute_task".into(),
            pointer: "/timeout_ms".into(),
            message: "0 is less than the minimum of 1".into(),
        };
        insta::assert_snapshot!(error.text(), @r"
        Error INVALID_ARGUMENTS: invalid arguments for tool `execute_task`: /timeout_ms: 0 is less than the minimum of 1.
        Fix: correct /timeout_ms as the message says (the tool's input schema lists every field) and call execute_task again.
        ");
    }

    #[test]
    fn a_missing_task_points_at_list_tasks() {
        let error = ToolError::NotFound {
            what: "task task_abc".into(),
        };
        insta::assert_snapshot!(error.text(), @r"
        Error NOT_FOUND: task task_abc not found.
        Fix: it does not exist or is not yours: list_tasks shows your tasks.
        ");
    }

    #[test]
    fn a_busy_server_says_how_long_to_wait() {
        let error = ToolError::Busy {
            code: codes::QUEUE_FULL,
            message: "the queue is full (100 tasks)".into(),
            retry_after: Some(Duration::from_millis(2500)),
        };
        let text = error.text();
        assert!(
            text.starts_with("Error QUEUE_FULL: the queue is full"),
            "{text}"
        );
        // Never less than asked: 2.5 s is 3 s, and under a second it is said in milliseconds,
        // as the message says it.
        assert!(text.ends_with("Fix: wait 3 s, then call again with the same arguments."));
        let error = ToolError::Busy {
            code: codes::RATE_LIMITED,
            message: "too many submissions from agent a; retry in 102ms".into(),
            retry_after: Some(Duration::from_millis(102)),
        };
        assert!(
            error
                .text()
                .ends_with("Fix: wait 102 ms, then call again with the same arguments.")
        );
    }

    #[test]
    fn every_error_text_starts_with_its_code_and_stays_bounded() {
        let huge = "x".repeat(1 << 20);
        let errors = [
            ToolError::UnknownTool { name: huge.clone() },
            ToolError::InvalidArguments {
                tool: "ping".into(),
                pointer: format!("/{huge}"),
                message: huge.clone(),
            },
            ToolError::Denied {
                tool: "ping".into(),
                reason: huge.clone(),
            },
            ToolError::Timeout {
                tool: "ping".into(),
                after: Duration::from_secs(3),
            },
            ToolError::Cancelled {
                tool: "ping".into(),
            },
            ToolError::NotFound { what: huge.clone() },
            ToolError::Conflict {
                message: huge.clone(),
            },
            ToolError::Unsupported {
                message: huge.clone(),
            },
            ToolError::NotSetUp {
                message: huge.clone(),
            },
            ToolError::Internal { message: huge },
        ];
        for error in errors {
            let text = error.text();
            assert!(
                text.starts_with(&format!("Error {}: ", error.code())),
                "{text}"
            );
            assert!(text.contains("\nFix: "), "{text}");
            assert!(text.len() < 2048, "{} bytes", text.len());
        }
    }
}

//! The tools' names on the wire (`tools/call` `name`), and the older names still accepted.

/// `execute_task`: hand a development task to a coding agent.
pub const EXECUTE_TASK: &str = "execute_task";
/// Older names of `execute_task`, accepted for calls but never listed.
pub const EXECUTE_TASK_ALIASES: &[&str] = &["opencode_execute_task"];
/// `get_task_status`: where a task stands.
pub const GET_TASK_STATUS: &str = "get_task_status";
/// `get_task_history`: the full, paged record of a task.
pub const GET_TASK_HISTORY: &str = "get_task_history";
/// `list_tasks`: the caller's tasks, newest first.
pub const LIST_TASKS: &str = "list_tasks";
/// `send_task_message`: tell a task's executor something, or answer its request.
pub const SEND_TASK_MESSAGE: &str = "send_task_message";
/// `send_task_control`: cancel, pause or resume a task.
pub const SEND_TASK_CONTROL: &str = "send_task_control";
/// `get_task_files`: list a task's working directory.
pub const GET_TASK_FILES: &str = "get_task_files";
/// `read_task_file`: read (part of) a file a task produced.
pub const READ_TASK_FILE: &str = "read_task_file";
/// `list_approvals`: the caller's standing approvals.
pub const LIST_APPROVALS: &str = "list_approvals";
/// `revoke_approval`: remove a standing approval.
pub const REVOKE_APPROVAL: &str = "revoke_approval";
/// `get_audit_log`: permission decisions about the caller's calls and tasks.
pub const GET_AUDIT_LOG: &str = "get_audit_log";
/// `ping`: is the server there, and which agent does it see.
pub const PING: &str = "ping";
/// `health`: version, uptime, subsystem readiness, task counts.
pub const HEALTH: &str = "health";
/// `read_tool_output`: the rest of a tool result that was cut.
pub const READ_TOOL_OUTPUT: &str = "read_tool_output";

/// The task tools, in the order the server registers them.
pub const TASK_TOOLS: [&str; 11] = [
    EXECUTE_TASK,
    GET_TASK_STATUS,
    GET_TASK_HISTORY,
    LIST_TASKS,
    SEND_TASK_MESSAGE,
    SEND_TASK_CONTROL,
    GET_TASK_FILES,
    READ_TASK_FILE,
    LIST_APPROVALS,
    REVOKE_APPROVAL,
    GET_AUDIT_LOG,
];

/// The tools every Handoff instance serves, whatever is enabled.
pub const BUILTIN_TOOLS: [&str; 3] = [PING, HEALTH, READ_TOOL_OUTPUT];

/// Every tool a Handoff instance lists, in `tools/list` order (by name): the list clients and
/// tests compare what they see against.
pub fn listed() -> Vec<&'static str> {
    let mut all: Vec<&'static str> = TASK_TOOLS.into_iter().chain(BUILTIN_TOOLS).collect();
    all.sort_unstable();
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire names, spelled out once: renaming a tool breaks every client that calls it,
    /// so it shows up here in review (the test crates compare against [`listed`]).
    #[test]
    fn the_listed_tools_are_every_tool_once_in_name_order() {
        assert_eq!(
            listed(),
            [
                "execute_task",
                "get_audit_log",
                "get_task_files",
                "get_task_history",
                "get_task_status",
                "health",
                "list_approvals",
                "list_tasks",
                "ping",
                "read_task_file",
                "read_tool_output",
                "revoke_approval",
                "send_task_control",
                "send_task_message",
            ]
        );
    }
}

//! The task tools' arguments and results (names kept from the older server so existing agents
//! keep working).

mod approval_answer;
mod approvals;
mod audit;
mod control;
mod execute;
mod files;
mod history;
mod list;
mod message;
mod status;

pub use approval_answer::{AnswerDecision, AnswerScope, ApprovalAnswer};
pub use approvals::{
    ListApprovalsArgs, ListApprovalsOutput, RevokeApprovalArgs, RevokeApprovalOutput,
};
pub use audit::{GetAuditLogArgs, GetAuditLogOutput};
pub use control::{ControlAction, SendTaskControlArgs, SendTaskControlOutput};
pub use execute::{ExecuteTaskArgs, ExecuteTaskOutput, TaskRule, TaskRuleAction};
pub use files::{
    FileEntryView, GetTaskFilesArgs, GetTaskFilesOutput, ReadTaskFileArgs, ReadTaskFileOutput,
};
pub use history::{ARTIFACT_VIEW_BYTES, ArtifactView, GetTaskHistoryArgs, GetTaskHistoryOutput};
pub use list::{LIST_TEXT_MAX_CHARS, ListTasksArgs, ListTasksOutput};
pub use message::{SendTaskMessageArgs, SendTaskMessageOutput};
pub use status::{GetTaskStatusArgs, GetTaskStatusOutput, PendingInputView};

//! Handoff's task domain, shared by every layer: who asks ([`AgentId`]), what a task is
//! ([`Task`], [`TaskId`]), which states it moves through and which moves are legal
//! ([`TaskStatus`]), what it leaves behind ([`TaskEvent`], [`Artifact`]), and the permission
//! rules a caller or operator writes ([`PermissionRule`]; `handoff-policy` judges them).

mod agent;
mod answer;
mod approval;
mod artifact;
mod completion;
mod delivery;
mod diff_stat;
mod event;
mod event_lines;
pub mod faults;
mod id;
mod input;
mod matrix;
mod mcp_server;
mod model_usage;
mod permission;
mod principal;
mod status;
mod task;
mod workspace;

pub use agent::{AgentId, InvalidAgentId};
pub use answer::closing_answer;
pub use approval::{Approval, ApprovalScope, AuditRecord};
pub use artifact::{Artifact, ArtifactBody, ArtifactKind};
pub use completion::{CompletionBudget, CompletionPolicy, CompletionSpec, InvalidCompletion};
pub use delivery::Delivery;
pub use diff_stat::{DiffStat, FileStat, stat as diff_stat, stat_of_body as diff_stat_of_body};
pub use event::{EventKind, NewEvent, TaskEvent};
pub use event_lines::EventLines;
pub use id::{InvalidTaskId, TaskId};
pub use input::PendingInput;
pub use matrix::{InvalidMatrixUserId, InvalidObserver, MatrixUserId, ObserverId, valid_server};
pub use mcp_server::{AcpMcpServer, McpTransport};
pub use model_usage::ModelUsage;
pub use permission::{PermissionAction, PermissionRule};
pub use principal::Principal;
pub use status::{IllegalTransition, TaskStatus, UnknownStatus};
pub use task::{
    ExitInfo, Lease, MessageType, NewTask, RepeatGuard, Task, TaskOptions, unix_millis_now,
};
pub use workspace::{BlockPhase, NotifyState, WorkspaceRecord};

//! `read_tool_output`: the rest of a tool result that was cut.

use handoff_task::AgentId;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{call::tool_call, names};

/// Arguments of `read_tool_output`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadToolOutputArgs {
    /// Calling agent (defaults to the x-agent-id header).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<AgentId>,
    /// The id a truncation notice named (`tool_` + 32 hex digits).
    #[schemars(regex(pattern = r"^tool_[0-9a-f]{32}$"))]
    pub output_id: String,
    /// Byte offset to read from (default 0).
    #[schemars(range(min = 0))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Bytes to read (default and most: 32 KiB).
    #[schemars(range(min = 1, max = 32768))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub limit: Option<u32>,
    /// Lines to read at most (default 1000, so a page is never cut again).
    #[schemars(range(min = 1, max = 2000))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<u32>,
}

/// Result of `read_tool_output`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ReadToolOutputOutput {
    /// The output read.
    pub output_id: String,
    /// The text from `offset` (whole characters only).
    pub text: String,
    /// Where it starts.
    pub offset: u64,
    /// The full output's size in bytes.
    pub total_bytes: u64,
    /// Where the next page starts; absent at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_offset: Option<u64>,
}

tool_call! {
    ReadToolOutputArgs => names::READ_TOOL_OUTPUT, ReadToolOutputOutput;
}

use handoff_policy::output::{SpillDir, SpillError};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::{AgentId, Tool, ToolAnnotations, ToolContext, ToolError};

/// Arguments of `read_tool_output`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadToolOutputArgs {
    /// Calling agent (defaults to the x-agent-id header).
    pub agent_id: Option<AgentId>,
    /// The id a truncation notice named (`tool_` + 32 hex digits).
    #[schemars(regex(pattern = r"^tool_[0-9a-f]{32}$"))]
    pub output_id: String,
    /// Byte offset to read from (default 0).
    #[schemars(range(min = 0))]
    pub offset: Option<u64>,
    /// Bytes to read (default and most: 32 KiB).
    #[schemars(range(min = 1, max = 32768))]
    pub limit: Option<u32>,
    /// Lines to read at most (default 1000, so a page is never cut again).
    #[schemars(range(min = 1, max = 2000))]
    pub lines: Option<u32>,
}

/// Result of `read_tool_output`.
#[derive(Debug, Serialize, JsonSchema)]
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

/// `read_tool_output`: the rest of a tool result that was cut.
pub struct ReadToolOutputTool {
    spill: SpillDir,
}

impl ReadToolOutputTool {
    /// A tool reading spilled outputs from `spill`.
    pub fn new(spill: SpillDir) -> Self {
        Self { spill }
    }
}

const PAGE: u32 = 32 * 1024;

impl Tool for ReadToolOutputTool {
    type Args = ReadToolOutputArgs;
    type Output = ReadToolOutputOutput;

    fn name(&self) -> &'static str {
        "read_tool_output"
    }

    fn description(&self) -> &'static str {
        "Read the full text of a tool result that was truncated: the notice in the result names \
         its output id. Page through it with offset (bytes) and limit (bytes) / lines; next_offset \
         says where the next page starts. Outputs are kept 7 days."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            idempotent: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(
        &self,
        _ctx: ToolContext,
        args: ReadToolOutputArgs,
    ) -> Result<ReadToolOutputOutput, ToolError> {
        let limit = args.limit.unwrap_or(PAGE).min(PAGE) as usize;
        let spill = self.spill.clone();
        let id = args.output_id.clone();
        let offset = args.offset.unwrap_or(0);
        let lines = args.lines.unwrap_or(1000) as usize;
        let page = tokio::task::spawn_blocking(move || spill.read(&id, offset, limit, lines))
            .await
            .map_err(|e| ToolError::Internal {
                message: e.to_string(),
            })?
            .map_err(|e| match e {
                SpillError::BadId(_) => ToolError::InvalidArguments {
                    tool: self.name().to_owned(),
                    pointer: "/output_id".to_owned(),
                    message: e.to_string(),
                },
                SpillError::Missing(_) => ToolError::NotFound {
                    what: format!("tool output {}", args.output_id),
                },
                SpillError::Io { .. } => ToolError::Internal {
                    message: e.to_string(),
                },
            })?;
        Ok(ReadToolOutputOutput {
            output_id: args.output_id,
            text: page.text,
            offset: page.offset,
            total_bytes: page.total_bytes,
            next_offset: page.next_offset,
        })
    }
}

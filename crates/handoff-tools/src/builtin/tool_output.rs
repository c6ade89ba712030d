use handoff_policy::output::{SpillDir, SpillError};
use handoff_protocol::{
    builtin::{ReadToolOutputArgs, ReadToolOutputOutput},
    names,
};

use super::text;
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

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
        names::READ_TOOL_OUTPUT
    }

    fn description(&self) -> &'static str {
        "Read the full text of a tool result that was truncated: the notice in the result names \
         its output id. Page through it with offset (bytes) and limit (bytes) / lines; next_offset \
         says where the next page starts. Outputs are kept 7 days, readable only by the agent \
         whose call produced them."
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
        ctx: ToolContext,
        args: ReadToolOutputArgs,
    ) -> Result<Reply<ReadToolOutputOutput>, ToolError> {
        let limit = args.limit.unwrap_or(PAGE).min(PAGE) as usize;
        let reader = ctx.principal();
        let spill = self.spill.owned_by(reader.as_ref());
        let id = args.output_id.clone();
        let offset = args.offset.unwrap_or(0);
        let lines = args.lines.unwrap_or(1000) as usize;
        // An operator reads every caller's outputs, as it reads every task; anyone else only
        // its own, and another's id is "not found" exactly as an unknown one.
        let any = reader.as_ref().is_some_and(|r| r.is_operator());
        let page = tokio::task::spawn_blocking(move || {
            if any {
                spill.read_any(&id, offset, limit, lines)
            } else {
                spill.read(&id, offset, limit, lines)
            }
        })
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
        let output = ReadToolOutputOutput {
            output_id: args.output_id,
            text: page.text,
            offset: page.offset,
            total_bytes: page.total_bytes,
            next_offset: page.next_offset,
        };
        let text = text::tool_output(&output);
        Ok(Reply::new(output, text))
    }
}

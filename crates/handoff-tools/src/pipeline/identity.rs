//! Who calls: settled once per call, from what the edge established and the `agent_id`
//! argument, into the call's context. Every later stage and every tool reads the caller from
//! the context ([`ToolContext::principal`]); nothing writes it back into the arguments.

use serde_json::{Map, Value};

use crate::{AgentId, ToolContext, ToolDefinition, ToolError};

/// Settles the caller of a call to `def` in `ctx`. The edge's identity stands; an `agent_id`
/// argument may repeat it, or choose one where the edge established none (an open server, a
/// gateway without a header); an operator stays itself and the argument names whose tasks it
/// acts on; a caller with neither acts as the configured fallback agent. Only tools that take
/// an `agent_id` read the argument or the fallback: for the others the schema refuses it.
pub(super) fn settle(
    ctx: &mut ToolContext,
    def: &ToolDefinition,
    args: &Map<String, Value>,
) -> Result<(), ToolError> {
    // An operator without a name has nobody to act as: it calls as any other caller.
    if ctx.operator && ctx.agent_id.is_none() {
        ctx.operator = false;
    }
    if !def.takes_agent_id() {
        return Ok(());
    }
    let explicit = match args.get("agent_id") {
        None | Some(Value::Null) => {
            if ctx.agent_id.is_none() {
                ctx.agent_id = ctx.fallback_agent.clone();
            }
            return Ok(());
        }
        Some(Value::String(explicit)) => explicit,
        // Any other type is the schema's to refuse.
        Some(_) => return Ok(()),
    };
    let invalid = |message: String| ToolError::InvalidArguments {
        tool: def.name.to_owned(),
        pointer: "/agent_id".to_owned(),
        message,
    };
    let agent = AgentId::parse(explicit).map_err(|e| invalid(e.to_string()))?;
    if ctx.operator {
        return Ok(());
    }
    match &ctx.agent_id {
        Some(known) if known != &agent => Err(invalid(
            "is not the identity this connection authenticated as; omit it (the x-agent-id header or the token decides who calls)".to_owned(),
        )),
        _ => {
            ctx.agent_id = Some(agent);
            Ok(())
        }
    }
}

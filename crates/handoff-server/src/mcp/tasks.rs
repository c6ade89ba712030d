//! The Tasks extension (`io.modelcontextprotocol/tasks`) on the wire: Handoff's task handles as
//! `CreateTaskResult` / `tasks/get` results, and `tasks/update` answers as engine answers.

use std::collections::BTreeMap;

use handoff_task::Principal;
use handoff_tools::handles::{Handle, HandleError, HandleState, TaskHandles};
use rmcp::{
    ErrorData as McpError,
    model::{
        CreateTaskResult, DetailedTask, ElicitRequest, ElicitResult, GetTaskResult, InputRequest,
        InputResponses, JsonObject, Task, TaskPayload, TaskStatus,
    },
};
use serde_json::{Value, json};

use super::{answer, elicit};

/// A handle's seed state, as `tools/call` returns it to a client that declared the extension.
pub(crate) fn created(handle: &Handle) -> CreateTaskResult {
    CreateTaskResult::new(task(handle))
}

/// The `tasks/get` answer.
pub(crate) fn detailed(handle: &Handle) -> Result<GetTaskResult, McpError> {
    let payload = match &handle.state {
        HandleState::Working { .. } => TaskPayload::Working,
        HandleState::InputRequired { requests } => {
            let task_id = handle.task_id.to_string();
            let input_requests = requests
                .iter()
                .map(|request| {
                    let form = ElicitRequest::new(elicit::form(&task_id, request));
                    (request.id.clone(), InputRequest::Elicitation(form))
                })
                .collect();
            TaskPayload::InputRequired { input_requests }
        }
        HandleState::Completed { output, text } => {
            let structured = serde_json::to_value(output)
                .map_err(|e| McpError::internal_error(e.to_string(), None))?;
            // The same result a `sync` execute_task call returns.
            let result = super::convert::answered(structured, text.clone());
            TaskPayload::Completed {
                result: object(serde_json::to_value(result))?,
            }
        }
        HandleState::Failed { message } => TaskPayload::Failed {
            error: object(Ok(json!({
                "code": rmcp::model::ErrorCode::INTERNAL_ERROR.0,
                "message": message,
            })))?,
        },
        HandleState::Cancelled { .. } => TaskPayload::Cancelled,
    };
    Ok(GetTaskResult::new(DetailedTask::new(task(handle), payload)))
}

fn object(value: Result<Value, serde_json::Error>) -> Result<JsonObject, McpError> {
    match value {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(McpError::internal_error(
            format!("expected a JSON object, got {other}"),
            None,
        )),
        Err(e) => Err(McpError::internal_error(e.to_string(), None)),
    }
}

fn task(handle: &Handle) -> Task {
    let status = match handle.state {
        HandleState::Working { .. } => TaskStatus::Working,
        HandleState::InputRequired { .. } => TaskStatus::InputRequired,
        HandleState::Completed { .. } => TaskStatus::Completed,
        HandleState::Failed { .. } => TaskStatus::Failed,
        HandleState::Cancelled { .. } => TaskStatus::Cancelled,
    };
    let mut task = Task::new(
        handle.task_id.to_string(),
        status,
        iso(handle.created_at_ms),
        iso(handle.updated_at_ms),
    )
    .with_ttl_ms(handle.ttl_ms)
    .with_poll_interval_ms(handle.poll_interval_ms);
    let message = match &handle.state {
        HandleState::Working { message }
        | HandleState::Failed { message }
        | HandleState::Cancelled { message } => Some(message.clone()),
        HandleState::InputRequired { requests } => Some(format!(
            "waiting for {} answer{}",
            requests.len(),
            if requests.len() == 1 { "" } else { "s" }
        )),
        HandleState::Completed { output, .. } => Some(output.message.clone()),
    };
    if let Some(message) = message {
        task = task.with_status_message(message);
    }
    task
}

/// Unix milliseconds as ISO 8601 (UTC, millisecond precision).
fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// `tasks/update`: each response answers the pending request with the same key; keys that
/// name no pending request are ignored, as the extension says. A response that does not fit
/// its form is `-32602` naming the field, and then no response is applied.
pub(crate) async fn update(
    handles: &TaskHandles,
    agent: &Principal,
    task_id: &str,
    responses: InputResponses,
) -> Result<(), McpError> {
    let handle = handles.get(agent, task_id).await.map_err(to_mcp)?;
    let HandleState::InputRequired { requests } = handle.state else {
        return Ok(());
    };
    let mut parsed = BTreeMap::new();
    for (key, value) in responses {
        let Some(request) = requests.iter().find(|r| r.id == key) else {
            continue;
        };
        // serde's message would quote the bad value back: say what is expected instead.
        let result: ElicitResult = serde_json::from_value(value).map_err(|_| {
            McpError::invalid_params(
                format!(
                    "inputResponses.{key}: not an elicitation result ({{\"action\": \"accept\"|\"decline\"|\"cancel\", \"content\"?: the form's values}})"
                ),
                None,
            )
        })?;
        let answer = answer::parse(request.kind, &result).map_err(|bad| {
            McpError::invalid_params(
                format!("inputResponses.{key}.{}: {}", bad.field, bad.problem),
                None,
            )
        })?;
        parsed.insert(key, answer);
    }
    // Every response is checked before any is applied, so a bad one changes nothing.
    for (key, answer) in parsed {
        handles
            .answer(agent, task_id, &key, answer)
            .await
            .map_err(to_mcp)?;
    }
    Ok(())
}

/// Handle errors as JSON-RPC errors: unknown (and foreign) ids are `-32602`.
pub(crate) fn to_mcp(error: HandleError) -> McpError {
    match error {
        HandleError::Unknown(id) => McpError::invalid_params(format!("unknown task: {id}"), None),
        HandleError::Conflict(message) => McpError::invalid_params(message, None),
        // JSON-RPC has no code for "retry later": the data names the tool error code and the
        // wait, as a failed tool call's `_meta` does.
        HandleError::Unavailable {
            message,
            retry_after_ms,
        } => McpError::internal_error(
            message,
            Some(serde_json::json!({
                "code": handoff_protocol::codes::UNAVAILABLE,
                "retry_after_ms": retry_after_ms,
            })),
        ),
        HandleError::Internal(message) => McpError::internal_error(message, None),
    }
}

/// The identity every `tasks/*` call is checked against; without one no task is visible.
pub(crate) fn require_agent(
    agent: Option<Principal>,
    task_id: &str,
) -> Result<Principal, McpError> {
    agent.ok_or_else(|| to_mcp(HandleError::unknown(task_id)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use handoff_runner::{InputKind, InputRequest as ExecutorRequest};
    use handoff_task::TaskId;

    use super::*;

    fn handle(state: HandleState) -> Handle {
        Handle {
            task_id: TaskId::parse("task_aaaaaaaaaaaaaaaaaaaaaaaaaa").unwrap(),
            created_at_ms: 1_700_000_000_000,
            updated_at_ms: 1_700_000_001_500,
            ttl_ms: 60_000,
            poll_interval_ms: 1_000,
            state,
        }
    }

    #[test]
    fn a_created_handle_has_the_flat_wire_shape() {
        let wire = serde_json::to_value(created(&handle(HandleState::Working {
            message: "queued (position 1)".into(),
        })))
        .unwrap();
        assert_eq!(wire["resultType"], "task");
        assert_eq!(wire["status"], "working");
        assert_eq!(wire["statusMessage"], "queued (position 1)");
        assert_eq!(wire["createdAt"], "2023-11-14T22:13:20.000Z");
        assert_eq!(wire["lastUpdatedAt"], "2023-11-14T22:13:21.500Z");
        assert_eq!(wire["ttlMs"], 60_000);
        assert_eq!(wire["pollIntervalMs"], 1_000);
    }

    #[test]
    fn input_required_carries_one_form_per_request() {
        let request = ExecutorRequest {
            id: "per_7".into(),
            kind: InputKind::Permission,
            permission: "bash".into(),
            patterns: vec!["touch x".into()],
            title: "touch x".into(),
            detail: json!({}),
        };
        let wire = serde_json::to_value(
            detailed(&handle(HandleState::InputRequired {
                requests: vec![request],
            }))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(wire["status"], "input_required");
        let form = &wire["inputRequests"]["per_7"];
        assert_eq!(form["method"], "elicitation/create");
        assert_eq!(form["params"]["mode"], "form");
        assert_eq!(
            form["params"]["requestedSchema"]["properties"]["decision"]["enum"],
            json!(["allow", "deny"])
        );
    }

    #[test]
    fn failures_of_the_request_are_json_rpc_errors() {
        let wire = serde_json::to_value(
            detailed(&handle(HandleState::Failed {
                message: "executor `nope` could not start".into(),
            }))
            .unwrap(),
        )
        .unwrap();
        assert_eq!(wire["status"], "failed");
        assert_eq!(wire["error"]["code"], -32603);
        assert!(wire.get("result").is_none());
    }

    #[test]
    fn an_unreachable_store_is_a_retry_hint_not_a_bare_internal_error() {
        let error = to_mcp(HandleError::from(
            handoff_engine::EngineError::Unreachable {
                message: "the task store is unreachable: Connection refused; retry in 2 s".into(),
                retry_after: std::time::Duration::from_secs(2),
            },
        ));
        let data = error.data.expect("a retry hint");
        assert_eq!(data["code"], "UNAVAILABLE");
        assert_eq!(data["retry_after_ms"], 2_000);
        assert!(error.message.contains("unreachable"), "{}", error.message);
    }
}

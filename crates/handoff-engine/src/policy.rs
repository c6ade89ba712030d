//! Decisions on an executor's permission requests — the same engine Handoff's own tools use:
//! PreToolUse hooks, then the layered rules (operator's layers plus the task's own), with the
//! agent's standing approvals turning asks into allows; a loop guard over the executor's tool
//! calls; and the static part of the rules handed to executors that can apply it themselves.

use std::path::Path;

use handoff_config::{Config, PermissionPolicy};
use handoff_policy::{
    Grant, Layer, PermissionAction, PermissionRequest, PermissionRule, RuleStack,
    hooks::{HookEvent, HookInput, HookRunner, HookVerdict},
    permissions::{is_command_permission, preset_rules, split_command},
};
use handoff_runner::InputRequest;
use handoff_store::Store;
use handoff_task::Task;
use serde_json::{Value, json};

use crate::EngineError;

/// How an executor's request was decided.
#[derive(Debug, Clone)]
pub(crate) struct ExecutorDecision {
    /// Allow, ask the owner, or deny.
    pub action: PermissionAction,
    /// Which stage decided (`permission`, `hook`, `approval`, `loop_guard`).
    pub stage: &'static str,
    /// Why, in words.
    pub reason: String,
    /// Rules matched, hook verdict, approvals used.
    pub detail: Value,
}

/// Rules and hooks for every task of one engine (stateless: each run's loop guard belongs to
/// its supervisor).
pub(crate) struct TaskPolicy {
    operator: RuleStack,
    hooks: HookRunner,
    git_repository: Option<String>,
}

/// Claude Code's name for an executor permission, so hooks written for Claude Code match.
pub(crate) fn hook_tool_name(permission: &str) -> String {
    match permission {
        "bash" | "shell" => "Bash",
        "edit" => "Edit",
        "write" => "Write",
        "read" => "Read",
        "glob" => "Glob",
        "grep" => "Grep",
        "list" => "LS",
        "webfetch" => "WebFetch",
        "websearch" => "WebSearch",
        "task" => "Task",
        "todowrite" => "TodoWrite",
        other => other,
    }
    .to_owned()
}

impl TaskPolicy {
    pub(crate) fn new(config: &Config) -> Self {
        let operator = RuleStack::new()
            .with_layer(Layer::Defaults, &PermissionPolicy::default().rules)
            .with_layer(Layer::Global, &config.executors.permissions.rules);
        Self {
            operator,
            hooks: HookRunner::new(config.hooks.clone()),
            git_repository: config
                .tasks
                .git_repository
                .as_ref()
                .map(|p| p.display().to_string()),
        }
    }

    /// The rules for `task`: the operator's, then the task's own (the operator's alone, not
    /// copied, when the task has none — the common case, on every request).
    pub(crate) fn stack_for(&self, task: &Task) -> std::borrow::Cow<'_, RuleStack> {
        if task.options.permissions.is_empty() {
            return std::borrow::Cow::Borrowed(&self.operator);
        }
        std::borrow::Cow::Owned(
            self.operator
                .clone()
                .with_layer(Layer::Task, &task.options.permissions),
        )
    }

    /// The rules an executor may apply itself for `task`.
    pub(crate) fn preset_for(&self, task: &Task) -> Vec<PermissionRule> {
        let hooks = self.hooks.config();
        preset_rules(&self.stack_for(task), |permission| {
            hooks.intercepts(&hook_tool_name(permission))
        })
    }

    /// The project a task's approvals are shared in: the caller's directory, else the
    /// repository tasks are checked out from, else the agent's default project (`""`).
    pub(crate) fn project_of(&self, task: &Task) -> String {
        if task.options.caller_workdir {
            task.workdir.clone()
        } else {
            self.git_repository.clone().unwrap_or_default()
        }
    }

    /// Runs one hook event for `task` (not tool events; see [`TaskPolicy::decide`]).
    /// Runs a task-level hook; `stop_hook_active` tells a Stop hook it already refused once.
    pub(crate) async fn task_hook(
        &self,
        event: HookEvent,
        task: &Task,
        status: Option<&str>,
        stop_hook_active: bool,
    ) -> HookVerdict {
        if !self.hooks.config().has(event) {
            return HookVerdict::default();
        }
        let mut input = HookInput::new(event, task.id.as_str(), &task.workdir);
        input.task_id = Some(task.id.to_string());
        input.agent_id = Some(task.agent_id.to_string());
        input.status = status.map(str::to_owned);
        if event == HookEvent::Stop {
            input.stop_hook_active = Some(stop_hook_active);
        }
        self.hooks
            .run(event, &input, Path::new(&task.workdir))
            .await
    }

    /// What the PreToolUse hooks say about one permission request (nothing when none is set).
    async fn pre_tool_use(&self, task: &Task, request: &InputRequest) -> HookVerdict {
        if !self.hooks.config().has(HookEvent::PreToolUse) {
            return HookVerdict::default();
        }
        let mut input = HookInput::new(HookEvent::PreToolUse, task.id.as_str(), &task.workdir);
        input.tool_name = Some(hook_tool_name(&request.permission));
        input.tool_input = Some(tool_input(request));
        input.tool_use_id = Some(request.id.clone());
        input.task_id = Some(task.id.to_string());
        input.agent_id = Some(task.agent_id.to_string());
        self.hooks
            .run(HookEvent::PreToolUse, &input, Path::new(&task.workdir))
            .await
    }

    /// Decides one permission request of `task`'s executor.
    pub(crate) async fn decide(
        &self,
        store: &dyn Store,
        task: &Task,
        request: &InputRequest,
    ) -> Result<ExecutorDecision, EngineError> {
        let hook = self.pre_tool_use(task, request).await;
        let approvals = store
            .approvals_for_task(&task.agent_id, &task.id, &self.project_of(task))
            .await?;
        let grants: Vec<Grant> = approvals
            .iter()
            .map(|a| Grant {
                id: a.id.clone(),
                permission: a.permission.clone(),
                pattern: a.pattern.clone(),
            })
            .collect();
        let verdict = self.stack_for(task).evaluate(
            &PermissionRequest {
                permission: &request.permission,
                patterns: &request.patterns,
                agent: Some(task.agent_id.as_str()),
                cwd: Some(&task.workdir),
                headless: false,
            },
            &grants,
        );
        let detail = json!({
            "request_id": request.id,
            "patterns": request.patterns,
            "parts": verdict.parts,
            "hook": hook.decision.map(PermissionAction::as_str),
            "hook_reason": hook.reason,
            "hooks_ran": hook.ran,
            "hook_errors": hook.errors,
        });
        let used_grant = verdict
            .parts
            .iter()
            .any(|p| matches!(p.source, handoff_policy::RuleSource::Grant { .. }));
        let rules_stage = if used_grant && verdict.action == PermissionAction::Allow {
            "approval"
        } else {
            "permission"
        };
        // A configured deny stands whatever a hook says; a hook's deny or ask stands over the
        // rules' allow; a hook's allow only spares the owner a prompt.
        let (action, stage, reason) = match (verdict.action, hook.decision) {
            (PermissionAction::Deny, _) => (PermissionAction::Deny, rules_stage, verdict.reason()),
            (_, Some(PermissionAction::Deny)) => (
                PermissionAction::Deny,
                "hook",
                hook.reason
                    .clone()
                    .unwrap_or_else(|| "denied by a PreToolUse hook".to_owned()),
            ),
            (_, Some(PermissionAction::Ask)) => (
                PermissionAction::Ask,
                "hook",
                hook.reason
                    .clone()
                    .unwrap_or_else(|| "a PreToolUse hook asks for approval".to_owned()),
            ),
            (PermissionAction::Ask, Some(PermissionAction::Allow)) => (
                PermissionAction::Allow,
                "hook",
                hook.reason
                    .clone()
                    .unwrap_or_else(|| "allowed by a PreToolUse hook".to_owned()),
            ),
            (action, _) => (action, rules_stage, verdict.reason()),
        };
        Ok(ExecutorDecision {
            action,
            stage,
            reason,
            detail,
        })
    }
}

/// What a hook sees as the tool's input: the executor's own input when it sent one, else the
/// command or paths asked about.
fn tool_input(request: &InputRequest) -> Value {
    if let Some(input) = request.detail.get("input").filter(|v| v.is_object()) {
        return input.clone();
    }
    if is_command_permission(&request.permission) {
        json!({ "command": request.patterns.join(" && ") })
    } else if let [path] = request.patterns.as_slice() {
        json!({ "file_path": path })
    } else {
        json!({ "patterns": request.patterns })
    }
}

/// The subjects an approval of `request` grants, one per command part or path shown.
pub(crate) fn granted_subjects(request: &InputRequest) -> Vec<String> {
    if !is_command_permission(&request.permission) {
        return request.patterns.clone();
    }
    let mut out = Vec::new();
    for line in &request.patterns {
        match split_command(line) {
            Some(parts) if !parts.is_empty() => out.extend(parts),
            _ => out.push(line.clone()),
        }
    }
    out.dedup();
    out
}

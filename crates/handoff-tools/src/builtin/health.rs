use std::{
    collections::BTreeMap,
    sync::{Arc, RwLock},
    time::{Instant, SystemTime},
};

use handoff_protocol::{
    builtin::{
        ComponentReport, ExecutorsReport, HealthArgs, HealthReport, InstanceReport, TaskCounts,
    },
    names,
};

use super::{VERSION, text, unix_millis};
use crate::{Reply, Tool, ToolAnnotations, ToolContext, ToolError};

/// Live service state that subsystems update and health reports read.
#[derive(Debug)]
pub struct ServiceStatus {
    started: Instant,
    started_at: SystemTime,
    components: RwLock<BTreeMap<String, (bool, String)>>,
    tasks: RwLock<Option<TaskCounts>>,
    instances: RwLock<Vec<InstanceReport>>,
    executors: RwLock<Option<ExecutorsReport>>,
}

impl Default for ServiceStatus {
    fn default() -> Self {
        Self {
            started: Instant::now(),
            started_at: SystemTime::now(),
            components: RwLock::default(),
            tasks: RwLock::default(),
            instances: RwLock::default(),
            executors: RwLock::default(),
        }
    }
}

impl ServiceStatus {
    /// Fresh state; uptime counts from now.
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Records a subsystem's readiness; credentials in the detail (a configured URL's
    /// password) are masked, since health is shown to every caller.
    pub fn set_component(&self, name: impl Into<String>, ready: bool, detail: impl Into<String>) {
        let detail = handoff_config::mask_setting_text(&detail.into());
        let mut map = self.components.write().unwrap_or_else(|p| p.into_inner());
        map.insert(name.into(), (ready, detail));
    }

    /// Records task counts.
    pub fn set_tasks(&self, counts: TaskCounts) {
        *self.tasks.write().unwrap_or_else(|p| p.into_inner()) = Some(counts);
    }

    /// Records the instances sharing the task store.
    pub fn set_instances(&self, instances: Vec<InstanceReport>) {
        *self.instances.write().unwrap_or_else(|p| p.into_inner()) = instances;
    }

    /// Records the executors tasks may name, and the default one.
    pub fn set_executors(&self, default: impl Into<String>, available: Vec<String>) {
        *self.executors.write().unwrap_or_else(|p| p.into_inner()) = Some(ExecutorsReport {
            default: default.into(),
            available,
        });
    }

    /// Whether every registered component is ready.
    pub fn ready(&self) -> bool {
        let map = self.components.read().unwrap_or_else(|p| p.into_inner());
        map.values().all(|(ready, _)| *ready)
    }

    /// The current report.
    pub fn report(&self) -> HealthReport {
        let components: Vec<ComponentReport> = self
            .components
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|(name, (ready, detail))| ComponentReport {
                name: name.clone(),
                ready: *ready,
                detail: detail.clone(),
            })
            .collect();
        let all_ready = components.iter().all(|c| c.ready);
        HealthReport {
            status: if all_ready { "ok" } else { "degraded" }.to_owned(),
            server: "handoff".to_owned(),
            version: VERSION.to_owned(),
            uptime_ms: u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX),
            started_at_ms: unix_millis(self.started_at),
            components,
            tasks: *self.tasks.read().unwrap_or_else(|p| p.into_inner()),
            instances: self
                .instances
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
            executors: self
                .executors
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .clone(),
        }
    }
}

/// `health`: version, uptime, subsystem readiness and task counts.
#[derive(Debug, Clone)]
pub struct HealthTool {
    status: Arc<ServiceStatus>,
}

impl HealthTool {
    /// A health tool reading `status`.
    pub fn new(status: Arc<ServiceStatus>) -> Self {
        Self { status }
    }
}

impl Tool for HealthTool {
    type Args = HealthArgs;
    type Output = HealthReport;

    fn name(&self) -> &'static str {
        names::HEALTH
    }

    fn description(&self) -> &'static str {
        "Report Handoff's health: version, uptime, readiness of each subsystem (store, \
         executors, integrations), running/queued task counts and the instances sharing the \
         task store with the tasks each holds."
    }

    fn annotations(&self) -> ToolAnnotations {
        ToolAnnotations {
            read_only: true,
            idempotent: true,
            ..ToolAnnotations::default()
        }
    }

    async fn call(&self, _: ToolContext, _: HealthArgs) -> Result<Reply<HealthReport>, ToolError> {
        let report = self.status.report();
        let text = text::health(&report);
        Ok(Reply::new(report, text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_credentials_in_details_are_masked() {
        let status = ServiceStatus::new();
        status.set_component(
            "letta",
            true,
            "Letta at http://u:letta-pw@127.0.0.1:8283 answers",
        );
        let report = serde_json::to_string(&status.report()).unwrap();
        assert!(!report.contains("letta-pw"), "{report}");
        assert!(report.contains("127.0.0.1:8283"), "{report}");
    }

    #[test]
    fn degraded_when_a_component_is_not_ready() {
        let status = ServiceStatus::new();
        assert_eq!(status.report().status, "ok");
        status.set_component("store", false, "opening");
        assert_eq!(status.report().status, "degraded");
        assert!(!status.ready());
        status.set_component("store", true, "sqlite");
        assert!(status.ready());
        status.set_tasks(TaskCounts {
            active: 1,
            queued: 2,
        });
        assert_eq!(
            status.report().tasks,
            Some(TaskCounts {
                active: 1,
                queued: 2
            })
        );
    }
}

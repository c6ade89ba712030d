//! The composition root: which tools exist and which pipeline stages they pass through.

use std::sync::Arc;

use handoff_config::Config;
use handoff_tools::{
    Pipeline, RegistryError, ToolRegistry,
    builtin::{HealthTool, PingTool, ServiceStatus},
};

/// One Handoff instance's shared state, served over any transport.
#[derive(Clone)]
pub struct App {
    /// The resolved configuration.
    pub config: Arc<Config>,
    /// Live health state.
    pub status: Arc<ServiceStatus>,
    /// The tool pipeline every call goes through.
    pub pipeline: Pipeline,
}

impl App {
    /// Builds the instance: registers the tools and assembles the pipeline.
    pub fn new(config: Config) -> Result<Self, RegistryError> {
        let status = ServiceStatus::new();
        let mut registry = ToolRegistry::new();
        registry
            .register(PingTool)?
            .register(HealthTool::new(status.clone()))?;
        let pipeline = Pipeline::builder(registry).build();
        Ok(Self {
            config: Arc::new(config),
            status,
            pipeline,
        })
    }
}

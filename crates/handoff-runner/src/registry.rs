use std::{collections::BTreeMap, sync::Arc};

use crate::Executor;

/// The executors a Handoff instance offers, by name.
#[derive(Clone, Default)]
pub struct ExecutorRegistry {
    executors: BTreeMap<String, Arc<dyn Executor>>,
    checks: BTreeMap<String, crate::CheckRunner>,
    /// Executors this server knows but could not set up, with how to install each.
    missing: BTreeMap<String, String>,
}

impl ExecutorRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) an executor under its own name.
    pub fn register(&mut self, executor: Arc<dyn Executor>) -> &mut Self {
        self.executors.insert(executor.name().to_owned(), executor);
        self
    }

    /// The executor called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn Executor>> {
        self.executors.get(name).cloned()
    }

    /// Verify commands of `executor`'s tasks run through `checks` (confined like its processes).
    pub fn set_checks(&mut self, executor: &str, checks: crate::CheckRunner) -> &mut Self {
        self.checks.insert(executor.to_owned(), checks);
        self
    }

    /// How verify commands of `executor`'s tasks run (own process group when none was set).
    pub fn checks(&self, executor: &str) -> crate::CheckRunner {
        self.checks.get(executor).cloned().unwrap_or_default()
    }

    /// Registered names, sorted.
    pub fn names(&self) -> Vec<String> {
        self.executors.keys().cloned().collect()
    }

    /// Records that `name` is known but not installed here, and how to install it.
    pub fn mark_missing(&mut self, name: &str, how_to_install: impl Into<String>) -> &mut Self {
        self.missing.insert(name.to_owned(), how_to_install.into());
        self
    }

    /// How to install `name`, when it is a known executor missing on this server.
    pub fn missing(&self, name: &str) -> Option<&str> {
        self.missing.get(name).map(String::as_str)
    }
}

impl std::fmt::Debug for ExecutorRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.executors.keys()).finish()
    }
}

//! `tools/list` answers serialised once per era's shape: the ~45 KB of schemas were
//! serialised again on every call. Callers that see the same tools share one answer; the
//! answers live in memory only, at most [`MAX_LISTS`] of them, since visibility is fixed when
//! the pipeline is built.

use std::{
    collections::HashMap,
    sync::{Mutex, PoisonError},
};

use bytes::Bytes;
use handoff_tools::{AgentId, Pipeline};
use rmcp::model::{ListToolsResult, ServerResult};

use super::convert::tool_to_wire;

/// How many distinct sets of visible tools are kept; past it an answer is serialised afresh,
/// so no number of agent names can grow this.
const MAX_LISTS: usize = 64;

/// Serialised `ListToolsResult`s by the set of tools they show.
#[derive(Debug, Default)]
pub(crate) struct ToolLists {
    by_visibility: Mutex<HashMap<(bool, Vec<bool>), Bytes>>,
}

impl ToolLists {
    /// The serialised result `agent` is shown, in the 2026-07-28 shape when `modern`, else
    /// in the legacy one; `None` if it would not serialise.
    pub(crate) fn get(
        &self,
        pipeline: &Pipeline,
        agent: Option<&AgentId>,
        modern: bool,
    ) -> Option<Bytes> {
        let key = (modern, pipeline.visibility(agent));
        if let Some(found) = self.lists().get(&key) {
            return Some(found.clone());
        }
        let mut result = ServerResult::ListToolsResult(list_result(pipeline, agent));
        super::direct::era_shape(&mut result, modern);
        let bytes = Bytes::from(serde_json::to_vec(&result).ok()?);
        let mut lists = self.lists();
        if lists.len() < MAX_LISTS {
            lists.insert(key, bytes.clone());
        }
        Some(bytes)
    }

    fn lists(&self) -> std::sync::MutexGuard<'_, HashMap<(bool, Vec<bool>), Bytes>> {
        // Holds finished answers only; a panic elsewhere cannot leave one half-written.
        self.by_visibility
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The result as rmcp's own `tools/list` answer serialises it.
pub(crate) fn list_result(pipeline: &Pipeline, agent: Option<&AgentId>) -> ListToolsResult {
    ListToolsResult {
        tools: pipeline.list(agent).iter().map(tool_to_wire).collect(),
        ..ListToolsResult::default()
    }
}

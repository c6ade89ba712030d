//! A task's files are on the disk of the instance that ran it (`ran_on`, kept after the run
//! ends). Asked on another instance, listings and reads are posted to that instance while
//! it is registered and answered from its disk; once it is gone they are read here (a restart
//! on the same host finds them; elsewhere the error says the directory is not here).

use handoff_task::{Task, TaskId};

use super::wire::{Posted, WireQuery, WireReply};
use crate::{EngineError, FileChunk, FileListing, files, state::EngineState};

/// Where to read a task's files.
pub(crate) enum FilesAt {
    /// On this instance's disk.
    Here,
    /// On the registered instance with this id.
    On(String),
}

impl EngineState {
    /// Where task `task`'s files are.
    pub(crate) async fn files_at(&self, task: &Task) -> Result<FilesAt, EngineError> {
        if !self.store.is_shared() {
            return Ok(FilesAt::Here);
        }
        let ran_on = self.store.ran_on(&task.id).await?;
        let Some(ran_on) = ran_on.filter(|r| **r != *self.instance.id()) else {
            return Ok(FilesAt::Here);
        };
        let registered = self.store.instances().await?;
        Ok(if registered.iter().any(|i| i.instance.id == ran_on) {
            FilesAt::On(ran_on)
        } else {
            FilesAt::Here
        })
    }

    /// Lists task `id`'s directory on instance `holder`.
    pub(crate) async fn list_files_on(
        &self,
        holder: &str,
        id: &TaskId,
        path: Option<&str>,
    ) -> Result<FileListing, EngineError> {
        let query = Posted::Query(WireQuery::Files {
            path: path.map(str::to_owned),
        });
        match self.ask(holder, id, &query).await?.into_error()? {
            WireReply::Listing { listing } => Ok(listing),
            other => Err(unexpected(&other)),
        }
    }

    /// Reads part of a file of task `id` on instance `holder`.
    pub(crate) async fn read_file_on(
        &self,
        holder: &str,
        id: &TaskId,
        path: &str,
        offset: u64,
        max_bytes: u64,
    ) -> Result<FileChunk, EngineError> {
        let query = Posted::Query(WireQuery::ReadFile {
            path: path.to_owned(),
            offset,
            max_bytes,
        });
        match self.ask(holder, id, &query).await?.into_error()? {
            WireReply::Chunk { chunk } => Ok(chunk),
            other => Err(unexpected(&other)),
        }
    }
}

fn unexpected(reply: &WireReply) -> EngineError {
    EngineError::Internal(format!("a file query was answered with {reply:?}"))
}

/// The holder's answer to a file query about task `id`, from its own disk.
pub(super) async fn answer(state: &EngineState, id: &TaskId, query: WireQuery) -> WireReply {
    let task = match state.store.get_task(id).await {
        Ok(Some(task)) => task,
        Ok(None) => return WireReply::failed(EngineError::NotFound(id.to_string())),
        Err(e) => return WireReply::failed(e.into()),
    };
    let root = std::path::Path::new(&task.workdir);
    let result = match query {
        WireQuery::Files { path } => files::list(root, path.as_deref())
            .await
            .map(|listing| WireReply::Listing { listing }),
        WireQuery::ReadFile {
            path,
            offset,
            max_bytes,
        } => files::read(root, &path, offset, max_bytes)
            .await
            .map(|chunk| WireReply::Chunk { chunk }),
    };
    result.unwrap_or_else(WireReply::failed)
}

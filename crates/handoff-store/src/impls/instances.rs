//! [`InstanceStore`] for every [`Backend`].

use async_trait::async_trait;
use handoff_task::{Task, TaskId};

use crate::backend::{Backend, Scope, writing};
use crate::ops::instances;
use crate::{InstanceRecord, InstanceStore, InstanceSummary, LeaseGrant, StoreError};

#[async_trait]
impl<B: Backend> InstanceStore for B {
    async fn register_instance(&self, record: &InstanceRecord) -> Result<(), StoreError> {
        writing(self, async {
            instances::register(&mut *self.writer().await?, record).await
        })
        .await
    }

    async fn heartbeat(
        &self,
        id: &str,
        at: i64,
        lease_until: i64,
    ) -> Result<Option<u64>, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Plain).await?;
            let renewed = instances::heartbeat(&mut *tx, id, at, lease_until).await?;
            // An unregistered instance wrote nothing: the transaction is dropped, rolled back.
            if renewed.is_some() {
                tx.commit().await?;
            }
            Ok(renewed)
        })
        .await
    }

    async fn set_draining(&self, id: &str) -> Result<(), StoreError> {
        writing(self, async {
            instances::drain(&mut *self.writer().await?, id).await
        })
        .await
    }

    async fn deregister_instance(&self, id: &str) -> Result<(), StoreError> {
        writing(self, async {
            instances::deregister(&mut *self.writer().await?, id).await
        })
        .await
    }

    async fn instances(&self) -> Result<Vec<InstanceSummary>, StoreError> {
        instances::list(&mut *self.reader().await?).await
    }

    async fn expire_instances(
        &self,
        before: i64,
        caller: &str,
    ) -> Result<Vec<InstanceRecord>, StoreError> {
        writing(self, async {
            instances::expire(&mut *self.writer().await?, before, caller).await
        })
        .await
    }

    async fn take_over(
        &self,
        id: &TaskId,
        predecessor: &str,
        expired_before: i64,
        grant: &LeaseGrant,
    ) -> Result<Option<Task>, StoreError> {
        writing(self, async {
            let mut conn = self.writer().await?;
            let task =
                instances::take_over(&mut *conn, id, predecessor, expired_before, grant).await?;
            if let Some(task) = &task {
                self.held().hold(task);
            }
            Ok(task)
        })
        .await
    }

    async fn rescuer_lock(&self, holder: &str, now: i64, until: i64) -> Result<bool, StoreError> {
        self.take_rescuer(holder, now, until).await
    }

    async fn take_rate(
        &self,
        key: &str,
        interval_ms: i64,
        tolerance_ms: i64,
        now: i64,
    ) -> Result<Option<i64>, StoreError> {
        writing(self, async {
            let mut conn = self.writer().await?;
            instances::take_rate(&mut *conn, key, interval_ms, tolerance_ms, now).await
        })
        .await
    }

    async fn record_call(
        &self,
        caller: &str,
        key: &str,
        at: i64,
        since: i64,
        keep: u32,
    ) -> Result<Vec<String>, StoreError> {
        writing(self, async {
            let mut tx = self.begin(Scope::Calls(caller)).await?;
            let keys = instances::record_call(&mut *tx, caller, key, (at, since, keep)).await?;
            tx.commit().await?;
            Ok(keys)
        })
        .await
    }

    fn is_shared(&self) -> bool {
        B::SHARED
    }
}

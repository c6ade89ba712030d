//! [`PeerStore`] on PostgreSQL: commands in the `commands` table, and every wake-up a `NOTIFY`
//! on one channel that each instance `LISTEN`s on through a connection of its own. A
//! notification is sent when its transaction commits, so a woken instance always finds the row.

use std::{sync::Arc, time::Duration};

use async_trait::async_trait;
use handoff_task::TaskId;
use sqlx::{PgPool, postgres::PgListener};
use tokio::sync::{Notify, OnceCell, broadcast};

use super::PgStore;
use crate::backend::Backend;
use crate::ops::commands;
use crate::sql::Sql;
use crate::{PeerStore, PostedCommand, StoreError, StoreSignal};

/// The channel every instance listens on.
const CHANNEL: &str = "handoff_signals";
/// PostgreSQL refuses payloads of 8,000 bytes and more.
const MAX_BROADCAST: usize = 7_000;
/// The pause before listening again after the connection failed.
const RELISTEN: Duration = Duration::from_secs(1);

/// This handle's listening connection, started by the first [`PeerStore::signals`].
#[derive(Debug, Clone)]
pub(super) struct Listener {
    signals: broadcast::Sender<StoreSignal>,
    started: Arc<OnceCell<()>>,
    stop: Arc<Notify>,
}

impl Default for Listener {
    fn default() -> Self {
        Self {
            signals: broadcast::channel(crate::store::SIGNAL_BACKLOG).0,
            started: Arc::default(),
            stop: Arc::default(),
        }
    }
}

impl Listener {
    /// Ends the listening (the store closes).
    pub(super) fn stop(&self) {
        self.stop.notify_one();
    }

    async fn start(&self, pool: &PgPool) -> Result<(), StoreError> {
        self.started
            .get_or_try_init(|| async {
                let mut listener = PgListener::connect_with(pool).await?;
                listener.listen(CHANNEL).await?;
                tokio::spawn(listen(listener, self.signals.clone(), self.stop.clone()));
                Ok::<_, StoreError>(())
            })
            .await?;
        Ok(())
    }
}

/// Forwards notifications until the store closes; a broken connection is re-made (by
/// `PgListener`) and reported as [`StoreSignal::Missed`].
async fn listen(
    mut listener: PgListener,
    signals: broadcast::Sender<StoreSignal>,
    stop: Arc<Notify>,
) {
    loop {
        let next = tokio::select! {
            () = stop.notified() => return,
            next = listener.try_recv() => next,
        };
        match next {
            Ok(Some(notification)) => {
                if let Some(signal) = decode(notification.payload()) {
                    let _ = signals.send(signal);
                }
            }
            Ok(None) => {
                let _ = signals.send(StoreSignal::Missed);
            }
            Err(e) => {
                tracing::warn!(error = %e, "listening for other instances failed; retrying");
                let _ = signals.send(StoreSignal::Missed);
                tokio::select! {
                    () = stop.notified() => return,
                    () = tokio::time::sleep(RELISTEN) => {}
                }
            }
        }
    }
}

/// A notification's payload as a signal (`p:<target>`, `r:<id>`, `b:<text>`).
fn decode(payload: &str) -> Option<StoreSignal> {
    let (kind, rest) = payload.split_once(':')?;
    match kind {
        "p" => Some(StoreSignal::CommandPosted {
            target: rest.to_owned(),
        }),
        "r" => rest
            .parse()
            .ok()
            .map(|id| StoreSignal::CommandReplied { id }),
        "b" => Some(StoreSignal::Broadcast(rest.to_owned())),
        _ => None,
    }
}

/// Sends `payload` on the channel, as part of `conn`'s transaction (delivered at its commit).
async fn notify(conn: &mut sqlx::PgConnection, payload: &str) -> Result<(), StoreError> {
    Sql::new("SELECT pg_notify(?, ?)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(conn)
        .await?;
    Ok(())
}

#[async_trait]
impl PeerStore for PgStore {
    async fn post_command(
        &self,
        task: &TaskId,
        target: &str,
        body: &str,
        at: i64,
    ) -> Result<i64, StoreError> {
        self.writing(async {
            let mut tx = self.pool.begin().await?;
            let id = commands::post(&mut *tx, task, target, body, at).await?;
            notify(&mut tx, &format!("p:{target}")).await?;
            tx.commit().await?;
            Ok(id)
        })
        .await
    }

    async fn take_commands(&self, target: &str, at: i64) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let mut conn = self.writer().await?;
            commands::take(&mut *conn, crate::commands::TAKE, target, at).await
        })
        .await
    }

    async fn take_task_commands(
        &self,
        task: &TaskId,
        at: i64,
    ) -> Result<Vec<PostedCommand>, StoreError> {
        self.writing(async {
            let mut conn = self.writer().await?;
            commands::take(
                &mut *conn,
                crate::commands::TAKE_FOR_TASK,
                task.as_str(),
                at,
            )
            .await
        })
        .await
    }

    async fn withdraw_command(&self, id: i64) -> Result<bool, StoreError> {
        self.writing(async { commands::withdraw(&mut *self.writer().await?, id).await })
            .await
    }

    async fn reply_command(&self, id: i64, reply: &str, at: i64) -> Result<bool, StoreError> {
        self.writing(async {
            let mut tx = self.pool.begin().await?;
            let done = commands::reply(&mut *tx, id, reply, at).await?;
            notify(&mut tx, &format!("r:{id}")).await?;
            tx.commit().await?;
            Ok(done)
        })
        .await
    }

    async fn command_reply(&self, id: i64) -> Result<Option<String>, StoreError> {
        commands::reply_of(&mut *self.reader().await?, id).await
    }

    async fn ran_on(&self, id: &TaskId) -> Result<Option<String>, StoreError> {
        commands::ran_on(&mut *self.reader().await?, id).await
    }

    async fn purge_commands(&self, before: i64) -> Result<u64, StoreError> {
        self.writing(async { commands::purge(&mut *self.writer().await?, before).await })
            .await
    }

    async fn broadcast(&self, body: &str) -> Result<(), StoreError> {
        if body.len() > MAX_BROADCAST {
            return Err(StoreError::TooLarge(format!(
                "a broadcast holds at most {MAX_BROADCAST} bytes, not {}",
                body.len()
            )));
        }
        let mut conn = self.up()?.acquire().await?;
        notify(&mut conn, &format!("b:{body}")).await
    }

    async fn signals(&self) -> Result<broadcast::Receiver<StoreSignal>, StoreError> {
        self.listener.start(&self.pool).await?;
        Ok(self.listener.signals.subscribe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads_decode_to_their_signals() {
        assert_eq!(
            decode("p:host-1-ab"),
            Some(StoreSignal::CommandPosted {
                target: "host-1-ab".into()
            })
        );
        assert_eq!(decode("r:42"), Some(StoreSignal::CommandReplied { id: 42 }));
        assert_eq!(decode("b:a:b"), Some(StoreSignal::Broadcast("a:b".into())));
        assert_eq!(decode("r:x"), None);
        assert_eq!(decode("zzz"), None);
    }
}

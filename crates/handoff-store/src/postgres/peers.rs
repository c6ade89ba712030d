//! [`PeerStore`] on PostgreSQL: commands in the `commands` table, and every wake-up a `NOTIFY`
//! on one channel that each instance `LISTEN`s on through a connection of its own. A
//! notification is sent when its transaction commits, so a woken instance always finds the row.

use std::{sync::Arc, time::Duration};

use sqlx::{PgConnection, PgPool, postgres::PgListener};
use tokio::sync::{Notify, OnceCell, broadcast};

use super::PgStore;
use crate::backend::Backend;
use crate::sql::Sql;
use crate::{StoreError, StoreSignal};

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
    /// The wake-ups from now on.
    pub(super) fn subscribe(&self) -> broadcast::Receiver<StoreSignal> {
        self.signals.subscribe()
    }

    /// Ends the listening (the store closes).
    pub(super) fn stop(&self) {
        self.stop.notify_one();
    }

    pub(super) async fn start(&self, pool: &PgPool) -> Result<(), StoreError> {
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

/// A signal as a notification's payload (see [`decode`]).
fn encode(signal: &StoreSignal) -> String {
    match signal {
        StoreSignal::CommandPosted { target } => format!("p:{target}"),
        StoreSignal::CommandReplied { id } => format!("r:{id}"),
        StoreSignal::Broadcast(text) => format!("b:{text}"),
        StoreSignal::Missed => "m:".to_owned(),
    }
}

/// Sends `signal` on the channel, as part of `conn`'s transaction (delivered at its commit).
pub(super) async fn notify(
    conn: &mut PgConnection,
    signal: &StoreSignal,
) -> Result<(), StoreError> {
    Sql::new("SELECT pg_notify(?, ?)")
        .bind(CHANNEL)
        .bind(encode(signal))
        .execute(conn)
        .await?;
    Ok(())
}

/// See [`crate::PeerStore::broadcast`].
pub(super) async fn broadcast(store: &PgStore, body: &str) -> Result<(), StoreError> {
    if body.len() > MAX_BROADCAST {
        return Err(StoreError::TooLarge(format!(
            "a broadcast holds at most {MAX_BROADCAST} bytes, not {}",
            body.len()
        )));
    }
    let mut conn = store.reader().await?;
    notify(&mut conn, &StoreSignal::Broadcast(body.to_owned())).await
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

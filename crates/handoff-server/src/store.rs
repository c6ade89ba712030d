//! Which task store this instance uses: the embedded SQLite database in the data dir (the
//! default), or PostgreSQL when `store.url` names one. The rest of the server sees only the
//! store traits, the write-fault watch and the probes.

use std::sync::Arc;

use handoff_config::Config;
use handoff_store::{
    ChannelStore, PgStore, SessionLimits, SqliteStore, Store, StoreError, WorkspaceStore,
};
use tokio::sync::watch;

/// The opened store, as each of its users needs it.
#[derive(Clone)]
pub(crate) enum OpenStore {
    /// One SQLite file under the data dir.
    Sqlite(Arc<SqliteStore>),
    /// A PostgreSQL database.
    Postgres(Arc<PgStore>),
}

impl OpenStore {
    /// Opens the configured store; the error's `String` names where (never the URL's password).
    pub(crate) async fn open(config: &Config) -> Result<Self, (String, StoreError)> {
        match &config.database_url {
            Some(url) => {
                let opened = async {
                    // An instance that cannot finish a transaction within a lease expiry is
                    // taken for lost anyway; past that, its locks must not hold up the rest.
                    // Never under a second: a healthy transaction pauses for round trips.
                    let limits = SessionLimits {
                        idle_in_transaction: config
                            .instance
                            .lease_expiry
                            .max(std::time::Duration::from_secs(1)),
                    };
                    let store = PgStore::connect(url.expose(), limits).await?;
                    Ok(Self::Postgres(Arc::new(store)))
                };
                opened
                    .await
                    .map_err(|e| (postgres_location(url.expose()), e))
            }
            None => {
                let path = config.database_path();
                SqliteStore::open(&path)
                    .await
                    .map(|s| Self::Sqlite(Arc::new(s)))
                    .map_err(|e| (path.display().to_string(), e))
            }
        }
    }

    /// The `store` component's detail while writes work.
    pub(crate) fn describe(&self, config: &Config) -> String {
        match (self, &config.database_url) {
            (Self::Postgres(_), Some(url)) => {
                format!("PostgreSQL at {}", postgres_location(url.expose()))
            }
            _ => format!("SQLite at {}", config.database_path().display()),
        }
    }

    /// The engine's view: tasks, events, approvals, audit.
    pub(crate) fn tasks(&self) -> Arc<dyn Store> {
        match self {
            Self::Sqlite(s) => s.clone(),
            Self::Postgres(s) => s.clone(),
        }
    }

    /// The Letta integration's records.
    pub(crate) fn workspaces(&self) -> Arc<dyn WorkspaceStore> {
        match self {
            Self::Sqlite(s) => s.clone(),
            Self::Postgres(s) => s.clone(),
        }
    }

    /// The chat integrations' records.
    pub(crate) fn channels(&self) -> Arc<dyn ChannelStore> {
        match self {
            Self::Sqlite(s) => s.clone(),
            Self::Postgres(s) => s.clone(),
        }
    }

    /// Follows whether writes fail.
    pub(crate) fn write_faults(&self) -> watch::Receiver<Option<String>> {
        match self {
            Self::Sqlite(s) => s.write_faults(),
            Self::Postgres(s) => s.write_faults(),
        }
    }

    /// One small real write; a failure is recorded by the store itself.
    pub(crate) async fn probe_writes(&self) {
        let _ = match self {
            Self::Sqlite(s) => s.probe_writes().await,
            Self::Postgres(s) => s.probe_writes().await,
        };
    }

    /// Whether the store answers (PostgreSQL: `SELECT 1`, which also lets the store refuse
    /// calls at once while it does not; SQLite: one small read); else why not, without the
    /// database's address or credentials.
    pub(crate) async fn probe_reachable(&self) -> Result<(), String> {
        let probed = match self {
            Self::Sqlite(s) => s.probe_reachable().await,
            Self::Postgres(s) => s.probe_reachable().await,
        };
        probed.map_err(|e| e.unreachable_cause().unwrap_or_else(|| e.to_string()))
    }
}

impl crate::store_health::StoreProbe for OpenStore {
    async fn reachable(&self) -> Result<(), String> {
        self.probe_reachable().await
    }

    async fn write(&self) {
        self.probe_writes().await;
    }
}

/// `host:port/database` of a PostgreSQL URL: what may be shown (no user, no password).
fn postgres_location(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    rest.split('?').next().unwrap_or(rest).to_owned()
}

#[cfg(test)]
mod tests {
    use super::postgres_location;

    #[test]
    fn the_location_never_shows_credentials() {
        assert_eq!(
            postgres_location("postgres://u:secret@db.example:5432/handoff?sslmode=require"),
            "db.example:5432/handoff"
        );
        assert_eq!(
            postgres_location("postgresql://127.0.0.1:5/x"),
            "127.0.0.1:5/x"
        );
    }
}

//! Every store operation, written once over [`crate::sql::Conn`] and run by both stores: the
//! statements each runs, in order, their arguments and the mapping of their rows. Writing
//! functions run inside the transaction their caller opened (and locked, on PostgreSQL).

pub(crate) mod approvals;
pub(crate) mod channels;
pub(crate) mod commands;
pub(crate) mod events;
pub(crate) mod inputs;
pub(crate) mod instances;
pub(crate) mod task_list;
pub(crate) mod tasks;
pub(crate) mod workspaces;

/// ` LIMIT ` with one bound parameter, for SQL written with `concat!`. SQLite (3.47 and later)
/// reads a bare `LIMIT ?` as a planner hint tied to the bound value and re-prepares the
/// statement whenever it is bound again (sqlx does on every execution); a cast is not a bare
/// parameter, so the statement is prepared once. `BIGINT` holds every `u32` page size.
macro_rules! limit_param {
    () => {
        " LIMIT CAST(? AS BIGINT)"
    };
}
pub(crate) use limit_param;

#[cfg(test)]
mod tests {
    /// Every query file, as compiled.
    const SOURCES: [(&str, &str); 9] = [
        ("approvals.rs", include_str!("approvals.rs")),
        ("channels.rs", include_str!("channels.rs")),
        ("commands.rs", include_str!("commands.rs")),
        ("events.rs", include_str!("events.rs")),
        ("inputs.rs", include_str!("inputs.rs")),
        ("instances.rs", include_str!("instances.rs")),
        ("task_list.rs", include_str!("task_list.rs")),
        ("tasks.rs", include_str!("tasks.rs")),
        ("workspaces.rs", include_str!("workspaces.rs")),
    ];

    #[test]
    fn no_query_binds_a_bare_limit() {
        for (file, source) in SOURCES {
            let bare = ["LIMIT ?", "LIMIT \", "];
            for pattern in bare {
                assert!(
                    !source.contains(pattern),
                    "{file} binds a bare LIMIT ({pattern:?}): use limit_param!()"
                );
            }
        }
    }
}

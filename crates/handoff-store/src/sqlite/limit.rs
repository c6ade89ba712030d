//! `LIMIT` with a bound value, written so SQLite keeps one prepared plan.
//!
//! SQLite (3.47 and later) reads a bare `LIMIT ?` as a planner hint tied to the bound value:
//! it marks the statement to be re-prepared whenever that parameter is bound again, which sqlx
//! does on every execution — measured as the status read re-prepared on every call. A cast is
//! not a bare parameter, so the statement is prepared once and served from sqlx's cache.

use sqlx::{QueryBuilder, Sqlite};

/// ` LIMIT ` with one bound parameter, for SQL written with `concat!`.
macro_rules! limit_param {
    () => {
        " LIMIT CAST(? AS INTEGER)"
    };
}
pub(super) use limit_param;

/// Appends ` LIMIT n` to a built query, `n` bound.
pub(super) fn push_limit(qb: &mut QueryBuilder<Sqlite>, n: i64) {
    qb.push(" LIMIT CAST(").push_bind(n).push(" AS INTEGER)");
}

#[cfg(test)]
mod tests {
    /// Every SQLite query file, as compiled.
    const SOURCES: [(&str, &str); 7] = [
        ("approvals.rs", include_str!("approvals.rs")),
        ("channels.rs", include_str!("channels.rs")),
        ("events.rs", include_str!("events.rs")),
        ("inputs.rs", include_str!("inputs.rs")),
        ("task_list.rs", include_str!("task_list.rs")),
        ("tasks.rs", include_str!("tasks.rs")),
        ("workspaces.rs", include_str!("workspaces.rs")),
    ];

    #[test]
    fn no_query_binds_a_bare_limit() {
        for (file, source) in SOURCES {
            let bare = ["LIMIT ?", "LIMIT \").push_bind", "LIMIT \")\n"];
            for pattern in bare {
                assert!(
                    !source.contains(pattern),
                    "{file} binds a bare LIMIT ({pattern:?}): use limit_param!() or push_limit"
                );
            }
        }
    }
}

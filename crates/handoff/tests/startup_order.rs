//! `startup.order` is a file lld can read and still covers the start-up path.
//!
//! Release builds hand it to the linker (`build.rs`). A hand edit, a merge that interleaved
//! two generations, or a generator that traced the wrong binary would go unnoticed there:
//! lld ignores names it does not find, so idle RSS would just grow. CI builds no release
//! binary, so this checks the file itself.

use std::collections::HashSet;

const ORDER: &str = include_str!("../startup.order");

fn symbols() -> Vec<&'static str> {
    ORDER
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .collect()
}

#[test]
fn every_line_is_one_symbol_listed_once() {
    let symbols = symbols();
    assert!(symbols.len() > 1_000, "only {} symbols", symbols.len());
    let mut seen = HashSet::new();
    for symbol in &symbols {
        assert!(
            !symbol.chars().any(char::is_whitespace),
            "not a symbol name: {symbol:?}"
        );
        assert!(seen.insert(*symbol), "listed twice: {symbol}");
    }
}

#[test]
fn covers_the_start_up_and_request_path() {
    // Mangled names carry crate names as length-prefixed identifiers (`14handoff_server`).
    let symbols = symbols();
    for part in [
        "7handoff4main",
        "14handoff_server",
        "13handoff_store",
        "14handoff_engine",
        "13handoff_tools",
        "5tokio",
        "5hyper",
        "4rmcp",
        "10jsonschema",
        "sqlite3_prepare",
    ] {
        assert!(
            symbols.iter().any(|symbol| symbol.contains(part)),
            "no function of `{part}` in startup.order"
        );
    }
}

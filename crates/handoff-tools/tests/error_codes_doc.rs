//! The list of error codes in docs/tools.md is what callers read to handle failures: every code a
//! failed tool call can carry must be in it.

use handoff_protocol::codes;

const TOOLS_DOC: &str = include_str!("../../../docs/tools.md");

/// The paragraph listing the codes of `isError` results.
fn error_list() -> &'static str {
    let start = TOOLS_DOC
        .find("Errors are `isError` results")
        .unwrap_or_else(|| panic!("docs/tools.md no longer introduces its error list"));
    let list = &TOOLS_DOC[start..];
    list.split("\n\n").next().unwrap_or(list)
}

#[test]
fn every_tool_error_code_is_documented() {
    let list = error_list();
    // An unknown tool is a JSON-RPC protocol error, documented as such, not an `isError` result.
    let missing: Vec<&str> = codes::ALL
        .into_iter()
        .filter(|code| *code != codes::UNKNOWN_TOOL)
        .filter(|code| !list.contains(&format!("`{code}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "not in the error list of docs/tools.md: {missing:?}\n{list}"
    );
}

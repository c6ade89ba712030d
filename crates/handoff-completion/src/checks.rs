//! Deterministic checks (docs/completion.md, Steps: Deterministic checks first), run before any
//! judge: the configured verify commands' exit codes, an empty diff when the task needed changes,
//! todos the executor left incomplete, and the stuck / loop-guard flags. Any failure means not
//! done, with `remaining[]` built from it.

use crate::outcome::CheckResult;

/// What the checks look at (the engine runs the verify commands and gathers the rest).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckInput {
    /// Each verify command with its exit code and output tail.
    pub commands: Vec<(String, Option<i32>, String)>,
    /// The task must change files.
    pub requires_changes: bool,
    /// Whether the diff is empty.
    pub diff_empty: bool,
    /// Todo items the executor reported as not completed.
    pub open_todos: Vec<String>,
    /// The stuck detector's or loop guard's finding, if any.
    pub stuck: Option<String>,
    /// Why the last turn looks cut off rather than finished ([`crate::cutoff`]), if it does.
    pub cut_off: Option<String>,
    /// Protected files changed since the pre-run snapshot, each with its diff.
    pub protected_changes: Vec<(String, String)>,
}

/// The checks' results and the remaining items they imply.
pub fn run(input: &CheckInput) -> (Vec<CheckResult>, Vec<String>) {
    let mut results = Vec::new();
    let mut remaining = Vec::new();
    for (command, code, tail) in &input.commands {
        // A runner that found no tests proves nothing, even when it exits 0.
        let zero = crate::tests_run::zero_tests(tail);
        let passed = *code == Some(0) && zero.is_none();
        let status = match (code, &zero) {
            (Some(0), Some(why)) => format!("exited 0 but {why}"),
            (Some(c), _) => format!("exited {c}"),
            (None, _) => "was killed".to_owned(),
        };
        if !passed {
            remaining.push(format!(
                "make `{command}` pass (it {status}): {}",
                last_line(tail)
            ));
        }
        results.push(CheckResult {
            name: command.clone(),
            passed,
            detail: format!("{status}; {}", last_line(tail)),
        });
    }
    if !input.protected_changes.is_empty() {
        let (result, item) = protected(&input.protected_changes);
        results.push(result);
        remaining.push(item);
    }
    if input.requires_changes {
        let passed = !input.diff_empty;
        if !passed {
            remaining.push("make the changes the task asks for: no file was changed".to_owned());
        }
        results.push(CheckResult {
            name: "changes".to_owned(),
            passed,
            detail: if passed {
                "files changed".to_owned()
            } else {
                "the diff is empty".to_owned()
            },
        });
    }
    if !input.open_todos.is_empty() {
        remaining.extend(input.open_todos.iter().map(|t| format!("finish todo: {t}")));
        results.push(CheckResult {
            name: "todos".to_owned(),
            passed: false,
            detail: format!("{} incomplete", input.open_todos.len()),
        });
    }
    if let Some(cut_off) = &input.cut_off {
        remaining.push(format!(
            "finish the work and report what you did: {cut_off}"
        ));
        results.push(CheckResult {
            name: "cut_off".to_owned(),
            passed: false,
            detail: cut_off.clone(),
        });
    }
    if let Some(stuck) = &input.stuck {
        remaining.push(format!("change approach: {stuck}"));
        results.push(CheckResult {
            name: "stuck".to_owned(),
            passed: false,
            detail: stuck.clone(),
        });
    }
    (results, remaining)
}

/// Most bytes of one protected file's diff shown.
const PROTECTED_DIFF_MAX: usize = 2000;

/// The failed integrity check and its remaining item, each naming the files with their diffs.
fn protected(changes: &[(String, String)]) -> (CheckResult, String) {
    let names: Vec<&str> = changes.iter().map(|(name, _)| name.as_str()).collect();
    let diffs: Vec<String> = changes
        .iter()
        .map(|(_, diff)| {
            let mut end = diff.len().min(PROTECTED_DIFF_MAX);
            while !diff.is_char_boundary(end) {
                end -= 1;
            }
            let cut = if end < diff.len() { "\n…" } else { "" };
            format!("{}{cut}", diff[..end].trim_end())
        })
        .collect();
    let detail = format!(
        "changed since the run started: {}\n{}",
        names.join(", "),
        diffs.join("\n")
    );
    let item = format!(
        "restore the protected file(s) {} — the checks rely on them and they must not change: {}",
        names.join(", "),
        diffs.join("\n")
    );
    let result = CheckResult {
        name: "protected files".to_owned(),
        passed: false,
        detail,
    };
    (result, item)
}

fn last_line(text: &str) -> String {
    text.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(300)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_commands_empty_diffs_open_todos_and_stuck_flags_each_become_remaining_items() {
        let input = CheckInput {
            commands: vec![
                (
                    "cargo test".to_owned(),
                    Some(101),
                    "running 3 tests\ntest a ... FAILED\n".to_owned(),
                ),
                ("cargo fmt --check".to_owned(), Some(0), String::new()),
                ("slow".to_owned(), None, String::new()),
            ],
            requires_changes: true,
            diff_empty: true,
            open_todos: vec!["write b.txt".to_owned()],
            stuck: Some("the same action failed 3 times in a row".to_owned()),
            cut_off: Some("the last model step was cut off (finish reason `length`)".to_owned()),
            ..CheckInput::default()
        };
        let (results, remaining) = run(&input);
        assert_eq!(results.iter().filter(|r| !r.passed).count(), 6);
        assert!(
            remaining
                .iter()
                .any(|r| r.contains("finish reason `length`"))
        );
        assert!(remaining[0].contains("cargo test") && remaining[0].contains("FAILED"));
        assert!(remaining[1].contains("was killed"));
        assert!(remaining.iter().any(|r| r.contains("no file was changed")));
        assert!(remaining.iter().any(|r| r == "finish todo: write b.txt"));
        assert!(remaining.iter().any(|r| r.starts_with("change approach")));
    }

    #[test]
    fn zero_tests_and_changed_protected_files_are_not_a_pass() {
        let input = CheckInput {
            commands: vec![(
                "pytest -q".to_owned(),
                Some(0),
                "\n1 deselected in 0.01s\n".to_owned(),
            )],
            protected_changes: vec![(
                "check.sh".to_owned(),
                "--- a/check.sh\n+++ b/check.sh\n-exit 1\n+exit 0\n".to_owned(),
            )],
            ..CheckInput::default()
        };
        let (results, remaining) = run(&input);
        assert!(results.iter().all(|r| !r.passed), "{results:?}");
        assert!(remaining[0].contains("exited 0 but pytest ran 0 tests"));
        assert!(results[1].detail.contains("+exit 0"), "{results:?}");
        assert!(remaining[1].contains("check.sh") && remaining[1].contains("-exit 1"));
    }

    #[test]
    fn all_green_means_nothing_remains() {
        let input = CheckInput {
            commands: vec![("true".to_owned(), Some(0), String::new())],
            requires_changes: true,
            diff_empty: false,
            ..CheckInput::default()
        };
        let (results, remaining) = run(&input);
        assert!(results.iter().all(|r| r.passed));
        assert!(remaining.is_empty());
    }
}

//! Deterministic checks (B2), run before any judge: the configured verify commands' exit
//! codes, an empty diff when the task needed changes, todos the executor left incomplete, and
//! the stuck / loop-guard flags. Any failure means not done, with `remaining[]` built from it.

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
}

/// The checks' results and the remaining items they imply.
pub fn run(input: &CheckInput) -> (Vec<CheckResult>, Vec<String>) {
    let mut results = Vec::new();
    let mut remaining = Vec::new();
    for (command, code, tail) in &input.commands {
        let passed = *code == Some(0);
        let status = code.map_or_else(|| "was killed".to_owned(), |c| format!("exited {c}"));
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
        remaining.push(format!("finish the work and report what you did: {cut_off}"));
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
        };
        let (results, remaining) = run(&input);
        assert_eq!(results.iter().filter(|r| !r.passed).count(), 6);
        assert!(remaining.iter().any(|r| r.contains("finish reason `length`")));
        assert!(remaining[0].contains("cargo test") && remaining[0].contains("FAILED"));
        assert!(remaining[1].contains("was killed"));
        assert!(remaining.iter().any(|r| r.contains("no file was changed")));
        assert!(remaining.iter().any(|r| r == "finish todo: write b.txt"));
        assert!(remaining.iter().any(|r| r.starts_with("change approach")));
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

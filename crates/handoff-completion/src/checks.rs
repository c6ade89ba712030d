//! Deterministic checks (docs/completion.md, Steps: Deterministic checks first), run before any
//! judge: the configured verify commands' exit codes (and whether they ran any test), protected
//! files, tests switched off, fixtures changed (when no judge weighs them), an empty diff when
//! the task needed changes, todos the executor left incomplete, a cut-off turn, and the stuck /
//! loop-guard flags. Any failure means not done, with `remaining[]` built from it. What a judge
//! should weigh rather than a check fail is gathered by [`judge_flags`].

use crate::{outcome::CheckResult, weakened::Finding};

/// How a task that is meant to change its tests or verify scripts says so.
pub const EXPECTED_SETTING: &str = "completion.protected_changes_expected: true";

/// One changed test or fixture file and what its diff does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestChange {
    /// The file, relative to the task directory.
    pub path: String,
    /// What the diff does to its tests (empty for a fixture).
    pub findings: Vec<Finding>,
    /// Tests read the file (a fixture, snapshot, golden file).
    pub fixture: bool,
    /// The file's diff.
    pub diff: String,
}

impl TestChange {
    fn weakenings(&self) -> Vec<String> {
        self.findings
            .iter()
            .filter(|f| f.weakens())
            .map(Finding::describe)
            .collect()
    }
}

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
    /// Test and fixture files changed since the pre-run snapshot.
    pub test_changes: Vec<TestChange>,
    /// The task is meant to change protected files and tests ([`EXPECTED_SETTING`]).
    pub changes_expected: bool,
    /// A judge weighs what [`judge_flags`] lists (the policy has one).
    pub judged: bool,
    /// Something about the answer the judge should weigh (a short answer with no change).
    pub answer_note: Option<String>,
    /// How many tests each verify command ran on the directory before the run, where known.
    pub tests_before: Vec<(String, u64)>,
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
    if !input.changes_expected {
        tests_changed(input, &mut results, &mut remaining);
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

/// A diff cut to [`PROTECTED_DIFF_MAX`] bytes.
fn clip(diff: &str) -> String {
    let mut end = diff.len().min(PROTECTED_DIFF_MAX);
    while !diff.is_char_boundary(end) {
        end -= 1;
    }
    let cut = if end < diff.len() { "\n…" } else { "" };
    format!("{}{cut}", diff[..end].trim_end())
}

/// The failed integrity check and its remaining item, each naming the files with their diffs.
fn protected(changes: &[(String, String)]) -> (CheckResult, String) {
    let names: Vec<&str> = changes.iter().map(|(name, _)| name.as_str()).collect();
    let diffs: Vec<String> = changes.iter().map(|(_, diff)| clip(diff)).collect();
    let detail = format!(
        "changed since the run started: {}\n{}",
        names.join(", "),
        diffs.join("\n")
    );
    let item = format!(
        "restore the protected file(s) {} — the checks rely on them and they must not change \
         (a task meant to change them is submitted with `{EXPECTED_SETTING}`): {}",
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

/// The checks on changed tests and fixtures: tests switched off always fail; a changed fixture
/// fails only when no judge will weigh it.
fn tests_changed(input: &CheckInput, results: &mut Vec<CheckResult>, remaining: &mut Vec<String>) {
    let weakened = weakened(input);
    if !weakened.is_empty() {
        remaining.push(format!(
            "switch the tests back on and fix the code instead (a task meant to change the tests \
             is submitted with `{EXPECTED_SETTING}`): {}",
            weakened.join("\n")
        ));
        results.push(CheckResult {
            name: "tests weakened".to_owned(),
            passed: false,
            detail: weakened.join("\n"),
        });
    }
    let fixtures: Vec<String> = input
        .test_changes
        .iter()
        .filter(|c| c.fixture)
        .map(|c| format!("{}\n{}", c.path, clip(&c.diff)))
        .collect();
    if !fixtures.is_empty() && !input.judged {
        remaining.push(format!(
            "restore the test fixture(s) the tests compare against and fix the code instead (a \
             task meant to change them is submitted with `{EXPECTED_SETTING}`): {}",
            fixtures.join("\n")
        ));
        results.push(CheckResult {
            name: "fixtures changed".to_owned(),
            passed: false,
            detail: fixtures.join("\n"),
        });
    }
}

/// Every sign of tests switched off: a test file's diff, and a verify command running fewer
/// tests than it did before the run.
fn weakened(input: &CheckInput) -> Vec<String> {
    let mut found: Vec<String> = input
        .test_changes
        .iter()
        .filter_map(|c| {
            let found = c.weakenings();
            (!found.is_empty())
                .then(|| format!("{}: {}\n{}", c.path, found.join(", "), clip(&c.diff)))
        })
        .collect();
    found.extend(fewer_tests(input));
    found
}

/// Each verify command that ran fewer tests than it did on the directory before the run.
fn fewer_tests(input: &CheckInput) -> Vec<String> {
    let mut found = Vec::new();
    for (command, _, output) in &input.commands {
        let before = input.tests_before.iter().find(|(c, _)| c == command);
        if let (Some((_, before)), Some(now)) = (before, crate::tests_run::tests_ran(output))
            && now < *before
        {
            found.push(format!(
                "`{command}` ran {now} test(s); before the run it ran {before}"
            ));
        }
    }
    found
}

/// What the judge is asked to weigh beside the evidence: changed fixtures, tests changed by a
/// task meant to change them, edited assertions, and the answer note.
pub fn judge_flags(input: &CheckInput) -> Vec<String> {
    let mut flags = Vec::new();
    if input.changes_expected {
        flags.extend(fewer_tests(input));
    }
    for change in &input.test_changes {
        let mut what: Vec<String> = change
            .findings
            .iter()
            .filter(|f| input.changes_expected || !f.weakens())
            .map(Finding::describe)
            .collect();
        if change.fixture {
            what.push("changes a file the tests read (a fixture): was the code fixed, or the expectation?".to_owned());
        }
        if !what.is_empty() {
            flags.push(format!(
                "{}: {}\n{}",
                change.path,
                what.join("; "),
                clip(&change.diff)
            ));
        }
    }
    flags.extend(input.answer_note.clone());
    flags
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

    fn change(path: &str, diff: &str, fixture: bool) -> TestChange {
        TestChange {
            path: path.to_owned(),
            findings: crate::weakened::find(path, diff),
            fixture,
            diff: diff.to_owned(),
        }
    }

    #[test]
    fn switched_off_tests_fail_and_fixtures_fail_only_without_a_judge() {
        let skipped = change(
            "tests/test_calc.py",
            "+    @unittest.skip(\"later\")\n",
            false,
        );
        let fixture = change("tests/fixtures/greeting.txt", "-hello\n+hullo\n", true);
        let mut input = CheckInput {
            test_changes: vec![skipped, fixture],
            ..CheckInput::default()
        };
        let (results, remaining) = run(&input);
        let failed: Vec<&str> = results
            .iter()
            .filter(|r| !r.passed)
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(failed, ["tests weakened", "fixtures changed"]);
        assert!(remaining[0].contains("@unittest.skip") && remaining[0].contains(EXPECTED_SETTING));
        assert!(remaining[1].contains("+hullo") && remaining[1].contains(EXPECTED_SETTING));
        assert!(
            judge_flags(&input)
                .iter()
                .all(|f| !f.contains("@unittest.skip"))
        );

        input.judged = true;
        let (results, _) = run(&input);
        assert_eq!(
            results.iter().filter(|r| !r.passed).count(),
            1,
            "{results:?}"
        );
        let flags = judge_flags(&input);
        assert_eq!(flags.len(), 1, "{flags:?}");
        assert!(flags[0].contains("greeting.txt") && flags[0].contains("+hullo"));

        // A task meant to change its tests: nothing fails, the judge weighs all of it.
        input.changes_expected = true;
        let (results, remaining) = run(&input);
        assert!(results.is_empty() && remaining.is_empty(), "{results:?}");
        let flags = judge_flags(&input);
        assert!(
            flags.iter().any(|f| f.contains("@unittest.skip")),
            "{flags:?}"
        );
    }

    #[test]
    fn a_verify_command_running_fewer_tests_than_before_the_run_weakened_them() {
        let mut input = CheckInput {
            commands: vec![(
                "python3 -m unittest".to_owned(),
                Some(0),
                "Ran 2 tests in 0.001s\n\nOK (skipped=1)\n".to_owned(),
            )],
            tests_before: vec![("python3 -m unittest".to_owned(), 2)],
            ..CheckInput::default()
        };
        let (results, remaining) = run(&input);
        let failed = results.iter().find(|r| !r.passed).unwrap();
        assert_eq!(failed.name, "tests weakened");
        assert!(
            remaining[0].contains("ran 1 test(s); before the run it ran 2"),
            "{remaining:?}"
        );
        input.tests_before[0].1 = 1;
        assert!(run(&input).0.iter().all(|r| r.passed));
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

//! Whether a verify command really tested anything, and how many tests it ran: a runner that
//! found no tests often exits 0 (`--passWithNoTests`, unittest before 3.12, a `cargo test`
//! filter matching nothing, `go test` on a package whose tests were deleted), which must not
//! count as a pass. Each runner's own summary lines are read, and every runner counts the same
//! way: a test ran when it passed or failed — skipped, ignored, expected-failure (`xfail`) and
//! todo tests did not run. An output no runner recognises says nothing either way.

/// Tests one runner's summary lines say it ran (`None`: that runner's summary is absent).
type Counter = fn(&str) -> Option<u64>;

/// The runners whose summaries are read, by name.
const RUNNERS: [(&str, Counter); 7] = [
    ("cargo test", cargo),
    ("pytest", pytest),
    ("unittest", unittest),
    ("go test", go),
    ("jest", jest),
    ("vitest", vitest),
    ("node --test", node),
];

/// The tests `output` says ran, summed over every runner whose summary it holds (`None`: no
/// known runner's summary).
pub fn tests_ran(output: &str) -> Option<u64> {
    RUNNERS
        .iter()
        .filter_map(|(_, count)| count(output))
        .reduce(|a, b| a + b)
}

/// Why `output` shows that a test runner ran no tests, if a known runner says so.
pub fn zero_tests(output: &str) -> Option<String> {
    RUNNERS
        .iter()
        .find_map(|(name, count)| (count(output) == Some(0)).then(|| format!("{name} ran 0 tests")))
}

/// Leading number of `text` (after spaces).
fn number(text: &str) -> Option<u64> {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    text[..end].parse().ok()
}

/// The number before `word` in a `N word, M other` list.
fn count_before(text: &str, word: &str) -> u64 {
    text.split([',', ';'])
        .filter_map(|part| {
            let part = part.trim();
            let (n, rest) = part.split_once(' ')?;
            (rest.trim_start().starts_with(word))
                .then(|| number(n))
                .flatten()
        })
        .sum()
}

/// `test result: ok. 3 passed; 0 failed; …` — one per test binary, summed.
fn cargo(output: &str) -> Option<u64> {
    let results: Vec<u64> = output
        .lines()
        .filter_map(|l| l.trim().strip_prefix("test result: "))
        // After the verdict word: `ok. 3 passed; 0 failed; …`.
        .map(|rest| rest.split_once(". ").map_or(rest, |(_, counts)| counts))
        .map(|rest| count_before(rest, "passed") + count_before(rest, "failed"))
        .collect();
    (!results.is_empty()).then(|| results.iter().sum())
}

/// `===== 3 passed, 1 failed in 0.12s =====`, `no tests ran in 0.01s`, `3 deselected in …`.
fn pytest(output: &str) -> Option<u64> {
    let mut seen = None;
    for line in output.lines() {
        let line = line.trim().trim_matches('=').trim();
        let Some((counts, time)) = line.rsplit_once(" in ") else {
            continue;
        };
        let time = time.split_whitespace().next().unwrap_or("");
        let timed = time.ends_with('s') && time[..time.len() - 1].parse::<f64>().is_ok();
        if !timed {
            continue;
        }
        if counts.starts_with("no tests ran") {
            seen.get_or_insert(0);
            continue;
        }
        let known = [
            "passed",
            "failed",
            "error",
            "skipped",
            "deselected",
            "xfailed",
            "xpassed",
        ];
        let summary = counts.split(", ").all(|part| {
            part.split_once(' ')
                .is_some_and(|(n, w)| number(n).is_some() && known.iter().any(|k| w.starts_with(k)))
        });
        if summary {
            let ran = ["passed", "failed", "error", "xpassed"]
                .iter()
                .map(|w| count_before(counts, w))
                .sum::<u64>();
            *seen.get_or_insert(0) += ran;
        }
    }
    seen
}

/// `Ran 3 tests in 0.001s` and the verdict after it, `OK (skipped=1, expected failures=1)`;
/// Python 3.12 adds `NO TESTS RAN`. Skipped and expected failures are taken off the count.
fn unittest(output: &str) -> Option<u64> {
    let mut seen = None;
    let mut lines = output.lines().map(str::trim);
    while let Some(line) = lines.next() {
        let Some(ran) = line
            .strip_prefix("Ran ")
            .filter(|rest| rest.contains(" test"))
            .and_then(number)
        else {
            continue;
        };
        let verdict = lines.by_ref().find(|l| !l.is_empty()).unwrap_or("");
        let details = verdict
            .split_once('(')
            .map_or("", |(_, rest)| rest.trim_end_matches(')'));
        let not_run: u64 = details
            .split(',')
            .filter_map(|part| part.trim().split_once('='))
            .filter(|(key, _)| matches!(*key, "skipped" | "expected failures"))
            .filter_map(|(_, n)| number(n))
            .sum();
        *seen.get_or_insert(0) += ran.saturating_sub(not_run);
    }
    seen
}

/// `ok  pkg 0.1s`, `?  pkg [no test files]`, `ok  pkg 0.1s [no tests to run]` per package.
fn go(output: &str) -> Option<u64> {
    let mut seen = None;
    for line in output.lines() {
        let mut words = line.split_whitespace();
        let (Some(first), Some(_package)) = (words.next(), words.next()) else {
            continue;
        };
        if !matches!(first, "ok" | "?" | "FAIL") || !line.contains('\t') {
            continue;
        }
        let empty = line.contains("[no test files]") || line.contains("[no tests to run]");
        *seen.get_or_insert(0) += u64::from(!empty);
    }
    seen
}

/// `Tests:       1 failed, 1 skipped, 2 passed, 4 total`; `No tests found, exiting with code 0`.
fn jest(output: &str) -> Option<u64> {
    let mut seen = None;
    for line in output.lines() {
        let line = line.trim();
        if line.starts_with("No tests found") {
            seen.get_or_insert(0);
        } else if let Some(rest) = line.strip_prefix("Tests:") {
            *seen.get_or_insert(0) += count_before(rest, "passed") + count_before(rest, "failed");
        }
    }
    seen
}

/// `Tests  1 passed | 2 skipped (3)`, `Tests  no tests`; `No test files found, exiting with code
/// 0`.
fn vitest(output: &str) -> Option<u64> {
    let mut seen = None;
    for line in output.lines() {
        let line = line.trim();
        if line.starts_with("No test files found") || line.starts_with("No test suite found") {
            seen.get_or_insert(0);
        } else if let Some(rest) = line.strip_prefix("Tests  ") {
            let counts = rest.rsplit_once('(').map_or(rest, |(counts, _)| counts);
            let ran: u64 = counts
                .split('|')
                .filter_map(|part| part.trim().split_once(' '))
                .filter(|(_, word)| word.starts_with("passed") || word.starts_with("failed"))
                .filter_map(|(n, _)| number(n))
                .sum();
            *seen.get_or_insert(0) += ran;
        }
    }
    seen
}

/// Node's own runner: `# pass 1` / `# fail 0` (TAP), `ℹ pass 1` (spec reporter).
fn node(output: &str) -> Option<u64> {
    let mut seen = None;
    for line in output.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ ")) else {
            continue;
        };
        if let Some(n) = rest
            .strip_prefix("pass ")
            .or_else(|| rest.strip_prefix("fail "))
            .and_then(number)
        {
            *seen.get_or_insert(0) += n;
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_runner_reporting_no_tests_is_recognised() {
        let zero = [
            // cargo test with a filter matching nothing: exit 0.
            "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 12 filtered out; finished in 0.00s\n\n   Doc-tests x\n\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n",
            // pytest: nothing collected, or everything deselected.
            "============================= test session starts ==============================\ncollected 0 items\n\n============================ no tests ran in 0.01s =============================\n",
            "collected 3 items / 3 deselected / 0 selected\n\n=========================== 3 deselected in 0.02s ============================\n",
            // unittest before 3.12 (exit 0) and after (exit 5).
            "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nOK\n",
            "\n----------------------------------------------------------------------\nRan 0 tests in 0.000s\n\nNO TESTS RAN\n",
            // go test: no test files, or a -run filter matching nothing (exit 0 both).
            "?   \texample.com/calc\t[no test files]\n",
            "ok  \texample.com/calc\t0.002s [no tests to run]\n",
            // jest --passWithNoTests and its summary.
            "No tests found, exiting with code 0\n",
            "Test Suites: 0 total\nTests:       0 total\nSnapshots:   0 total\nTime:        0.3 s\n",
            // vitest --passWithNoTests.
            "No test files found, exiting with code 0\n",
            " Test Files  no tests\n      Tests  no tests\n   Start at  10:00:00\n",
        ];
        for output in zero {
            assert!(zero_tests(output).is_some(), "not recognised:\n{output}");
        }
    }

    #[test]
    fn runs_with_tests_and_unknown_output_are_not_flagged() {
        let real = [
            "running 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out\n\nrunning 3 tests\ntest a ... ok\n\ntest result: ok. 3 passed; 0 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n",
            "test result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out\n",
            "collected 2 items\n\ntest_calc.py ..                                                    [100%]\n\n============================== 2 passed in 0.01s ===============================\n",
            "1 failed, 1 passed, 1 deselected in 0.05s\n",
            "...\n----------------------------------------------------------------------\nRan 3 tests in 0.001s\n\nOK\n",
            "ok  \texample.com/calc\t0.002s\n?   \texample.com/cmd\t[no test files]\n",
            "Test Suites: 1 passed, 1 total\nTests:       2 passed, 2 total\n",
            " Test Files  1 passed (1)\n      Tests  3 passed (3)\n",
            "make: Nothing to be done for 'all'.\n",
            "",
            "everything ok in 2.5s\n",
        ];
        for output in real {
            assert_eq!(zero_tests(output), None, "flagged:\n{output}");
        }
    }

    #[test]
    fn skipped_ignored_and_expected_failures_did_not_run() {
        let cases: &[(&str, u64)] = &[
            (
                "Ran 4 tests in 0.006s\n\nFAILED (skipped=1, expected failures=1, unexpected successes=1)\n",
                2,
            ),
            ("Ran 2 tests in 0.001s\n\nOK (skipped=2)\n", 0),
            ("Ran 3 tests in 0.001s\n\nOK\n", 3),
            (
                "test result: ok. 1 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out\n",
                1,
            ),
            ("==== 1 passed, 2 skipped, 1 xfailed in 0.03s ====\n", 1),
            ("==== 2 skipped in 0.01s ====\n", 0),
            ("Tests:       2 skipped, 1 passed, 3 total\n", 1),
            (" Tests  1 passed | 2 skipped (3)\n", 1),
            ("# tests 2\n# pass 1\n# fail 0\n# skipped 1\n# todo 0\n", 1),
            (
                "\u{2139} tests 3\n\u{2139} pass 0\n\u{2139} fail 1\n\u{2139} skipped 2\n",
                1,
            ),
        ];
        for (output, ran) in cases {
            assert_eq!(tests_ran(output), Some(*ran), "{output}");
        }
        assert_eq!(
            zero_tests("Ran 2 tests in 0.001s\n\nOK (skipped=2)\n").as_deref(),
            Some("unittest ran 0 tests")
        );
        assert_eq!(tests_ran("make: Nothing to be done\n"), None);
    }

    #[test]
    fn the_reason_names_the_runner() {
        assert_eq!(
            zero_tests("Ran 0 tests in 0.000s\n\nOK\n").as_deref(),
            Some("unittest ran 0 tests")
        );
    }
}

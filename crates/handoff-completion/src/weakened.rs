//! Tests switched off instead of fixed, read from one file's diff: skip, ignore, xfail and
//! expected-failure markers added (unittest, pytest, Rust, Jest/Vitest/Mocha/node, Go, JUnit,
//! RSpec), `.only` focus that silences the rest, test functions removed, assertions removed.
//! Counts are net — a marker or test moved within the file cancels out — and comments do not
//! count. Assertions both removed and added (an expected value edited) are not a weakening by
//! themselves; they are reported as [`Finding::AssertionsEdited`] for the judge to weigh.

use crate::test_files::is_test_file;

/// What a diff does to a test file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// Adds markers that stop tests from running or failing (each marker with its count).
    Markers(Vec<(String, usize)>),
    /// Removes this many test definitions.
    TestsRemoved(usize),
    /// Removes this many assertions.
    AssertionsRemoved(usize),
    /// Edits this many assertion lines (removed and added in equal measure).
    AssertionsEdited(usize),
}

impl Finding {
    /// Whether this finding switches tests off (the others only ask the judge to look).
    pub fn weakens(&self) -> bool {
        !matches!(self, Finding::AssertionsEdited(_))
    }

    /// One line for a check or the judge.
    pub fn describe(&self) -> String {
        match self {
            Finding::Markers(markers) => {
                let list: Vec<String> = markers
                    .iter()
                    .map(|(m, n)| {
                        if *n == 1 {
                            format!("`{m}`")
                        } else {
                            format!("`{m}` ×{n}")
                        }
                    })
                    .collect();
                format!("adds {}", list.join(", "))
            }
            Finding::TestsRemoved(n) => format!("removes {n} test(s)"),
            Finding::AssertionsRemoved(n) => format!("removes {n} assertion(s)"),
            Finding::AssertionsEdited(n) => format!("edits {n} assertion line(s)"),
        }
    }
}

/// The language a file's markers are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Python,
    Rust,
    Script,
    Go,
    Jvm,
    Ruby,
}

fn lang(path: &str) -> Option<Lang> {
    let ext = path.rsplit_once('.').map_or("", |(_, e)| e);
    Some(match ext {
        "py" => Lang::Python,
        "rs" => Lang::Rust,
        "js" | "jsx" | "ts" | "tsx" | "mjs" | "cjs" => Lang::Script,
        "go" => Lang::Go,
        "java" | "kt" | "scala" => Lang::Jvm,
        "rb" => Lang::Ruby,
        _ => return None,
    })
}

/// Markers that switch a test off or turn its failure into a pass.
fn markers(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Python => &[
            "@unittest.skip",
            "@skip(",
            "@skipIf(",
            "@skipUnless(",
            "@unittest.expectedFailure",
            "@expectedFailure",
            "@pytest.mark.skip",
            "@pytest.mark.xfail",
            "pytest.skip(",
            "pytest.xfail(",
            ".skipTest(",
            "raise unittest.SkipTest",
            "raise SkipTest",
        ],
        Lang::Rust => &["#[ignore", "#[cfg_attr(", "#[should_panic"],
        Lang::Script => &[
            "it.skip(",
            "test.skip(",
            "describe.skip(",
            "context.skip(",
            "suite.skip(",
            "it.only(",
            "test.only(",
            "describe.only(",
            "it.todo(",
            "test.todo(",
            "xit(",
            "xtest(",
            "xdescribe(",
            "fit(",
            "fdescribe(",
            "it.failing(",
            "test.failing(",
        ],
        Lang::Go => &["t.Skip(", "t.Skipf(", "t.SkipNow(", "b.Skip("],
        Lang::Jvm => &["@Disabled", "@Ignore", "assumeTrue(", "assumeFalse("],
        Lang::Ruby => &["xit ", "xdescribe ", "skip ", "skip(", "pending "],
    }
}

/// Whether a line defines a test.
fn defines_test(lang: Lang, line: &str) -> bool {
    match lang {
        Lang::Python => line.starts_with("def test") || line.starts_with("async def test"),
        Lang::Rust => line.starts_with("#[test]") || line.starts_with("#[tokio::test"),
        Lang::Script => ["it(", "test(", "it.each", "test.each"]
            .iter()
            .any(|p| line.starts_with(p)),
        Lang::Go => line.starts_with("func Test"),
        Lang::Jvm => line.starts_with("@Test"),
        Lang::Ruby => {
            line.starts_with("it ") || line.starts_with("it(") || line.starts_with("def test_")
        }
    }
}

/// Whether a line asserts.
fn asserts(lang: Lang, line: &str) -> bool {
    match lang {
        Lang::Go => ["t.Error", "t.Fatal", "assert.", "require."]
            .iter()
            .any(|p| line.contains(p)),
        Lang::Script => line.contains("expect(") || line.contains("assert"),
        // A decorator (`@unittest.expectedFailure`) is a marker, not an assertion.
        _ => !line.starts_with('@') && (line.contains("assert") || line.contains("expect")),
    }
}

fn is_comment(lang: Lang, line: &str) -> bool {
    match lang {
        // `#[ignore]` is Rust code, not a comment.
        Lang::Python | Lang::Ruby => line.starts_with('#'),
        _ => line.starts_with("//") || line.starts_with("/*") || line.starts_with('*'),
    }
}

/// Net counts of one kind of line: added minus removed.
#[derive(Default)]
struct Tally {
    added: usize,
    removed: usize,
}

/// What `diff` (a unified diff of the one file `path`) does to its tests. Markers count in any
/// file of a known language; removed tests and assertions only in test files (and in Rust
/// files, whose tests live beside the code).
pub fn find(path: &str, diff: &str) -> Vec<Finding> {
    let Some(lang) = lang(path) else {
        return Vec::new();
    };
    let tests_here = is_test_file(path) || lang == Lang::Rust;
    // Ruby's markers are plain words; only a test file's are read as markers.
    let table = if lang == Lang::Ruby && !tests_here {
        &[]
    } else {
        markers(lang)
    };
    let mut marks: Vec<Tally> = table.iter().map(|_| Tally::default()).collect();
    let (mut tests, mut asserted) = (Tally::default(), Tally::default());
    for line in diff.lines() {
        if line.starts_with("+++") || line.starts_with("---") {
            continue;
        }
        let (added, text) = match line.as_bytes().first() {
            Some(b'+') => (true, line[1..].trim()),
            Some(b'-') => (false, line[1..].trim()),
            _ => continue,
        };
        if text.is_empty() || is_comment(lang, text) {
            continue;
        }
        let count = |tally: &mut Tally| {
            if added {
                tally.added += 1;
            } else {
                tally.removed += 1;
            }
        };
        for (marker, tally) in table.iter().zip(marks.iter_mut()) {
            if text.contains(marker) && (lang != Lang::Rust || rust_marker(marker, text)) {
                count(tally);
            }
        }
        if tests_here && defines_test(lang, text) {
            count(&mut tests);
        }
        if tests_here && asserts(lang, text) {
            count(&mut asserted);
        }
    }
    let mut findings = Vec::new();
    let added: Vec<(String, usize)> = table
        .iter()
        .zip(&marks)
        .filter(|(_, t)| t.added > t.removed)
        .map(|(m, t)| ((*m).to_owned(), t.added - t.removed))
        .collect();
    if !added.is_empty() {
        findings.push(Finding::Markers(added));
    }
    if tests.removed > tests.added {
        findings.push(Finding::TestsRemoved(tests.removed - tests.added));
    }
    if asserted.removed > asserted.added {
        findings.push(Finding::AssertionsRemoved(
            asserted.removed - asserted.added,
        ));
    } else if asserted.removed > 0 {
        findings.push(Finding::AssertionsEdited(asserted.removed));
    }
    findings
}

/// Rust's `cfg_attr` only counts when it ignores a test (`#[cfg_attr(…, ignore)]`).
fn rust_marker(marker: &str, text: &str) -> bool {
    marker != "#[cfg_attr(" || text.contains("ignore")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn weakens(path: &str, diff: &str) -> Vec<String> {
        find(path, diff)
            .iter()
            .filter(|f| f.weakens())
            .map(Finding::describe)
            .collect()
    }

    #[test]
    fn added_markers_are_found_per_language() {
        let cases = [
            (
                "tests/test_calc.py",
                "+    @unittest.skip(\"later\")\n",
                "@unittest.skip",
            ),
            (
                "test_calc.py",
                "+    @unittest.expectedFailure\n",
                "@unittest.expectedFailure",
            ),
            (
                "test_calc.py",
                "+@pytest.mark.xfail(reason='x')\n",
                "@pytest.mark.xfail",
            ),
            ("src/lib.rs", "+    #[ignore]\n", "#[ignore"),
            (
                "src/lib.rs",
                "+    #[cfg_attr(not(feature = \"x\"), ignore)]\n",
                "#[cfg_attr(",
            ),
            ("calc.test.js", "+test.skip('adds', () => {\n", "test.skip("),
            ("calc.spec.ts", "+  it.only('adds', () => {\n", "it.only("),
            ("calc.test.js", "+xit('adds', () => {\n", "xit("),
            ("calc_test.go", "+\tt.Skip(\"flaky\")\n", "t.Skip("),
            ("CalcTest.java", "+    @Disabled\n", "@Disabled"),
        ];
        for (path, diff, marker) in cases {
            let found = weakens(path, diff);
            assert_eq!(found.len(), 1, "{path}: {found:?}");
            assert!(found[0].contains(marker), "{path}: {found:?}");
        }
    }

    #[test]
    fn removed_tests_and_assertions_are_counted_net() {
        let diff = "-    def test_add(self):\n-        self.assertEqual(add(1, 2), 3)\n-    def test_sub(self):\n-        self.assertEqual(sub(3, 2), 1)\n";
        assert_eq!(
            weakens("tests/test_calc.py", diff),
            ["removes 2 test(s)", "removes 2 assertion(s)"]
        );
        let body = "-        self.assertEqual(add(1, 2), 3)\n+        pass\n";
        assert_eq!(
            weakens("tests/test_calc.py", body),
            ["removes 1 assertion(s)"]
        );
        let rust = "-    #[test]\n-    fn adds() {\n-        assert_eq!(add(1, 2), 3);\n-    }\n";
        assert_eq!(
            weakens("src/calc.rs", rust),
            ["removes 1 test(s)", "removes 1 assertion(s)"]
        );
    }

    #[test]
    fn moves_renames_comments_and_code_outside_tests_are_not_weakenings() {
        let moved = "-    @unittest.skip(\"x\")\n+    @unittest.skip(\"x\")\n";
        assert!(weakens("test_a.py", moved).is_empty());
        let renamed = "-    def test_add(self):\n+    def test_addition(self):\n";
        assert!(weakens("test_a.py", renamed).is_empty());
        let comment = "+    # @unittest.skip would hide this\n+// it.skip( is not used here\n";
        assert!(weakens("test_a.py", comment).is_empty());
        assert!(weakens("calc.test.js", "+// it.skip('x')\n").is_empty());
        let code = "-    assert x > 0\n";
        assert!(weakens("calc.py", code).is_empty(), "not a test file");
        assert!(weakens("notes.md", "+@unittest.skip\n").is_empty());
    }

    #[test]
    fn an_edited_expectation_is_shown_to_the_judge_not_failed() {
        let diff =
            "-        self.assertEqual(add(1, 2), 4)\n+        self.assertEqual(add(1, 2), 3)\n";
        let found = find("test_calc.py", diff);
        assert_eq!(found, [Finding::AssertionsEdited(1)]);
        assert!(!found[0].weakens());
    }
}

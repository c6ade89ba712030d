//! Which files are tests and which are the data tests read, by convention: test files by their
//! names and folders (`test_*.py`, `*_test.go`, `*.test.ts`, `tests/`, `__tests__/`, `spec/` …),
//! fixtures by their folders (`fixtures/`, `testdata/`, `__snapshots__/` …) and by being named
//! in a test file's text. Pure: the engine reads the files.

/// Folders whose files are tests.
const TEST_DIRS: &[&str] = &["test", "tests", "__tests__", "spec", "specs", "e2e"];
/// Folders whose files are what tests compare against or read.
const FIXTURE_DIRS: &[&str] = &[
    "fixtures",
    "fixture",
    "testdata",
    "test_data",
    "test-data",
    "snapshots",
    "__snapshots__",
    "golden",
    "goldens",
    "expected",
];
/// Extensions of source code (a changed code file is not a fixture, even if a test names it).
const CODE: &[&str] = &[
    "py", "rs", "go", "js", "jsx", "ts", "tsx", "mjs", "cjs", "java", "kt", "rb", "php", "c", "h",
    "cc", "cpp", "hpp", "cs", "swift", "scala", "sh",
];
/// A name shorter than this is too common to say a test reads that file.
const MIN_NAME: usize = 5;

fn parts(path: &str) -> (Vec<&str>, &str) {
    let mut parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let name = parts.pop().unwrap_or("");
    (parts, name)
}

fn extension(name: &str) -> &str {
    name.rsplit_once('.').map_or("", |(_, ext)| ext)
}

/// Whether `path` is source code by its extension.
pub fn is_code(path: &str) -> bool {
    CODE.contains(&extension(parts(path).1))
}

/// Whether `path` (relative, `/`-separated) is a test file by convention.
pub fn is_test_file(path: &str) -> bool {
    let (dirs, name) = parts(path);
    let ext = extension(name);
    if !CODE.contains(&ext) {
        return false;
    }
    let stem = name.strip_suffix(&format!(".{ext}")).unwrap_or(name);
    dirs.iter().any(|d| TEST_DIRS.contains(d))
        || stem.starts_with("test_")
        || stem.ends_with("_test")
        || stem.ends_with("_spec")
        || stem.ends_with(".test")
        || stem.ends_with(".spec")
        || (matches!(ext, "java" | "kt" | "cs" | "swift" | "scala")
            && (stem.ends_with("Test") || stem.ends_with("Tests")))
}

/// Whether `path` is a fixture by its folder or kind (`fixtures/…`, `*.snap`).
pub fn is_fixture_by_place(path: &str) -> bool {
    let (dirs, name) = parts(path);
    dirs.iter().any(|d| FIXTURE_DIRS.contains(d))
        || matches!(extension(name), "snap" | "golden" | "approved")
}

/// Whether `path` is a fixture: by its place, or a data file (not code) whose path or name a
/// test file's text names.
pub fn is_fixture(path: &str, test_texts: &[String]) -> bool {
    if is_fixture_by_place(path) {
        return true;
    }
    let (_, name) = parts(path);
    if CODE.contains(&extension(name)) || name.len() < MIN_NAME {
        return false;
    }
    test_texts
        .iter()
        .any(|text| text.contains(path) || text.contains(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_files_are_known_by_name_and_folder() {
        for path in [
            "test_calc.py",
            "pkg/calc_test.py",
            "calc_test.go",
            "src/calc.test.js",
            "src/calc.spec.ts",
            "__tests__/calc.js",
            "tests/integration.rs",
            "spec/calc_spec.rb",
            "src/test/java/CalcTest.java",
        ] {
            assert!(is_test_file(path), "{path}");
        }
        for path in [
            "calc.py",
            "src/lib.rs",
            "tests/fixtures/data.json",
            "contest.py",
            "latest_results.txt",
        ] {
            assert!(!is_test_file(path), "{path}");
        }
    }

    #[test]
    fn fixtures_are_known_by_folder_kind_and_by_a_test_naming_them() {
        let tests = vec!["with open(HERE / 'data' / 'greeting.txt') as f:".to_owned()];
        assert!(is_fixture("tests/fixtures/greeting.txt", &[]));
        assert!(is_fixture("pkg/testdata/in.json", &[]));
        assert!(is_fixture("src/__snapshots__/calc.test.js.snap", &[]));
        assert!(is_fixture("data/greeting.txt", &tests));
        assert!(!is_fixture("data/other.txt", &tests));
        assert!(!is_fixture("greeting.py", &["greeting.py".to_owned()]));
        assert!(!is_fixture("a.md", &["a.md".to_owned()]));
    }
}

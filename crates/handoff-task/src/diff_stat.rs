//! `git diff --stat` of a unified diff, line by line: every surface that shows how much a task
//! changed (`handoff diff --stat`, `run`'s summary, `--json`, Matrix, `get_task_history`)
//! counts with this one parser, over the whole stored diff, so the numbers agree and hold for
//! a diff of any size. Only lines inside hunks count; headers never do (an added line that
//! starts with `++` is an added line).

use serde::{Deserialize, Serialize};

use crate::ArtifactBody;

/// Changes to one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FileStat {
    /// The path (the new one for a rename).
    pub path: String,
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
    /// A binary file (no line counts).
    pub binary: bool,
}

/// The stat of a diff read so far.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiffStat {
    files: Vec<FileStat>,
    in_hunk: bool,
}

impl DiffStat {
    /// Counts one line of the diff (without its newline).
    pub fn line(&mut self, line: &str) {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            self.files.push(FileStat {
                path: new_path(rest),
                added: 0,
                removed: 0,
                binary: false,
            });
            self.in_hunk = false;
            return;
        }
        let Some(file) = self.files.last_mut() else {
            return;
        };
        if line.starts_with("@@") {
            self.in_hunk = true;
        } else if !self.in_hunk {
            if line.starts_with("Binary files ") || line == "GIT binary patch" {
                file.binary = true;
            }
        } else if line.starts_with('+') {
            file.added += 1;
        } else if line.starts_with('-') {
            file.removed += 1;
        }
    }

    /// Each file's changes, in the diff's order.
    pub fn files(self) -> Vec<FileStat> {
        self.files
    }
}

/// The stat of a whole diff.
pub fn stat(diff: &str) -> Vec<FileStat> {
    let mut stat = DiffStat::default();
    diff.lines().for_each(|line| stat.line(line));
    stat.files()
}

/// The stat of a stored diff, read whole and line by line (a spilled diff may be tens of MiB:
/// call it off the async threads).
pub fn stat_of_body(body: &ArtifactBody) -> std::io::Result<Vec<FileStat>> {
    use std::io::BufRead;
    let mut stat = DiffStat::default();
    match body {
        ArtifactBody::Inline(bytes) => {
            String::from_utf8_lossy(bytes)
                .lines()
                .for_each(|line| stat.line(line));
        }
        ArtifactBody::File(path) => {
            let file = std::io::BufReader::new(std::fs::File::open(path)?);
            for line in file.split(b'\n') {
                stat.line(String::from_utf8_lossy(&line?).trim_end_matches('\r'));
            }
        }
    }
    Ok(stat.files())
}

/// `b/PATH` of `a/PATH b/PATH` (paths with spaces keep them: the halves are equal length for
/// an unrenamed file).
fn new_path(header: &str) -> String {
    let half = header.len() / 2;
    let candidate = header
        .get(half..)
        .map(str::trim_start)
        .filter(|b| b.starts_with("b/"))
        .or_else(|| header.rfind(" b/").map(|at| &header[at + 1..]))
        .unwrap_or(header);
    candidate.strip_prefix("b/").unwrap_or(candidate).to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/parse.rs b/src/parse.rs
index 1111111..2222222 100644
--- a/src/parse.rs
+++ b/src/parse.rs
@@ -1,3 +1,4 @@
 fn a() {}
-fn b() {}
+fn b() { 1 }
+++counter;
+--x;
diff --git a/new file.txt b/new file.txt
new file mode 100644
--- /dev/null
+++ b/new file.txt
@@ -0,0 +1 @@
+hello
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
";

    #[test]
    fn hunk_lines_are_counted_and_headers_are_not() {
        let files = stat(DIFF);
        let summary: Vec<_> = files
            .iter()
            .map(|f| (f.path.as_str(), f.added, f.removed, f.binary))
            .collect();
        assert_eq!(
            summary,
            [
                ("src/parse.rs", 3, 1, false),
                ("new file.txt", 1, 0, false),
                ("logo.png", 0, 0, true)
            ]
        );
    }

    #[test]
    fn sixty_thousand_added_lines_are_sixty_thousand() {
        let mut diff = String::from(
            "diff --git a/big.txt b/big.txt\nnew file mode 100644\n--- /dev/null\n+++ b/big.txt\n@@ -0,0 +1,60000 @@\n",
        );
        for i in 0..60_000 {
            diff.push_str(&format!("+line {i} {}\n", "x".repeat(i % 50)));
        }
        let files = stat(&diff);
        assert_eq!(files.len(), 1);
        assert_eq!((files[0].added, files[0].removed), (60_000, 0));
    }
}

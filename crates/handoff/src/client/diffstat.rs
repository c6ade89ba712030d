//! `git diff --stat` for a unified diff the client only has as text (a task's diff artifact).

/// Changes to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// The path (the new one for a rename).
    pub path: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
    /// A binary file (no line counts).
    pub binary: bool,
}

/// Counts the added and removed lines of each file in `diff` (`diff --git` sections; header
/// lines are not counted, only lines inside hunks).
pub fn stat(diff: &str) -> Vec<FileStat> {
    let mut files: Vec<FileStat> = Vec::new();
    let mut in_hunk = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            files.push(FileStat {
                path: new_path(rest),
                added: 0,
                removed: 0,
                binary: false,
            });
            in_hunk = false;
            continue;
        }
        let Some(file) = files.last_mut() else {
            continue;
        };
        if line.starts_with("@@") {
            in_hunk = true;
        } else if !in_hunk {
            if line.starts_with("Binary files ") || line == "GIT binary patch" {
                file.binary = true;
            }
        } else if line.starts_with('+') {
            file.added += 1;
        } else if line.starts_with('-') {
            file.removed += 1;
        }
    }
    files
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

/// The stat as git prints it: ` path | N +++--` per file and a summary line.
pub fn render(files: &[FileStat]) -> String {
    if files.is_empty() {
        return " no changes".to_owned();
    }
    const BAR: usize = 40;
    let width = files
        .iter()
        .map(|f| f.path.chars().count())
        .max()
        .unwrap_or(0);
    let most = files.iter().map(|f| f.added + f.removed).max().unwrap_or(0);
    let digits = most.to_string().len();
    let mut out = Vec::new();
    for f in files {
        if f.binary {
            out.push(format!(" {:width$} | {:>digits$}", f.path, "Bin"));
            continue;
        }
        let total = f.added + f.removed;
        let scale = |n: usize| {
            if most <= BAR {
                n
            } else {
                (n * BAR).div_ceil(most)
            }
        };
        let bar = format!(
            "{}{}",
            "+".repeat(scale(f.added)),
            "-".repeat(scale(f.removed))
        );
        out.push(format!(" {:width$} | {total:>digits$} {bar}", f.path));
    }
    let added: usize = files.iter().map(|f| f.added).sum();
    let removed: usize = files.iter().map(|f| f.removed).sum();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut summary = format!(" {} changed", plural(files.len(), "file"));
    if added > 0 || removed == 0 {
        summary.push_str(&format!(", {}(+)", plural(added, "insertion")));
    }
    if removed > 0 {
        summary.push_str(&format!(", {}(-)", plural(removed, "deletion")));
    }
    out.push(summary);
    out.join("\n")
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
        assert_eq!(
            render(&files),
            " src/parse.rs | 4 +++-\n new file.txt | 1 +\n logo.png     | Bin\n \
             3 files changed, 4 insertions(+), 1 deletion(-)"
        );
        assert_eq!(render(&[]), " no changes");
    }
}

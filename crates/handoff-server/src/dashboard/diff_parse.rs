//! A unified diff read into files and numbered lines: each file's header, its hunks' lines
//! with the line numbers they have before and after the change (from the `@@ -a,b +c,d @@`
//! headers), and its added and removed lines counted as `handoff_task::diff_stat` counts them.
//! A diff shown in parts starts a part where the last one ended ([`Resume`]), so its lines
//! keep their file and numbers.

use handoff_task::DiffStat;

/// What a line of a unified diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// `diff --git`, `index`, `---`, `+++` and the like, before a file's first hunk.
    File,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    /// An added line.
    Add,
    /// A removed line.
    Del,
    /// An unchanged line around the changes.
    Context,
    /// `\ No newline at end of file`.
    Note,
}

impl LineKind {
    /// The CSS class.
    pub(crate) fn class(self) -> &'static str {
        match self {
            LineKind::File => "d-file",
            LineKind::Hunk => "d-hunk",
            LineKind::Add => "d-add",
            LineKind::Del => "d-del",
            LineKind::Context => "d-ctx",
            LineKind::Note => "d-note",
        }
    }

    /// Whether a person can comment on the line: it is a line of the file, before or after.
    pub(crate) fn is_code(self) -> bool {
        matches!(self, LineKind::Add | LineKind::Del | LineKind::Context)
    }
}

/// One line, with its numbers in the old and the new file where it has them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DiffLine {
    /// What it is.
    pub(crate) kind: LineKind,
    /// Its number in the file before the change (removed and unchanged lines).
    pub(crate) old: Option<u64>,
    /// Its number in the file after the change (added and unchanged lines).
    pub(crate) new: Option<u64>,
    /// The line as the diff has it (with its `+`, `-` or space).
    pub(crate) text: String,
}

/// One file's part of the diff.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct FileDiff {
    /// The path (the new one for a rename; empty when the diff names none).
    pub(crate) path: String,
    /// The file began in an earlier part of the diff.
    pub(crate) continued: bool,
    /// Its lines, header first.
    pub(crate) lines: Vec<DiffLine>,
    /// Lines added, in this part.
    pub(crate) added: u64,
    /// Lines removed, in this part.
    pub(crate) removed: u64,
    /// A binary file (no lines).
    pub(crate) binary: bool,
}

/// Where a part of a diff starts: the file it continues and the numbers its next lines have.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Resume {
    /// The file.
    pub(crate) path: String,
    /// The next old line number.
    pub(crate) old: u64,
    /// The next new line number.
    pub(crate) new: u64,
    /// The part starts inside a hunk (else in a file's header).
    pub(crate) in_hunk: bool,
}

/// The reader's state between lines.
struct Reader {
    files: Vec<FileDiff>,
    in_hunk: bool,
    /// The next old and new line numbers; `None` after a hunk header it could not read.
    at: Option<(u64, u64)>,
    /// The old and new lines the hunk has yet to show, as its header says; `None` (a hunk
    /// begun in an earlier part, or an unreadable header): it lasts to the next header.
    left: Option<(u64, u64)>,
}

/// `diff` (a part of one, starting where `resume` says when it is not the first) as files of
/// numbered lines, and where the part after it starts.
pub(crate) fn parse(diff: &str, resume: Option<&Resume>) -> (Vec<FileDiff>, Resume) {
    let mut reader = Reader {
        files: Vec::new(),
        in_hunk: resume.is_some_and(|r| r.in_hunk),
        at: resume.map(|r| (r.old, r.new)),
        left: None,
    };
    if let Some(resume) = resume {
        reader.files.push(FileDiff {
            path: resume.path.clone(),
            continued: true,
            ..FileDiff::default()
        });
    }
    diff.lines().for_each(|line| reader.line(line));
    let (old, new) = reader.at.unwrap_or_default();
    let end = Resume {
        path: reader
            .files
            .last()
            .map(|f| f.path.clone())
            .unwrap_or_default(),
        old,
        new,
        in_hunk: reader.in_hunk,
    };
    // A part that starts with a new file continues none.
    reader.files.retain(|f| !f.lines.is_empty());
    (reader.files, end)
}

impl Reader {
    /// Reads one line (without its newline).
    fn line(&mut self, line: &str) {
        if line.starts_with("diff --git ") {
            self.files.push(FileDiff {
                path: git_path(line),
                ..FileDiff::default()
            });
            self.in_hunk = false;
            self.at = None;
            return self.push(LineKind::File, line, None, None);
        }
        if line.starts_with("@@") {
            let hunk = hunk_header(line);
            self.in_hunk = true;
            self.at = hunk.map(|h| (h.0, h.2));
            self.left = hunk.map(|h| (h.1, h.3));
            return self.push(LineKind::Hunk, line, None, None);
        }
        // Follows the last line of a hunk, whose count it is not part of.
        if line.starts_with('\\') {
            return self.push(LineKind::Note, line, None, None);
        }
        if !self.in_hunk {
            return self.header(line);
        }
        let (old, new) = match self.at {
            Some(at) => (Some(at.0), Some(at.1)),
            None => (None, None),
        };
        match line.as_bytes().first() {
            Some(b'+') => {
                self.step(LineKind::Add);
                self.push(LineKind::Add, line, None, new);
            }
            Some(b'-') => {
                self.step(LineKind::Del);
                self.push(LineKind::Del, line, old, None);
            }
            // An empty line is context whose leading space was trimmed away.
            Some(b' ') | None => {
                self.step(LineKind::Context);
                self.push(LineKind::Context, line, old, new);
            }
            Some(_) => {
                // Not a hunk line: the hunk ended early.
                self.in_hunk = false;
                self.header(line);
            }
        }
    }

    /// Moves past an added, removed or unchanged line; the hunk ends with its last line.
    fn step(&mut self, kind: LineKind) {
        let (old, new) = match kind {
            LineKind::Add => (0, 1),
            LineKind::Del => (1, 0),
            _ => (1, 1),
        };
        if let Some((a, b)) = &mut self.at {
            *a += old;
            *b += new;
        }
        if let Some(file) = self.files.last_mut() {
            match kind {
                LineKind::Add => file.added += 1,
                LineKind::Del => file.removed += 1,
                _ => {}
            }
        }
        if let Some((a, b)) = &mut self.left {
            *a = a.saturating_sub(old);
            *b = b.saturating_sub(new);
            if (*a, *b) == (0, 0) {
                self.in_hunk = false;
                self.left = None;
            }
        }
    }

    /// A header line of the current file (a diff without `diff --git` starts one).
    fn header(&mut self, line: &str) {
        if self.files.is_empty() || (line.starts_with("--- ") && self.after_hunks()) {
            self.files.push(FileDiff::default());
        }
        if let Some(file) = self.files.last_mut() {
            if line.starts_with("Binary files ") || line == "GIT binary patch" {
                file.binary = true;
            }
            if file.path.is_empty()
                && let Some(path) = line.strip_prefix("+++ ")
                && path != "/dev/null"
            {
                file.path = path.strip_prefix("b/").unwrap_or(path).to_owned();
            }
        }
        self.push(LineKind::File, line, None, None);
    }

    /// Whether the current file already has hunk lines (a new `---` starts another file).
    fn after_hunks(&self) -> bool {
        self.files
            .last()
            .is_some_and(|f| f.lines.iter().any(|l| l.kind == LineKind::Hunk))
    }

    fn push(&mut self, kind: LineKind, text: &str, old: Option<u64>, new: Option<u64>) {
        if self.files.is_empty() {
            self.files.push(FileDiff::default());
        }
        if let Some(file) = self.files.last_mut() {
            file.lines.push(DiffLine {
                kind,
                old,
                new,
                text: text.to_owned(),
            });
        }
    }
}

/// The path a `diff --git a/… b/…` line names, as `handoff_task::diff_stat` reads it.
fn git_path(line: &str) -> String {
    let mut stat = DiffStat::default();
    stat.line(line);
    stat.files().pop().map(|f| f.path).unwrap_or_default()
}

/// `a, b, c, d` of `@@ -a[,b] +c[,d] @@` (a missing length is 1): where the hunk starts in
/// the old and the new file, and how many lines of each it shows.
fn hunk_header(line: &str) -> Option<(u64, u64, u64, u64)> {
    let ranges = line.strip_prefix("@@ -")?;
    let (old, rest) = ranges.split_once(" +")?;
    let new = rest.split(' ').next()?;
    let range = |text: &str| -> Option<(u64, u64)> {
        let (start, len) = text.split_once(',').unwrap_or((text, "1"));
        Some((start.parse().ok()?, len.parse().ok()?))
    };
    let (old, new) = (range(old)?, range(new)?);
    Some((old.0, old.1, new.0, new.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DIFF: &str = "diff --git a/src/parse.rs b/src/parse.rs
index 1111111..2222222 100644
--- a/src/parse.rs
+++ b/src/parse.rs
@@ -10,3 +10,3 @@ fn parse() {
 fn a() {}
-fn b() {}
+fn b() { 1 }
+++counter;
--- not a header
@@ -40 +41,2 @@
 last
+after
\\ No newline at end of file
diff --git a/new file.txt b/new file.txt
new file mode 100644
--- /dev/null
+++ b/new file.txt
@@ -0,0 +1 @@
+hello
diff --git a/logo.png b/logo.png
Binary files a/logo.png and b/logo.png differ
";

    fn numbers(file: &FileDiff) -> Vec<(LineKind, Option<u64>, Option<u64>)> {
        file.lines.iter().map(|l| (l.kind, l.old, l.new)).collect()
    }

    #[test]
    fn lines_are_numbered_from_their_hunk_headers() {
        let (files, _) = parse(DIFF, None);
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["src/parse.rs", "new file.txt", "logo.png"]);
        use LineKind::*;
        assert_eq!(
            numbers(&files[0])[4..],
            [
                (Hunk, None, None),
                (Context, Some(10), Some(10)),
                (Del, Some(11), None),
                (Add, None, Some(11)),
                (Add, None, Some(12)),
                (Del, Some(12), None),
                (Hunk, None, None),
                (Context, Some(40), Some(41)),
                (Add, None, Some(42)),
                (Note, None, None),
            ]
        );
        assert_eq!(numbers(&files[0])[..4], [(File, None, None); 4]);
        assert_eq!(files[1].lines.last().unwrap().new, Some(1));
        assert!(files[2].binary && !files[0].binary);
    }

    #[test]
    fn counts_agree_with_the_task_crates_stat() {
        let (files, _) = parse(DIFF, None);
        let stat = handoff_task::diff_stat(DIFF);
        let ours: Vec<(&str, u64, u64, bool)> = files
            .iter()
            .map(|f| (f.path.as_str(), f.added, f.removed, f.binary))
            .collect();
        let theirs: Vec<(&str, u64, u64, bool)> = stat
            .iter()
            .map(|f| (f.path.as_str(), f.added, f.removed, f.binary))
            .collect();
        assert_eq!(ours, theirs);
    }

    #[test]
    fn a_diff_read_in_parts_keeps_its_files_and_numbers() {
        let cut = DIFF.find("+fn b()").unwrap();
        let (first, resume) = parse(&DIFF[..cut], None);
        assert_eq!(
            resume,
            Resume {
                path: "src/parse.rs".into(),
                old: 12,
                new: 11,
                in_hunk: true
            }
        );
        let (rest, _) = parse(&DIFF[cut..], Some(&resume));
        let next_file = DIFF.find("diff --git a/new").unwrap();
        let (later, _) = parse(&DIFF[next_file..], Some(&resume));
        assert!(!later[0].continued && later[0].path == "new file.txt");
        assert!(rest[0].continued && rest[0].path == "src/parse.rs");
        assert_eq!(rest[0].lines[0].new, Some(11));
        let (whole, _) = parse(DIFF, None);
        let lines = |files: &[FileDiff]| files.iter().map(|f| f.lines.len()).sum::<usize>();
        assert_eq!(lines(&first) + lines(&rest), lines(&whole));
        assert_eq!(first[0].removed + rest[0].removed, whole[0].removed);
    }

    #[test]
    fn plain_unified_diffs_and_bad_headers_are_read_too() {
        let plain = "--- a/x.txt\n+++ b/x.txt\n@@ -1 +1 @@\n-a\n+b\n--- a/y.txt\n+++ b/y.txt\n@@ bad @@\n+c\n";
        let (files, _) = parse(plain, None);
        assert_eq!(files.len(), 2);
        assert_eq!(
            (files[0].path.as_str(), files[1].path.as_str()),
            ("x.txt", "y.txt")
        );
        assert_eq!(files[0].lines[4].new, Some(1));
        assert_eq!(
            files[1].lines[3],
            DiffLine {
                kind: LineKind::Add,
                old: None,
                new: None,
                text: "+c".into()
            }
        );
        assert_eq!(hunk_header("@@ -7,0 +8,3 @@ ctx"), Some((7, 0, 8, 3)));
        assert_eq!(hunk_header("@@ -7 +8 @@"), Some((7, 1, 8, 1)));
        assert_eq!(hunk_header("@@@ -1 -1 +1 @@@"), None);
    }
}

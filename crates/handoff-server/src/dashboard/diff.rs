//! A diff as HTML: one collapsible section per file (open, with its name and its added and
//! removed lines), each line in a row with its old and new line numbers and a class saying
//! what it is, so the stylesheet colours it. Every line of a file carries a comment button
//! naming the file and the line (the script shows them and collects the comments).

use maud::{Markup, html};

use super::diff_parse::{DiffLine, FileDiff};

/// `files` (a part of a diff) as one `<details>` per file; `more`: the last file goes on in
/// the next part.
pub(crate) fn render(files: &[FileDiff], more: bool) -> Markup {
    html! {
        @for (n, file) in files.iter().enumerate() {
            (file_section(file, more && n + 1 == files.len()))
        }
    }
}

/// One file: a summary line with its name and counts, then its lines.
fn file_section(file: &FileDiff, goes_on: bool) -> Markup {
    let name = if file.path.is_empty() {
        "(unnamed file)"
    } else {
        file.path.as_str()
    };
    html! {
        details.diff-file open data-file=(file.path) {
            summary {
                code.path { (name) }
                @if file.binary {
                    span.binary { " binary" }
                } @else {
                    " " span.adds { "+" (file.added) } " " span.dels { "−" (file.removed) }
                    @if file.continued || goes_on { span.note { " in this part" } }
                }
                @if file.continued { span.note { " (continued from the previous part)" } }
                @if goes_on { span.note { " (continues in the next part)" } }
            }
            table.diff {
                @for line in &file.lines { (row(&file.path, line)) }
            }
        }
    }
}

/// One line: its numbers, its comment button (lines of the file only) and its text.
fn row(path: &str, line: &DiffLine) -> Markup {
    let number = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
    let (old, new) = (number(line.old), number(line.new));
    let at = if new.is_empty() { &old } else { &new };
    html! {
        tr class=(line.kind.class()) {
            td.ln.old { (old) }
            td.ln.new { (new) }
            td.code {
                @if line.kind.is_code() {
                    button.cmt type="button" data-file=(path) data-old=(old) data-new=(new)
                        title="Comment on this line" aria-label=(format!("Comment on line {at}")) { "✎" }
                }
                span.txt { (line.text) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::diff_parse::parse;
    use super::*;

    #[test]
    fn files_are_sections_and_lines_carry_their_numbers_escaped() {
        let diff = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n-old <b>\n+new & \"q\"\n same\n";
        let (files, _) = parse(diff, None);
        let html = render(&files, false).into_string();
        assert!(
            html.contains(r#"<details class="diff-file" open data-file="x.py">"#),
            "{html}"
        );
        assert!(html.contains(r#"<span class="adds">+1</span>"#), "{html}");
        assert!(html.contains(r#"<span class="dels">−1</span>"#), "{html}");
        assert!(
            html.contains(r#"<tr class="d-del"><td class="ln old">1</td><td class="ln new"></td>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"data-file="x.py" data-old="" data-new="1""#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="txt">-old &lt;b&gt;</span>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="txt">+new &amp; &quot;q&quot;</span>"#),
            "{html}"
        );
        assert!(html.contains(r#"data-old="2" data-new="2""#), "{html}");
        assert!(!html.contains("<b>"));
        // Headers and hunk lines have no button.
        assert_eq!(html.matches("class=\"cmt\"").count(), 3, "{html}");
        assert!(!html.contains("continues"));
    }

    #[test]
    fn hostile_paths_are_escaped_and_parts_say_they_go_on() {
        let diff = "diff --git a/\"><script>x b/\"><script>x\n@@ -1 +1 @@\n-a\n+b\n";
        let (files, _) = parse(diff, None);
        let html = render(&files, true).into_string();
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("continues in the next part"), "{html}");
        assert!(html.contains(" in this part"), "{html}");
    }
}

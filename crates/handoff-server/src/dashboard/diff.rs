//! A unified diff as coloured HTML: each line in a span whose class says what it is, so the
//! stylesheet colours additions, removals, hunk headers and file headers.

use maud::{Markup, html};

/// What a line of a unified diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LineKind {
    /// `diff --git`, `index`, `---`, `+++` and the like.
    File,
    /// `@@ -a,b +c,d @@`.
    Hunk,
    /// An added line.
    Add,
    /// A removed line.
    Del,
    /// Context, or anything else.
    Context,
}

impl LineKind {
    /// The line's kind.
    pub(crate) fn of(line: &str) -> Self {
        const FILE: &[&str] = &[
            "diff ",
            "index ",
            "--- ",
            "+++ ",
            "new file",
            "deleted file",
            "similarity ",
            "rename ",
            "old mode",
            "new mode",
            "Binary files",
        ];
        if FILE.iter().any(|p| line.starts_with(p)) {
            LineKind::File
        } else if line.starts_with("@@") {
            LineKind::Hunk
        } else if line.starts_with('+') {
            LineKind::Add
        } else if line.starts_with('-') {
            LineKind::Del
        } else {
            LineKind::Context
        }
    }

    /// The CSS class.
    pub(crate) fn class(self) -> &'static str {
        match self {
            LineKind::File => "d-file",
            LineKind::Hunk => "d-hunk",
            LineKind::Add => "d-add",
            LineKind::Del => "d-del",
            LineKind::Context => "d-ctx",
        }
    }
}

/// The diff as a `<pre class="diff">`, one span per line (text escaped).
pub(crate) fn render(diff: &str) -> Markup {
    html! {
        pre.diff {
            @for line in diff.lines() {
                span class=(LineKind::of(line).class()) { (line) "\n" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_classified_and_escaped() {
        let diff =
            "diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-old <b>\n+new & \"q\"\n same\n";
        let html = render(diff).into_string();
        assert!(
            html.contains(r#"<span class="d-file">diff --git a/x b/x"#),
            "{html}"
        );
        assert!(html.contains(r#"<span class="d-file">+++ b/x"#), "{html}");
        assert!(
            html.contains(r#"<span class="d-hunk">@@ -1 +1 @@"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="d-del">-old &lt;b&gt;"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="d-add">+new &amp; &quot;q&quot;"#),
            "{html}"
        );
        assert!(html.contains(r#"<span class="d-ctx"> same"#), "{html}");
        assert!(!html.contains("<b>"));
    }
}

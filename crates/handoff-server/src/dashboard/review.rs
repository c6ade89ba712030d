//! Line comments on a task's diff, as one message to its agent. The page collects them and
//! sends them as the `comments` field of the message form (a JSON array); they are checked
//! here and written as a list the agent reads:
//!
//! ```text
//! Review comments:
//! - src/parse.py:12 (`return None`): say why it may be None
//! ```

use serde::Deserialize;

use super::forms::Refused;

/// Comments sent at once, at most.
const MAX_COMMENTS: usize = 200;
/// Characters of one comment, at most.
const COMMENT_CHARS: usize = 4000;
/// Characters of a path, at most.
const PATH_CHARS: usize = 4096;
/// Characters of the commented line quoted back, at most (longer ones are shortened).
const QUOTE_CHARS: usize = 200;

/// Which side of the diff a line is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Side {
    /// A line of the changed file (added or unchanged): numbered as it is now.
    New,
    /// A removed line: numbered as it was.
    Old,
}

/// One comment on one line.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct LineComment {
    /// The file's path in the diff.
    pub(crate) file: String,
    /// The line's number on its side.
    pub(crate) line: u64,
    /// Its side.
    pub(crate) side: Side,
    /// The line as shown (without its `+`, `-` or space).
    #[serde(default)]
    pub(crate) text: String,
    /// What the person wrote.
    pub(crate) comment: String,
}

/// The `comments` field read and checked; errors name the field, never what it held.
pub(crate) fn parse(json: &str) -> Result<Vec<LineComment>, Refused> {
    let comments: Vec<LineComment> = serde_json::from_str(json).map_err(|_| {
        Refused::field(
            "comments",
            "expected a JSON array of {file, line, side, text, comment}",
        )
    })?;
    if comments.len() > MAX_COMMENTS {
        return Err(Refused::field("comments", "more than 200 comments"));
    }
    for comment in &comments {
        if comment.comment.trim().is_empty() {
            return Err(Refused::field("comments", "a comment is empty"));
        }
        if comment.comment.chars().count() > COMMENT_CHARS {
            return Err(Refused::field(
                "comments",
                "a comment is longer than 4000 characters",
            ));
        }
        if comment.file.is_empty() || comment.file.chars().count() > PATH_CHARS {
            return Err(Refused::field("comments", "a comment names no file"));
        }
    }
    Ok(comments)
}

/// The comments as the message the agent reads.
pub(crate) fn message(comments: &[LineComment]) -> String {
    let mut text = String::from("Review comments:");
    for comment in comments {
        let at = match comment.side {
            Side::New => format!("{}:{}", comment.file, comment.line),
            Side::Old => format!("{}, removed line {}", comment.file, comment.line),
        };
        let quoted = quote(&comment.text);
        let said = comment.comment.trim().replace('\n', "\n  ");
        if quoted.is_empty() {
            text.push_str(&format!("\n- {at}: {said}"));
        } else {
            text.push_str(&format!("\n- {at} ({quoted}): {said}"));
        }
    }
    text
}

/// The line as inline code, shortened; empty for a blank line.
fn quote(line: &str) -> String {
    let line = line.trim();
    if line.is_empty() {
        return String::new();
    }
    let mut shown: String = line.chars().take(QUOTE_CHARS).collect();
    if shown.len() < line.len() {
        shown.push('…');
    }
    // A backtick inside needs a longer fence (and a space before a backtick at an end).
    if shown.contains('`') {
        format!("`` {shown} ``")
    } else {
        format!("`{shown}`")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_become_one_list() {
        let comments = parse(
            r#"[{"file":"path/to/file.py","line":12,"side":"new","text":"  return None ","comment":"say why\nit may be None"},
                {"file":"a.rs","line":3,"side":"old","text":"let `x` = 1;","comment":"keep it"},
                {"file":"b.txt","line":1,"side":"new","text":"","comment":"empty line?"}]"#,
        )
        .unwrap();
        assert_eq!(
            message(&comments),
            "Review comments:\n\
             - path/to/file.py:12 (`return None`): say why\n  it may be None\n\
             - a.rs, removed line 3 (`` let `x` = 1; ``): keep it\n\
             - b.txt:1: empty line?"
        );
    }

    #[test]
    fn long_lines_are_shortened() {
        let long = "x".repeat(500);
        assert_eq!(quote(&long).chars().count(), QUOTE_CHARS + 3);
        assert!(quote(&long).ends_with("…`"));
    }

    #[test]
    fn bad_comments_are_refused_by_field_without_their_content() {
        let long = format!(
            r#"[{{"file":"a","line":1,"side":"new","comment":"{}"}}]"#,
            "y".repeat(COMMENT_CHARS + 1)
        );
        let many = format!(
            "[{}]",
            vec![r#"{"file":"a","line":1,"side":"new","comment":"c"}"#; MAX_COMMENTS + 1].join(",")
        );
        for body in [
            "<secret>".to_owned(),
            r#"[{"file":"a","line":1,"side":"left","comment":"<secret>"}]"#.to_owned(),
            r#"[{"file":"a","line":-1,"side":"new","comment":"c"}]"#.to_owned(),
            r#"[{"file":"","line":1,"side":"new","comment":"c"}]"#.to_owned(),
            r#"[{"file":"a","line":1,"side":"new","comment":"  "}]"#.to_owned(),
            r#"[{"file":"a","line":1,"side":"new","comment":"c","extra":"<secret>"}]"#.to_owned(),
            long,
            many,
        ] {
            let refusal = parse(&body).unwrap_err();
            assert!(
                refusal.message.starts_with("field `comments`"),
                "{}",
                refusal.message
            );
            assert!(!refusal.message.contains("secret") && !refusal.message.contains("yyy"));
        }
    }
}

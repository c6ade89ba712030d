//! Cutting one text to a cap.

use serde::{Deserialize, Serialize};

/// Which end of a text to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// The beginning (documents, listings).
    #[default]
    Head,
    /// The end (command output: errors come last).
    Tail,
    /// Both ends, half the budget each.
    HeadTail,
}

/// A cap on lines and bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cap {
    /// Most lines kept.
    pub max_lines: usize,
    /// Most bytes kept.
    pub max_bytes: usize,
    /// Which end is kept.
    #[serde(default)]
    pub direction: Direction,
}

impl Default for Cap {
    fn default() -> Self {
        Self {
            max_lines: 2000,
            max_bytes: 50 * 1024,
            direction: Direction::Head,
        }
    }
}

/// The result of cutting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    /// The kept text (no notice added).
    pub text: String,
    /// Whether anything was cut.
    pub truncated: bool,
    /// Bytes before cutting.
    pub original_bytes: usize,
    /// Lines before cutting.
    pub original_lines: usize,
}

/// Cuts `text` to `cap`.
pub fn truncate(text: &str, cap: Cap) -> Cut {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let original = Cut {
        text: String::new(),
        truncated: false,
        original_bytes: text.len(),
        original_lines: lines.len(),
    };
    if text.len() <= cap.max_bytes && lines.len() <= cap.max_lines {
        return Cut {
            text: text.to_owned(),
            ..original
        };
    }
    let kept = match cap.direction {
        Direction::Head => head(&lines, cap.max_lines, cap.max_bytes),
        Direction::Tail => tail(&lines, cap.max_lines, cap.max_bytes),
        Direction::HeadTail => {
            let first = head(&lines, cap.max_lines.div_ceil(2), cap.max_bytes.div_ceil(2));
            let last = tail(&lines, cap.max_lines / 2, cap.max_bytes / 2);
            let separator = if first.ends_with('\n') || first.is_empty() {
                ""
            } else {
                "\n"
            };
            format!("{first}{separator}…\n{last}")
        }
    };
    Cut {
        text: kept,
        truncated: true,
        ..original
    }
}

fn head(lines: &[&str], max_lines: usize, max_bytes: usize) -> String {
    let mut out = String::new();
    for line in lines.iter().take(max_lines) {
        if out.len() + line.len() > max_bytes {
            if out.is_empty() {
                out.push_str(&line[..floor_boundary(line, max_bytes)]);
            }
            break;
        }
        out.push_str(line);
    }
    out
}

fn tail(lines: &[&str], max_lines: usize, max_bytes: usize) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut bytes = 0;
    for line in lines.iter().rev().take(max_lines) {
        if bytes + line.len() > max_bytes {
            if kept.is_empty() {
                let start = ceil_boundary(line, line.len().saturating_sub(max_bytes));
                kept.push(&line[start..]);
            }
            break;
        }
        bytes += line.len();
        kept.push(line);
    }
    kept.reverse();
    kept.concat()
}

fn floor_boundary(s: &str, mut at: usize) -> usize {
    at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(s: &str, mut at: usize) -> usize {
    while at < s.len() && !s.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    #[test]
    fn within_the_cap_nothing_changes() {
        let cut = truncate("a\nb\n", Cap::default());
        assert!(!cut.truncated);
        assert_eq!(cut.text, "a\nb\n");
    }

    #[test]
    fn head_keeps_the_first_lines_and_tail_the_last() {
        let text = numbered(10);
        let cap = |direction| Cap {
            max_lines: 3,
            max_bytes: 1000,
            direction,
        };
        let head = truncate(&text, cap(Direction::Head));
        assert_eq!(head.text, "line 1\nline 2\nline 3\n");
        assert_eq!((head.original_lines, head.original_bytes), (10, text.len()));
        assert_eq!(
            truncate(&text, cap(Direction::Tail)).text,
            "line 8\nline 9\nline 10\n"
        );
        let both = truncate(&text, cap(Direction::HeadTail)).text;
        assert!(both.starts_with("line 1\nline 2\n…\n"), "{both}");
        assert!(both.ends_with("line 10\n"), "{both}");
    }

    #[test]
    fn the_byte_cap_applies_and_never_splits_a_code_point() {
        let text = "é".repeat(100); // 200 bytes, one line
        for direction in [Direction::Head, Direction::Tail, Direction::HeadTail] {
            let cut = truncate(
                &text,
                Cap {
                    max_lines: 10,
                    max_bytes: 51,
                    direction,
                },
            );
            assert!(cut.truncated);
            assert!(
                cut.text.len() <= 51 + "\n…\n".len(),
                "{direction:?}: {}",
                cut.text.len()
            );
            assert!(cut.text.chars().all(|c| c == 'é' || c == '…' || c == '\n'));
        }
    }

    #[test]
    fn the_default_is_2000_lines_or_50_kib() {
        let cut = truncate(&numbered(3000), Cap::default());
        assert_eq!(cut.text.lines().count(), 2000);
        let wide = "x".repeat(60 * 1024);
        assert_eq!(truncate(&wide, Cap::default()).text.len(), 50 * 1024);
    }
}

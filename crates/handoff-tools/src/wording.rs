//! The small pieces every tool's text is made of: durations, sizes, counts, one-line excerpts
//! and the calls a text suggests. Texts are read by models, so each piece is short and plain.

use serde_json::Value;

/// `2m 13s`, `45s`, `1h 05m`.
pub(crate) fn duration(ms: i64) -> String {
    let secs = ms.max(0) / 1000;
    match secs {
        0..60 => format!("{secs}s"),
        60..3600 => format!("{}m {:02}s", secs / 60, secs % 60),
        _ => format!("{}h {:02}m", secs / 3600, secs % 3600 / 60),
    }
}

/// `512 bytes`, `1.2 KiB`, `3.4 MiB`.
pub(crate) fn size(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / KIB),
        _ => format!("{:.1} MiB", bytes as f64 / (KIB * KIB)),
    }
}

/// `1 task`, `3 tasks`.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// A call a text suggests, as the model would send it: `get_task_status {"task_id":"…"}`.
pub(crate) fn call(tool: &str, arguments: Value) -> String {
    format!("{tool} {arguments}")
}

/// `text` on one line (runs of whitespace become one space), at most `max` characters; a cut
/// ends in `…`.
pub(crate) fn line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    clip_chars(&flat, max)
}

/// `text` with its line breaks, at most `max_lines` lines and `max` characters from its start;
/// a cut ends in `…`.
pub(crate) fn passage(text: &str, max_lines: usize, max: usize) -> String {
    let trimmed = text.trim();
    let kept = trimmed
        .lines()
        .take(max_lines)
        .collect::<Vec<_>>()
        .join("\n");
    let more_lines = trimmed.lines().nth(max_lines).is_some();
    let clipped = clip_chars(&kept, max);
    if more_lines && !clipped.ends_with('…') {
        format!("{clipped} …")
    } else {
        clipped
    }
}

/// The longest start of `text` of at most `max` bytes that ends on a character boundary.
pub(crate) fn head_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// The shortest end of `text` of at most `max` bytes that starts on a character boundary.
pub(crate) fn tail_bytes(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// `text`'s first `max` characters, `…` marking a cut.
fn clip_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text[cut..].chars().nth(1).is_some() => format!("{}…", &text[..cut]),
        _ => text.to_owned(),
    }
}

/// `text` with its first letter in upper case.
pub(crate) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn durations_read_like_a_clock() {
        assert_eq!(duration(400), "0s");
        assert_eq!(duration(45_000), "45s");
        assert_eq!(duration(133_000), "2m 13s");
        assert_eq!(duration(3_900_000), "1h 05m");
        assert_eq!(duration(-5), "0s");
    }

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(size(512), "512 bytes");
        assert_eq!(size(1229), "1.2 KiB");
        assert_eq!(size(3 << 20), "3.0 MiB");
    }

    #[test]
    fn lines_are_flat_and_bounded() {
        assert_eq!(line("a\n  b\tc", 10), "a b c");
        assert_eq!(line("abcdef", 4), "abc…");
        assert_eq!(line("abcd", 4), "abcd");
        assert_eq!(line("éééé", 2), "é…");
    }

    #[test]
    fn passages_keep_lines_up_to_their_bounds() {
        assert_eq!(passage("a\nb\nc", 5, 100), "a\nb\nc");
        assert_eq!(passage("a\nb\nc", 2, 100), "a\nb …");
        assert_eq!(passage("abcdef", 5, 3), "ab…");
    }

    #[test]
    fn byte_cuts_never_split_a_character() {
        assert_eq!(head_bytes("aé", 2), "a");
        assert_eq!(tail_bytes("éa", 2), "a");
        assert_eq!(head_bytes("abc", 10), "abc");
    }

    #[test]
    fn calls_are_what_a_model_sends() {
        assert_eq!(
            call("get_task_status", json!({"task_id": "task_a"})),
            r#"get_task_status {"task_id":"task_a"}"#
        );
        assert_eq!(count(1, "task", "tasks"), "1 task");
        assert_eq!(count(0, "task", "tasks"), "0 tasks");
        assert_eq!(capitalized("answered"), "Answered");
    }
}

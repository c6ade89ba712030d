//! Small text helpers shared by the block and the notification.

/// `text` cut to at most `max` characters, ending in `…` when cut.
pub(crate) fn clip_chars(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut clipped: String = text.chars().take(max.saturating_sub(1)).collect();
    clipped.push('…');
    clipped
}

/// `text` cut to at most `max` bytes on a character boundary, ending in `…` when cut.
pub(crate) fn clip_bytes(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let budget = max.saturating_sub('…'.len_utf8());
    let end = (0..=budget)
        .rev()
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &text[..end])
}

/// A task's title: the first non-empty line of its description, clipped to `max` characters.
pub(crate) fn title(description: &str, max: usize) -> String {
    let line = description
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("(no description)");
    clip_chars(line, max)
}

/// Unix milliseconds as an RFC 3339 UTC time (seconds precision).
pub(crate) fn iso(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_default()
}

/// A duration in milliseconds as a short human text (`850 ms`, `12.4 s`, `3 min 05 s`).
pub(crate) fn duration_text(ms: i64) -> String {
    match ms {
        ..=999 => format!("{} ms", ms.max(0)),
        1_000..=59_999 => format!("{:.1} s", ms as f64 / 1000.0),
        _ => format!("{} min {:02} s", ms / 60_000, (ms / 1000) % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_respects_characters_and_bytes() {
        assert_eq!(clip_chars("abc", 3), "abc");
        assert_eq!(clip_chars("abcd", 3), "ab…");
        assert_eq!(clip_chars("ééééé", 4).chars().count(), 4);
        let cut = clip_bytes("ééééé", 6);
        assert!(cut.len() <= 6 && cut.ends_with('…'), "{cut}");
        assert_eq!(clip_bytes("short", 1024), "short");
        assert!(clip_bytes(&"x".repeat(5000), 1024).len() <= 1024);
    }

    #[test]
    fn times_read_well() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(duration_text(850), "850 ms");
        assert_eq!(duration_text(12_400), "12.4 s");
        assert_eq!(duration_text(185_000), "3 min 05 s");
    }
}

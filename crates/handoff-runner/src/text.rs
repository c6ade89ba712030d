//! Text helpers shared by the executors.

/// Longest text kept in one event; whole answers go to the output artifact.
pub(crate) const EVENT_TEXT_MAX: usize = 4000;

/// Cuts `text` to at most `max` bytes on a character boundary.
pub fn clip(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [{} more bytes]", &text[..end], text.len() - end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clip_keeps_char_boundaries_and_says_what_was_cut() {
        assert_eq!(clip("short", 10), "short");
        let clipped = clip("ééééé", 3);
        assert!(
            clipped.starts_with('é') && clipped.ends_with("[8 more bytes]"),
            "{clipped}"
        );
    }
}

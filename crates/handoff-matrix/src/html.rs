//! Text into Matrix messages: everything from a task (its description, events, answer) is
//! escaped before it enters `formatted_body`, so `<img onerror=…>` stays text.

use serde_json::{Value, json};

/// Escapes `text` for HTML element content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// One message: plain lines, and the HTML made from the same lines (each escaped, the first
/// in bold when `headline`), as an `m.notice` (bots speak in notices).
pub fn notice(lines: &[String], headline: bool) -> Value {
    let body = lines.join("\n");
    let html: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            if i == 0 && headline {
                format!("<b>{}</b>", escape(line))
            } else {
                escape(line)
            }
        })
        .collect();
    json!({
        "msgtype": "m.notice",
        "body": body,
        "format": "org.matrix.custom.html",
        "formatted_body": html.join("<br>"),
    })
}

/// `text` cut to `max` characters, with `…` when cut; control characters become spaces.
pub fn clip(text: &str, max: usize) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() && c != '\n' { ' ' } else { c })
        .collect();
    if clean.chars().count() <= max {
        return clean;
    }
    let mut cut: String = clean.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

/// `text` on one line (newlines become spaces), clipped.
pub fn one_line(text: &str, max: usize) -> String {
    clip(&text.replace(['\n', '\r'], " "), max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_is_escaped_in_the_html_and_kept_in_the_plain_body() {
        let evil = "<img src=x onerror=alert(1)> & \"quotes\" 'single'";
        assert_eq!(
            escape(evil),
            "&lt;img src=x onerror=alert(1)&gt; &amp; &quot;quotes&quot; &#39;single&#39;"
        );
        let message = notice(&["Task <b>".to_owned(), evil.to_owned()], true);
        let html = message["formatted_body"].as_str().unwrap();
        assert!(!html.contains("<img"), "{html}");
        assert!(html.starts_with("<b>Task &lt;b&gt;</b><br>"), "{html}");
        assert_eq!(message["body"], format!("Task <b>\n{evil}"));
        assert_eq!(message["format"], "org.matrix.custom.html");
    }

    #[test]
    fn clipping_counts_characters_and_drops_control_characters() {
        assert_eq!(clip("héllo", 10), "héllo");
        assert_eq!(clip("héllo wörld", 5), "héll…");
        assert_eq!(clip("a\u{7}b", 5), "a b");
        assert_eq!(one_line("a\nb", 5), "a b");
    }
}

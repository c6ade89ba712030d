//! Everything a client command prints goes through here. What it prints comes from tasks —
//! agent output, task descriptions, file names — so a control character in it could move the
//! cursor, retitle the window or rewrite what the operator reads: it is shown as an escape
//! (`\x1b`, `\u{9b}`) instead. Only a file's or a diff's content printed into a pipe or a file
//! keeps its bytes as they are, since there it is data, not something a terminal interprets.

use std::{
    borrow::Cow,
    fmt::Write as _,
    io::{IsTerminal, Write},
};

/// Whether `c` would act on a terminal or reorder text rather than show: controls (C0 but
/// newline and tab, DEL, C1) and the bidirectional overrides and isolates.
fn acts(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `text` with every character that would act on a terminal shown as an escape.
pub fn visible(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut shown = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        match u32::from(c) {
            _ if !acts(c) => shown.push(c),
            code if code < 0x80 => {
                let _ = write!(shown, "\\x{code:02x}");
            }
            code => {
                let _ = write!(shown, "\\u{{{code:x}}}");
            }
        }
    }
    Cow::Owned(shown)
}

/// A JSON document with the characters that would act on a terminal written as JSON escapes:
/// the same document to a parser. serde_json escapes C0 itself but writes DEL, C1 and the
/// bidirectional controls as they are; they can only occur inside strings.
pub fn json_visible(json: &str) -> Cow<'_, str> {
    if !json.chars().any(acts) {
        return Cow::Borrowed(json);
    }
    let mut shown = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if acts(c) {
            let _ = write!(shown, "\\u{:04x}", u32::from(c));
        } else {
            shown.push(c);
        }
    }
    Cow::Owned(shown)
}

/// Prints `text` to stdout as it is when stdout is not a terminal (a file's content piped or
/// redirected), else with [`visible`] escapes.
pub fn print_content(text: &str) {
    // A closed pipe (`| head`) is not an error worth reporting.
    let _ = write_content(text);
}

/// [`print_content`], saying whether it got out: `false` when the reader went away (a
/// closed pipe), so a caller printing part after part can stop.
pub fn write_content(text: &str) -> bool {
    let mut stdout = std::io::stdout().lock();
    let result = if stdout.is_terminal() {
        stdout.write_all(visible(text).as_bytes())
    } else {
        stdout.write_all(text.as_bytes())
    };
    result.and_then(|()| stdout.flush()).is_ok()
}

/// Writes `line` and a newline to stdout as it is. A closed pipe (`handoff tasks | head`)
/// ends the program quietly with exit 0: the reader took all it wanted. Any other failure
/// to write ends it with exit 2 and says why on stderr.
pub fn print_line(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    match written {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => {
            let _ = writeln!(std::io::stderr(), "cannot write the output: {e}");
            std::process::exit(2);
        }
    }
}

/// Writes `text` to stderr; a stderr nobody reads is no reason to stop.
pub fn print_err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

/// `println!` with the line shown through [`visible`], ending quietly on a closed pipe.
macro_rules! outln {
    () => { $crate::client::terminal::print_line("") };
    ($($arg:tt)*) => {
        $crate::client::terminal::print_line(
            &$crate::client::terminal::visible(&format!($($arg)*)),
        )
    };
}

/// `eprintln!` with the line shown through [`visible`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::client::terminal::print_err(&format!(
            "{}\n",
            $crate::client::terminal::visible(&format!($($arg)*)),
        ))
    };
}

/// `eprint!` with the text shown through [`visible`].
macro_rules! err {
    ($($arg:tt)*) => {
        $crate::client::terminal::print_err(
            &$crate::client::terminal::visible(&format!($($arg)*)),
        )
    };
}

pub(crate) use {err, errln, outln};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_become_escapes_and_text_stays() {
        assert_eq!(visible("plain\ttext\nnext"), "plain\ttext\nnext");
        assert!(matches!(visible("plain"), Cow::Borrowed(_)));
        assert_eq!(
            visible("\u{1b}]0;owned\u{7}\u{1b}[2J"),
            "\\x1b]0;owned\\x07\\x1b[2J"
        );
        assert_eq!(visible("a\rb\u{7f}"), "a\\x0db\\x7f");
        assert_eq!(visible("csi\u{9b}31m"), "csi\\u{9b}31m");
        assert_eq!(visible("txt.\u{202e}exe"), "txt.\\u{202e}exe");
        assert_eq!(visible("ünïcødé ✓"), "ünïcødé ✓");
    }

    #[test]
    fn json_stays_the_same_document() {
        let value = serde_json::json!({"m": "a\u{1b}[31m\u{9b}\u{7f}\u{202e}b\r\n"});
        let text = serde_json::to_string(&value).unwrap();
        let shown = json_visible(&text);
        assert!(!shown.chars().any(acts), "{shown}");
        let back: serde_json::Value = serde_json::from_str(&shown).unwrap();
        assert_eq!(back, value);
    }
}

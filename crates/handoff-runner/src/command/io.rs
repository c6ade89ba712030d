use tokio::{
    io::{AsyncBufReadExt, AsyncRead, BufReader},
    sync::mpsc,
};

use crate::{OutputStream, RunEvent};

/// Longest line emitted; longer ones are split so output without newlines cannot eat memory.
pub(super) const MAX_LINE: usize = 64 * 1024;

/// Sends each line of `reader` as [`RunEvent::Output`] until EOF; a line longer than
/// [`MAX_LINE`] goes out in [`RunEvent::OutputPart`]s before its last piece.
pub(super) async fn forward_lines<R: AsyncRead + Unpin>(
    reader: R,
    stream: OutputStream,
    tx: mpsc::Sender<RunEvent>,
) {
    let mut reader = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        let available = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                tracing::debug!(stream = stream.as_str(), error = %e, "reading output failed");
                break;
            }
        };
        let window = &available[..available.len().min(MAX_LINE - line.len())];
        match window.iter().position(|&b| b == b'\n') {
            Some(end) => {
                line.extend_from_slice(&window[..end]);
                reader.consume(end + 1);
                emit(&tx, stream, std::mem::take(&mut line), true).await;
            }
            None => {
                let taken = window.len();
                line.extend_from_slice(window);
                reader.consume(taken);
                if line.len() >= MAX_LINE {
                    // Cut before a character split by the limit so it survives whole.
                    let rest = line.split_off(complete_prefix(&line));
                    emit(&tx, stream, std::mem::replace(&mut line, rest), false).await;
                }
            }
        }
    }
    if !line.is_empty() {
        emit(&tx, stream, line, true).await;
    }
}

/// Sends a line, or a piece of one when `ends` is false.
async fn emit(tx: &mpsc::Sender<RunEvent>, stream: OutputStream, bytes: Vec<u8>, ends: bool) {
    let text = String::from_utf8(bytes)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let event = if ends {
        RunEvent::Output { stream, line: text }
    } else {
        RunEvent::OutputPart { stream, text }
    };
    // Nobody listening is no reason to stop draining the pipe: a full pipe would block the
    // process.
    let _ = tx.send(event).await;
}

/// Length of `bytes` without a trailing UTF-8 sequence that is still incomplete.
fn complete_prefix(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        // A cut of everything would not make progress; invalid data goes out as it is.
        return if needed > back && back < len {
            len - back
        } else {
            len
        };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each emitted piece; pieces that do not end their line are marked with a trailing `…`.
    async fn lines_of(input: &[u8]) -> Vec<String> {
        let (tx, mut rx) = mpsc::channel(64);
        forward_lines(input, OutputStream::Stdout, tx).await;
        let mut lines = Vec::new();
        while let Some(event) = rx.recv().await {
            match event {
                RunEvent::Output { line, .. } => lines.push(line),
                RunEvent::OutputPart { text, .. } => lines.push(format!("{text}…")),
                other => panic!("unexpected {other:?}"),
            }
        }
        lines
    }

    #[tokio::test]
    async fn splits_on_newlines_and_keeps_a_last_unterminated_line() {
        assert_eq!(
            lines_of(b"one\n\ntwo\nthree").await,
            ["one", "", "two", "three"]
        );
        assert!(lines_of(b"").await.is_empty());
    }

    #[tokio::test]
    async fn caps_long_lines_without_splitting_characters() {
        let mut input = vec![b'x'; 150_000];
        input.push(b'\n');
        let lines = lines_of(&input).await;
        let lengths: Vec<usize> = lines
            .iter()
            .map(|l| l.trim_end_matches('…').len())
            .collect();
        assert_eq!(lengths, [MAX_LINE, MAX_LINE, 150_000 - 2 * MAX_LINE]);
        let ends: Vec<bool> = lines.iter().map(|l| !l.ends_with('…')).collect();
        assert_eq!(
            ends,
            [false, false, true],
            "the pieces say the line goes on"
        );

        let mut input = "a".repeat(MAX_LINE - 1).into_bytes();
        input.extend_from_slice("é\n".as_bytes());
        let lines = lines_of(&input).await;
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].trim_end_matches('…').len(), MAX_LINE - 1);
        assert_eq!(lines[1], "é");
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced() {
        assert_eq!(lines_of(b"a\xffb\n").await, ["a\u{fffd}b"]);
    }
}

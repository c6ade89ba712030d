//! The keeper's pipes, each on a thread of its own so the deadline loop never waits on them:
//! orders are read as bounded lines, and reports and log lines are written or, when the server
//! does not read them (it may be stopped), dropped.

use std::{
    io::{BufRead, BufReader, Read, Write},
    sync::mpsc::{Receiver, SyncSender, sync_channel},
};

use super::{MAX_LINE, Report};
use crate::IsolationError;

/// Orders read but not yet carried out; the reader waits when this many are (the server then
/// sees a full pipe).
const ORDERS_QUEUED: usize = 1024;
/// Lines not yet written; more are dropped.
const OUTPUT_QUEUED: usize = 4096;

/// What came in on stdin.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Input {
    /// One line, newline stripped.
    Line(String),
    /// A line longer than [`MAX_LINE`], skipped.
    TooLong,
    /// Stdin closed (the server closed it or died) or failed.
    End,
}

/// Reads `input` line by line on a thread of its own.
pub(crate) fn read_orders(
    input: impl Read + Send + 'static,
) -> Result<Receiver<Input>, IsolationError> {
    let (tx, rx) = sync_channel(ORDERS_QUEUED);
    spawn("handoff-keeper-in", move || {
        let mut reader = BufReader::new(input);
        let mut buf = Vec::new();
        loop {
            let input = next_line(&mut reader, &mut buf).unwrap_or(Input::End);
            let end = input == Input::End;
            if tx.send(input).is_err() || end {
                return;
            }
        }
    })?;
    Ok(rx)
}

/// The next line, never holding more than [`MAX_LINE`] bytes of it.
fn next_line(reader: &mut impl BufRead, buf: &mut Vec<u8>) -> std::io::Result<Input> {
    buf.clear();
    let limit = MAX_LINE as u64 + 1;
    if reader.by_ref().take(limit).read_until(b'\n', buf)? == 0 {
        return Ok(Input::End);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    } else if buf.len() > MAX_LINE {
        // Skip the rest of the line, a bounded piece at a time.
        loop {
            buf.clear();
            let read = reader.by_ref().take(limit).read_until(b'\n', buf)?;
            if read == 0 || buf.last() == Some(&b'\n') {
                return Ok(Input::TooLong);
            }
        }
    }
    Ok(Input::Line(String::from_utf8_lossy(buf).into_owned()))
}

/// Writes reports (stdout) and log lines (stderr) on a thread of its own.
pub(crate) struct Output {
    lines: SyncSender<(bool, String)>,
    /// Closed once every line is written.
    written: Receiver<()>,
}

impl Output {
    /// Starts the writer.
    pub(crate) fn start() -> Result<Self, IsolationError> {
        let (lines, rx) = sync_channel::<(bool, String)>(OUTPUT_QUEUED);
        let (done, written) = sync_channel::<()>(0);
        spawn("handoff-keeper-out", move || {
            for (report, line) in rx {
                // A server that is gone reads nothing; the keeper ends with its stdin.
                let _ = if report {
                    writeln!(std::io::stdout().lock(), "{line}")
                } else {
                    writeln!(std::io::stderr().lock(), "handoff keeper: {line}")
                };
            }
            drop(done);
        })?;
        Ok(Self { lines, written })
    }

    /// Writes what is queued before the keeper exits, waiting at most `limit` for a reader.
    pub(crate) fn finish(self, limit: std::time::Duration) {
        drop(self.lines);
        let _ = self.written.recv_timeout(limit);
    }

    /// Sends `report` to the server, and logs it unless it is routine.
    pub(crate) fn report(&self, report: &Report) {
        if !matches!(report, Report::Ready { .. }) {
            self.log(report.to_string());
        }
        self.send(true, report.to_line());
    }

    /// Logs one line.
    pub(crate) fn log(&self, line: String) {
        self.send(false, line);
    }

    fn send(&self, report: bool, line: String) {
        // Full: the server is not reading (it may be stopped), and freezing must not wait
        // for it; the line is dropped.
        let _ = self.lines.try_send((report, line));
    }
}

fn spawn(name: &str, f: impl FnOnce() + Send + 'static) -> Result<(), IsolationError> {
    std::thread::Builder::new()
        .name(name.to_owned())
        .stack_size(64 * 1024)
        .spawn(f)
        .map(drop)
        .map_err(|e| IsolationError::Confine {
            mechanism: "keeper",
            message: format!("starting a thread: {e}"),
        })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_bounded_and_an_overlong_one_is_skipped_whole() {
        let long = "x".repeat(MAX_LINE * 3);
        let exact = "y".repeat(MAX_LINE);
        let text = format!("first\n{long}\n{exact}\nlast");
        let mut reader = BufReader::with_capacity(16, text.as_bytes());
        let mut buf = Vec::new();
        let mut read = Vec::new();
        loop {
            let input = next_line(&mut reader, &mut buf).unwrap();
            if input == Input::End {
                break;
            }
            read.push(input);
        }
        assert_eq!(
            read,
            [
                Input::Line("first".to_owned()),
                Input::TooLong,
                Input::Line(exact),
                Input::Line("last".to_owned()),
            ]
        );
    }
}

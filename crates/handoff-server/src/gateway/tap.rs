//! The provider's answer passed on as it arrives, read for its usage on the way: each piece
//! is handed to the caller at once (nothing is held back or buffered whole), and when the
//! answer ends — or the caller goes away — what it reported is handed to `done` once.

use std::{
    pin::Pin,
    task::{Context, Poll},
};

use bytes::Bytes;
use futures::Stream;
use handoff_llm::{CallUsage, UsageScanner};

/// The callback told what the answer reported.
pub(crate) type Done = Box<dyn FnOnce(CallUsage) + Send>;

/// A body stream with a usage scanner on it.
pub(crate) struct Tapped<S> {
    inner: S,
    scanner: Option<UsageScanner>,
    done: Option<Done>,
}

impl<S> Tapped<S> {
    /// Taps `inner` with `scanner`, calling `done` at its end.
    pub(crate) fn new(inner: S, scanner: UsageScanner, done: Done) -> Self {
        Self {
            inner,
            scanner: Some(scanner),
            done: Some(done),
        }
    }

    fn finish(&mut self) {
        if let (Some(scanner), Some(done)) = (self.scanner.take(), self.done.take()) {
            done(scanner.finish());
        }
    }
}

impl<S, E> Stream for Tapped<S>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    type Item = Result<Bytes, E>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        match &polled {
            Poll::Ready(Some(Ok(bytes))) => {
                if let Some(scanner) = self.scanner.as_mut() {
                    scanner.feed(bytes);
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => self.finish(),
            Poll::Pending => {}
        }
        polled
    }
}

impl<S> Drop for Tapped<S> {
    fn drop(&mut self) {
        // A caller that hung up still spent what the provider counted so far.
        self.finish();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::{Arc, Mutex};

    use futures::StreamExt;
    use handoff_llm::CallWire;

    use super::*;

    #[tokio::test]
    async fn pieces_pass_unchanged_and_the_usage_is_told_once() {
        let pieces: Vec<Result<Bytes, std::io::Error>> = vec![
            Ok(Bytes::from_static(
                b"data: {\"usage\":{\"prompt_tokens\":3,",
            )),
            Ok(Bytes::from_static(
                b"\"completion_tokens\":4}}\n\ndata: [DONE]\n\n",
            )),
        ];
        let told = Arc::new(Mutex::new(Vec::new()));
        let sink = told.clone();
        let tapped = Tapped::new(
            futures::stream::iter(pieces),
            UsageScanner::new(CallWire::OpenAiChat, true),
            Box::new(move |usage| sink.lock().unwrap().push(usage)),
        );
        let passed: Vec<Bytes> = tapped.map(|p| p.unwrap()).collect().await;
        assert_eq!(
            passed.concat(),
            b"data: {\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n"
        );
        let told = told.lock().unwrap();
        assert_eq!(told.len(), 1);
        assert_eq!((told[0].input_tokens, told[0].output_tokens), (3, 4));
    }

    #[tokio::test]
    async fn a_caller_that_goes_away_still_counts() {
        let told = Arc::new(Mutex::new(0));
        let sink = told.clone();
        let pieces: Vec<Result<Bytes, std::io::Error>> =
            vec![Ok(Bytes::from_static(b"data: {}\n")), Ok(Bytes::new())];
        let mut tapped = Tapped::new(
            futures::stream::iter(pieces),
            UsageScanner::new(CallWire::OpenAiChat, true),
            Box::new(move |_| *sink.lock().unwrap() += 1),
        );
        let _ = tapped.next().await;
        drop(tapped);
        assert_eq!(*told.lock().unwrap(), 1);
    }
}

//! Panics inside libraries (a Parquet or Avro decoder meeting a corrupt file) become errors
//! naming the file, reported in one line: [`catch`] and [`catch_async`] turn a panic into an
//! error, and [`install_quiet_panic_hook`] keeps the default hook from printing the panic and
//! a backtrace note for panics that are caught this way.

use std::cell::Cell;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::task::{Context, Poll};

thread_local! {
    /// How many guarded regions this thread is inside; panics there are reported as errors.
    static GUARDED: Cell<u32> = const { Cell::new(0) };
}

struct Region;

impl Region {
    fn enter() -> Region {
        GUARDED.with(|g| g.set(g.get() + 1));
        Region
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        GUARDED.with(|g| g.set(g.get().saturating_sub(1)));
    }
}

/// Installs a panic hook that is silent for panics [`catch`] or [`catch_async`] will report,
/// and prints any other panic in one line (`icefloe: internal error: …`) without a backtrace.
/// For front-ends; call once at start-up.
pub fn install_quiet_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        if GUARDED.with(|g| g.get()) > 0 {
            return;
        }
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("icefloe: internal error: {}{at}", message(info.payload()));
    }));
}

/// The text of a panic payload.
pub fn message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

/// Runs `f`; a panic becomes the error `on_panic` makes from its message.
pub fn catch<T>(
    f: impl FnOnce() -> crate::Result<T>,
    on_panic: impl FnOnce(String) -> crate::Error,
) -> crate::Result<T> {
    let _region = Region::enter();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => Err(on_panic(message(p.as_ref()))),
    }
}

/// Awaits `fut`; a panic while it is polled becomes the error `on_panic` makes.
pub async fn catch_async<T>(
    fut: impl Future<Output = crate::Result<T>>,
    on_panic: impl FnOnce(String) -> crate::Error,
) -> crate::Result<T> {
    match (Guarded {
        inner: Box::pin(fut),
    })
    .await
    {
        Ok(r) => r,
        Err(msg) => Err(on_panic(msg)),
    }
}

/// A future polled inside a guarded region, with panics caught.
pub struct Guarded<F> {
    inner: Pin<Box<F>>,
}

impl<F: Future> Future for Guarded<F> {
    type Output = Result<F::Output, String>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let _region = Region::enter();
        let inner = self.inner.as_mut();
        match catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(p) => Poll::Ready(Err(message(p.as_ref()))),
        }
    }
}

/// A stream polled inside a guarded region: a panic while it is polled becomes the error its
/// `on_panic` makes from the message, and ends the stream (its state is not trusted after).
pub struct GuardedStream<S, F> {
    inner: Option<S>,
    on_panic: F,
}

/// Wraps `stream` so that it is polled inside a guarded region (see [`GuardedStream`]).
pub fn guarded_stream<S, F>(stream: S, on_panic: F) -> GuardedStream<S, F> {
    GuardedStream {
        inner: Some(stream),
        on_panic,
    }
}

impl<T, S, F> futures::Stream for GuardedStream<S, F>
where
    S: futures::Stream<Item = crate::Result<T>> + Unpin,
    F: Fn(String) -> crate::Error + Unpin,
{
    type Item = crate::Result<T>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let Some(inner) = this.inner.as_mut() else {
            return Poll::Ready(None);
        };
        let _region = Region::enter();
        match catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll_next(cx))) {
            Ok(p) => p,
            Err(p) => {
                this.inner = None;
                Poll::Ready(Some(Err((this.on_panic)(message(p.as_ref())))))
            }
        }
    }
}

/// Wraps `fut` so that it is polled inside a guarded region.
pub fn guarded<F: Future>(fut: F) -> Guarded<F> {
    Guarded {
        inner: Box::pin(fut),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_error() {
        let e = catch(
            || -> crate::Result<()> { panic!("boom") },
            |m| crate::Error::manifest("f.avro", format!("decoder panicked: {m}")),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid manifest f.avro: decoder panicked: boom"
        );
    }

    #[test]
    fn a_panicking_stream_ends_with_the_error() {
        use futures::StreamExt;
        let items = futures::stream::iter([1, 2, 3]).map(|i| -> crate::Result<i32> {
            assert!(i < 2, "decoder meets item {i}");
            Ok(i)
        });
        let got: Vec<String> = futures::executor::block_on(
            guarded_stream(items, |m| {
                crate::Error::data_file("d.parquet", format!("decoder panicked: {m}"))
            })
            .map(|r| match r {
                Ok(i) => i.to_string(),
                Err(e) => e.to_string(),
            })
            .collect(),
        );
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "1");
        assert!(
            got[1].contains("d.parquet") && got[1].contains("decoder meets item 2"),
            "{got:?}"
        );
    }
}

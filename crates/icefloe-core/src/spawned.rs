//! Streams of batches produced on a tokio task of their own and handed over through a bounded
//! channel: the producer runs ahead of its consumer by at most `buffer` batches (that is what
//! reads files and parts of files ahead), a panic in it becomes an error naming what it read
//! (never a silent end of rows), and dropping the stream stops the task.

use arrow::record_batch::RecordBatch;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::sync::mpsc;

/// Runs `stream` on a task of its own, at most `buffer` batches ahead of the consumer; it
/// stops at its first error. `what` names the file in the error a panic becomes. Must be
/// called inside a tokio runtime.
pub fn spawn_batches(
    stream: BoxStream<'static, crate::Result<RecordBatch>>,
    buffer: usize,
    what: String,
) -> BoxStream<'static, crate::Result<RecordBatch>> {
    spawn_items(stream, buffer, what)
}

/// [`spawn_batches`] for a stream of any items (batches a consumer has already turned into
/// its own form on the task that decoded them).
pub fn spawn_items<T: Send + 'static>(
    stream: BoxStream<'static, crate::Result<T>>,
    buffer: usize,
    what: String,
) -> BoxStream<'static, crate::Result<T>> {
    let (tx, rx) = mpsc::channel::<crate::Result<T>>(buffer.max(1));
    let handle = tokio::spawn(async move {
        let forward = {
            let tx = tx.clone();
            async move {
                let mut st = stream;
                while let Some(item) = st.next().await {
                    let stop = item.is_err();
                    if tx.send(item).await.is_err() || stop {
                        break;
                    }
                }
            }
        };
        if let Err(panic) = crate::guard::guarded(forward).await {
            let _ = tx
                .send(Err(crate::Error::data_file(
                    &what,
                    format!("reader panicked: {panic}"),
                )))
                .await;
        }
    });
    ReceiverStream {
        rx,
        _handle: AbortOnDrop(handle),
    }
    .boxed()
}

/// A spawned task that is aborted when its handle is dropped (a consumer that stops reading
/// stops the work it started); as a future, the task's result.
pub struct AbortOnDrop<T>(pub tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> std::future::Future for AbortOnDrop<T> {
    type Output = Result<T, tokio::task::JoinError>;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        std::pin::Pin::new(&mut self.0).poll(cx)
    }
}

struct ReceiverStream<T> {
    rx: mpsc::Receiver<crate::Result<T>>,
    _handle: AbortOnDrop<()>,
}

impl<T> futures::Stream for ReceiverStream<T> {
    type Item = crate::Result<T>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.rx.poll_recv(cx)
    }
}

//! Many nodes at once, but not all: a deploy to a hundred workers should
//! not open a hundred sessions and copy a hundred kubelets at the same
//! moment from one small host.

use std::future::Future;

use futures_util::stream::{self, StreamExt};

/// Runs `task` on every item, at most `limit` at a time, and returns the
/// results in the items' order.
pub async fn on_each<I, T, F, Fut, R>(items: I, limit: usize, task: F) -> Vec<R>
where
    I: IntoIterator<Item = T>,
    F: FnMut(T) -> Fut,
    Fut: Future<Output = R>,
{
    stream::iter(items)
        .map(task)
        .buffered(limit.max(1))
        .collect()
        .await
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn never_more_than_the_limit_and_results_in_order() {
        let running = Arc::new(AtomicUsize::new(0));
        let most = Arc::new(AtomicUsize::new(0));
        let results = on_each(0..10u64, 3, |item| {
            let (running, most) = (running.clone(), most.clone());
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(10 - item)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                item * 2
            }
        })
        .await;
        assert_eq!(results, (0..10).map(|item| item * 2).collect::<Vec<_>>());
        assert_eq!(most.load(Ordering::SeqCst), 3);
    }
}

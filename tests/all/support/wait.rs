//! Waiting for what a test can observe, rather than sleeping for a guess at
//! how long it takes: a guess is either too short on a loaded machine or
//! time thrown away on an idle one.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// Looks at `done` until it holds; fails the test, naming `what`, once
/// `timeout` has passed.
#[track_caller]
pub fn wait_until(what: impl Display, timeout: Duration, mut done: impl FnMut() -> bool) {
    eventually(
        what,
        timeout,
        || if done() { Ok(()) } else { Err("not yet") },
    )
}

/// Looks at `probe` until it answers `Ok`, and returns that answer; fails
/// the test once `timeout` has passed, naming `what` and the last thing
/// `probe` saw instead (its `Err`).
#[track_caller]
pub fn eventually<T, Seen: Display>(
    what: impl Display,
    timeout: Duration,
    mut probe: impl FnMut() -> Result<T, Seen>,
) -> T {
    let mut patience = Patience::new(timeout);
    loop {
        match probe() {
            Ok(answer) => return answer,
            Err(seen) => std::thread::sleep(patience.pause(&what, seen)),
        }
    }
}

/// [`eventually`] for a probe that awaits, in a test whose runtime must
/// go on serving (a virtual cluster in the same runtime, say) meanwhile.
pub async fn eventually_async<T, Seen: Display, Look: Future<Output = Result<T, Seen>>>(
    what: impl Display,
    timeout: Duration,
    mut probe: impl FnMut() -> Look,
) -> T {
    let mut patience = Patience::new(timeout);
    loop {
        match probe().await {
            Ok(answer) => return answer,
            Err(seen) => tokio::time::sleep(patience.pause(&what, seen)).await,
        }
    }
}

/// When to give up, and how long to pause before the next look: from
/// [`Patience::FIRST_PAUSE`], doubling up to [`Patience::LONGEST_PAUSE`], so
/// that what is quick is seen quickly and what is slow (a `kubectl` process
/// a look) is not polled hard.
struct Patience {
    timeout: Duration,
    deadline: Instant,
    pause: Duration,
}

impl Patience {
    const FIRST_PAUSE: Duration = Duration::from_millis(10);
    const LONGEST_PAUSE: Duration = Duration::from_millis(200);

    fn new(timeout: Duration) -> Patience {
        Patience {
            timeout,
            deadline: Instant::now() + timeout,
            pause: Self::FIRST_PAUSE,
        }
    }

    /// The pause before the next look, unless the time is up (a failure
    /// naming `what` and what was `seen`).
    #[track_caller]
    fn pause(&mut self, what: &impl Display, seen: impl Display) -> Duration {
        assert!(
            Instant::now() < self.deadline,
            "timed out after {:?} waiting for {what}; last seen: {seen}",
            self.timeout
        );
        let pause = self.pause;
        self.pause = (self.pause * 2).min(Self::LONGEST_PAUSE);
        pause
    }
}

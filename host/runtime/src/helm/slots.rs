//! Turns at rendering: each render may use the memory cap, so a bounded
//! number run at once and the rest wait, for a bounded time.

use std::sync::{Condvar, Mutex};
use std::time::Duration;

use super::error::HelmError;

/// Turns at rendering, a bounded number at a time.
pub(super) struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
    size: usize,
    wait: Duration,
}

/// One turn at rendering; the next waiting render goes when it is dropped.
pub(super) struct Turn<'a>(&'a Slots);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.0.freed.notify_one();
    }
}

impl Slots {
    pub(super) fn new(size: usize, wait: Duration) -> Self {
        let size = size.max(1);
        Slots {
            free: Mutex::new(size),
            freed: Condvar::new(),
            size,
            wait,
        }
    }

    /// Waits (bounded) for a turn.
    pub(super) fn take(&self) -> Result<Turn<'_>, HelmError> {
        let free = self.free.lock().unwrap_or_else(|p| p.into_inner());
        let (mut free, waited) = self
            .freed
            .wait_timeout_while(free, self.wait, |free| *free == 0)
            .unwrap_or_else(|p| p.into_inner());
        if waited.timed_out() && *free == 0 {
            return Err(HelmError::Busy {
                slots: self.size,
                waited: self.wait,
            });
        }
        *free -= 1;
        Ok(Turn(self))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn renders_take_turns_and_a_long_wait_is_refused() {
        let slots = Arc::new(Slots::new(2, Duration::from_millis(50)));
        let first = slots.take().unwrap();
        let _second = slots.take().unwrap();
        let refused = slots.take().err().unwrap();
        assert!(
            matches!(refused, HelmError::Busy { slots: 2, .. }),
            "{refused}"
        );
        let waiter = {
            let slots = slots.clone();
            std::thread::spawn(move || slots.take().map(drop).is_ok())
        };
        drop(first);
        assert!(
            waiter.join().unwrap(),
            "a freed slot goes to the one waiting"
        );
    }
}

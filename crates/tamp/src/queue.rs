//! The queues between the pipeline's threads: many senders, many receivers, and a receiver with
//! nothing to take sleeps at once (until one item, or a few, are queued).
//!
//! crossbeam's channel, used before, spins and calls `sched_yield` a few times before it sleeps.
//! The reader and the writer each wait once per block, so on 2 vCPUs they yielded to each other
//! about 6,500 times each per 512 MiB of lz4 (counted on `sched_switch`), and a one-worker run
//! spent about 100 ms more CPU in them on two CPUs than on one.
//!
//! The pipeline never queues more items than it has slots, so a queue made with room for all of
//! them never allocates after it is made, and a send never waits.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receivers: usize,
    /// Receivers asleep in `recv_gathered`: a send wakes one only when there is one (and enough items).
    sleeping: usize,
    /// Items a sleeping receiver waits for (see [`Receiver::recv_gathered`]).
    wake_at: usize,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Condvar,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic never happens with the lock held (no allocation, no user code), but a poisoned
        // lock would still hold consistent counts.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The sending end; clones count as senders until dropped.
pub(crate) struct Sender<T>(Arc<Shared<T>>);

/// The receiving end; clones count as receivers until dropped.
pub(crate) struct Receiver<T>(Arc<Shared<T>>);

/// A queue with room for `capacity` items before it allocates.
pub(crate) fn queue<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::with_capacity(capacity),
            senders: 1,
            receivers: 1,
            sleeping: 0,
            wake_at: 1,
        }),
        ready: Condvar::new(),
    });
    (Sender(Arc::clone(&shared)), Receiver(shared))
}

impl<T> Sender<T> {
    /// Queues `item`, or gives it back when every receiver is gone.
    pub fn send(&self, item: T) -> Result<(), T> {
        let mut state = self.0.lock();
        if state.receivers == 0 {
            return Err(item);
        }
        state.items.push_back(item);
        let wake = state.sleeping > 0 && state.items.len() >= state.wake_at;
        drop(state);
        if wake {
            self.0.ready.notify_one();
        }
        Ok(())
    }
}

impl<T> Receiver<T> {
    /// The oldest item, sleeping until there is one; `None` once the queue is empty and every
    /// sender is gone. An empty queue is slept on until `gather` items are queued (or the
    /// senders are gone), so a lone receiver that needs only a moment per item wakes
    /// once per `gather` items instead of once per item. Only for a queue with one receiver,
    /// and `gather` items must be sure to come.
    pub fn recv_gathered(&self, gather: usize) -> Option<T> {
        let gather = gather.max(1);
        let mut state = self.0.lock();
        if state.items.is_empty() && state.senders > 0 {
            state.sleeping += 1;
            state.wake_at = gather;
            while state.items.len() < gather && state.senders > 0 {
                state = self.0.ready.wait(state).unwrap_or_else(PoisonError::into_inner);
            }
            state.wake_at = 1;
            state.sleeping -= 1;
        }
        state.items.pop_front()
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.0.lock().senders += 1;
        Self(Arc::clone(&self.0))
    }
}

impl<T> Clone for Receiver<T> {
    fn clone(&self) -> Self {
        self.0.lock().receivers += 1;
        Self(Arc::clone(&self.0))
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.senders -= 1;
        let last = state.senders == 0;
        drop(state);
        if last {
            // Sleeping receivers must see the end.
            self.0.ready.notify_all();
        }
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        self.0.lock().receivers -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_come_out_in_order_and_recv_ends_when_the_senders_are_gone() {
        let (tx, rx) = queue(4);
        for i in 0..10 {
            tx.send(i).unwrap();
        }
        let tx2 = tx.clone();
        drop(tx);
        tx2.send(10).unwrap();
        drop(tx2);
        let got: Vec<i32> = std::iter::from_fn(|| rx.recv_gathered(1)).collect();
        assert_eq!(got, (0..=10).collect::<Vec<_>>());
        assert_eq!(rx.recv_gathered(1), None);
    }

    #[test]
    fn a_send_with_every_receiver_gone_gives_the_item_back() {
        let (tx, rx) = queue(1);
        let rx2 = rx.clone();
        drop(rx);
        tx.send(1).unwrap();
        drop(rx2);
        assert_eq!(tx.send(2), Err(2));
    }

    /// A gathering receiver sleeps through the first sends and wakes with all of them queued.
    #[test]
    fn a_gathering_receiver_wakes_once_enough_items_are_queued() {
        let (tx, rx) = queue(8);
        let got = std::thread::scope(|s| {
            let h = s.spawn(|| {
                let first = rx.recv_gathered(4);
                // All four were queued before the sleeper woke, so none needs another wait.
                let rest: Vec<_> = (0..3).map(|_| rx.0.lock().items.pop_front()).collect();
                (first, rest)
            });
            // Wait until the receiver sleeps, then send one at a time.
            while tx.0.lock().sleeping == 0 {
                std::thread::yield_now();
            }
            for i in 0..4 {
                tx.send(i).unwrap();
            }
            h.join().unwrap()
        });
        assert_eq!(got, (Some(0), vec![Some(1), Some(2), Some(3)]));
        drop(tx);
        assert_eq!(rx.recv_gathered(4), None);
    }

    /// Several senders and several sleeping receivers on threads: every item arrives exactly
    /// once, and every receiver wakes to the end when the last sender goes.
    #[test]
    fn many_senders_and_receivers_lose_nothing_and_all_receivers_end() {
        let (tx, rx) = queue(8);
        let per_sender = 5_000u64;
        let senders = 3u64;
        let sums: Vec<(u64, u64)> = std::thread::scope(|s| {
            let receivers: Vec<_> = (0..3)
                .map(|_| {
                    let rx = rx.clone();
                    s.spawn(move || {
                        let (mut n, mut sum) = (0u64, 0u64);
                        while let Some(v) = rx.recv_gathered(1) {
                            n += 1;
                            sum += v;
                        }
                        (n, sum)
                    })
                })
                .collect();
            for k in 0..senders {
                let tx = tx.clone();
                s.spawn(move || {
                    for i in 0..per_sender {
                        tx.send(k * per_sender + i).unwrap();
                    }
                });
            }
            drop(tx);
            receivers.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let n: u64 = sums.iter().map(|s| s.0).sum();
        let sum: u64 = sums.iter().map(|s| s.1).sum();
        let total = senders * per_sender;
        assert_eq!(n, total);
        assert_eq!(sum, total * (total - 1) / 2);
    }
}

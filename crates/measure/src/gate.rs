//! The start gate: every worker gets ready (memory allocated, touched, verified), then one release
//! lets them all go together — the Silly Little Benchmark's create_sem/trigger as a library. A
//! worker that fails to get ready makes the gate abort instead of leaving the others waiting
//! forever.

use std::sync::{Condvar, Mutex, PoisonError};

#[derive(Debug, Default)]
struct State {
    arrived: usize,
    failed: usize,
    released: Option<bool>,
}

/// A one-shot start gate for a known number of workers.
#[derive(Debug)]
pub struct StartGate {
    workers: usize,
    state: Mutex<State>,
    changed: Condvar,
}

impl StartGate {
    pub fn new(workers: usize) -> Self {
        Self { workers, state: Mutex::new(State::default()), changed: Condvar::new() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A worker is ready; blocks until the release. `true` means go, `false` abort.
    pub fn ready_and_wait(&self) -> bool {
        let mut state = self.lock();
        state.arrived += 1;
        self.changed.notify_all();
        loop {
            if let Some(go) = state.released {
                return go;
            }
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
    }

    /// A worker could not get ready; the run will be aborted.
    pub fn fail(&self) {
        let mut state = self.lock();
        state.arrived += 1;
        state.failed += 1;
        self.changed.notify_all();
    }

    /// Runs a worker's `setup` (pin, allocate, touch, verify), then waits at the gate:
    /// `Ok(Some(ready))` when released to go, `Ok(None)` when another worker failed and the run
    /// is aborted, `Err` — after telling the gate, so nobody waits forever — when this worker's
    /// own setup failed.
    pub fn prepare<T, E>(&self, setup: impl FnOnce() -> Result<T, E>) -> Result<Option<T>, E> {
        let ready = setup().inspect_err(|_| self.fail())?;
        Ok(self.ready_and_wait().then_some(ready))
    }

    /// Waits until every worker has arrived, then releases them: all go if none failed.
    /// Returns whether they go.
    pub fn release_when_ready(&self) -> bool {
        let mut state = self.lock();
        while state.arrived < self.workers {
            state = self.changed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        let go = state.failed == 0;
        state.released = Some(go);
        self.changed.notify_all();
        go
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_all_together_or_aborts_on_failure() {
        for fail_one in [false, true] {
            let gate = StartGate::new(3);
            let outcomes: Vec<bool> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..3)
                    .map(|i| {
                        let gate = &gate;
                        s.spawn(move || {
                            if fail_one && i == 1 {
                                gate.fail();
                                false
                            } else {
                                gate.ready_and_wait()
                            }
                        })
                    })
                    .collect();
                let go = gate.release_when_ready();
                assert_eq!(go, !fail_one);
                handles.into_iter().map(|h| h.join().expect("worker")).collect()
            });
            let went = outcomes.iter().filter(|&&g| g).count();
            assert_eq!(went, if fail_one { 0 } else { 3 });
        }
    }
}

//! Workers released together: one scoped thread per worker, each pinned to its CPU and
//! prepared (memory allocated, touched, verified) before one [`StartGate`] lets them all go —
//! the sequence every multi-threaded benchmark here runs (SLB, shared SLB, bandwidth, loaded
//! latency).

use measure::gate::StartGate;
use place::pin;

use crate::BenchError;

/// How a crew of workers runs; `Ready` is what a worker prepared before the gate, `Done` what
/// it reports after its work.
pub(crate) struct Crew<'a, S, Ready, Done> {
    /// Named in the error when a worker panics ("SLB worker").
    pub what: &'a str,
    pub workers: &'a [S],
    /// The CPU a worker is pinned to before it prepares (`None`: not pinned).
    pub cpu: &'a (dyn Fn(&S) -> Option<u32> + Sync),
    /// A worker's preparation, on its own pinned thread (it first-touches its memory).
    pub prepare: &'a (dyn Fn(usize, &S) -> Result<Ready, BenchError> + Sync),
    /// A worker's work once released.
    pub work: &'a (dyn Fn(usize, &S, Ready) -> Result<Done, BenchError> + Sync),
}

impl<S: Sync, Ready, Done: Send> Crew<'_, S, Ready, Done> {
    /// Spawns every worker, releases them together once all are ready, runs `released` on the
    /// calling thread (with whether they went: `false` when one failed to get ready), then
    /// joins them. Each worker's outcome is `Ok(None)` when the run was aborted before it
    /// started, `Err` when it failed or panicked.
    pub(crate) fn run<T>(
        &self,
        released: impl FnOnce(bool) -> T,
    ) -> (T, Vec<Result<Option<Done>, BenchError>>) {
        let gate = StartGate::new(self.workers.len());
        std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .workers
                .iter()
                .enumerate()
                .map(|(i, spec)| {
                    let gate = &gate;
                    scope.spawn(move || -> Result<Option<Done>, BenchError> {
                        let ready = gate.prepare(|| {
                            if let Some(cpu) = (self.cpu)(spec) {
                                pin::pin_current_thread(&[cpu])?;
                            }
                            (self.prepare)(i, spec)
                        })?;
                        match ready {
                            Some(ready) => (self.work)(i, spec, ready).map(Some),
                            None => Ok(None), // another worker failed to get ready
                        }
                    })
                })
                .collect();
            let go = gate.release_when_ready();
            let after = released(go);
            let outcomes = handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(BenchError::Worker(format!("{} panicked", self.what)))
                    })
                })
                .collect();
            (after, outcomes)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worker_goes_or_none_does() {
        let workers = [1u32, 2, 3];
        let crew = Crew {
            what: "test worker",
            workers: &workers,
            cpu: &|_| None,
            prepare: &|_, &w| if w == 0 { Err(BenchError::Usage("no".into())) } else { Ok(w * 10) },
            work: &|i, _, ready| Ok((i, ready)),
        };
        let (went, outcomes) = crew.run(|go| go);
        assert!(went);
        let done: Vec<(usize, u32)> = outcomes.into_iter().map(|o| o.unwrap().unwrap()).collect();
        assert_eq!(done, [(0, 10), (1, 20), (2, 30)]);

        let failing = [1u32, 0, 3];
        let crew = Crew { workers: &failing, ..crew };
        let (went, outcomes) = crew.run(|go| go);
        assert!(!went, "one worker failed to get ready: nobody goes");
        assert!(outcomes[1].as_ref().is_err_and(BenchError::is_usage));
        assert!(outcomes[0].as_ref().is_ok_and(Option::is_none));
        assert!(outcomes[2].as_ref().is_ok_and(Option::is_none));
    }
}

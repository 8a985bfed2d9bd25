//! serve's process sums (root): each process's CPU time summed in the kernel agrees with
//! pstime's per-thread records of the task iterator.

use pstime::tasks::TaskIter;
use test_tier::live;

#[live]
fn process_sums_in_the_kernel_agree_with_the_thread_records() {
    use cpuacct::procsum::ProcessSums;
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicBool, Ordering};

    let sums = ProcessSums::load().unwrap();
    let iter = TaskIter::load().unwrap();
    let me = std::process::id();
    // Two threads of this process burn CPU while it is read, so its time grows between reads.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let burners: Vec<_> = (0..2)
        .map(|_| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                }
            })
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));

    let total = |p: &cpuacct::procsum::ProcessTotal| p.utime_ns + p.stime_ns;
    let before = sums.read().unwrap().unwrap();
    let threads = iter.read().unwrap();
    let after = sums.read().unwrap().unwrap();
    stop.store(true, Ordering::Relaxed);
    burners.into_iter().for_each(|b| b.join().unwrap());

    // The same process, summed the other way: live threads plus exited ones.
    let mine: Vec<_> = threads.iter().filter(|t| t.tgid == me).collect();
    let by_threads = mine.iter().map(|t| t.utime_ns + t.stime_ns).sum::<u64>()
        + mine[0].dead_utime_ns
        + mine[0].dead_stime_ns;
    let find = |list: &[cpuacct::procsum::ProcessTotal]| {
        list.iter().find(|p| p.tgid == me).cloned().unwrap()
    };
    let (b, a) = (find(&before), find(&after));
    assert!(total(&b) > 0, "{b:?}");
    assert!(
        total(&b) <= by_threads && by_threads <= total(&a),
        "kernel sums {} then {}, thread records {by_threads} between them",
        total(&b),
        total(&a)
    );
    assert_eq!(b.nr_threads as usize, mine.len(), "live threads counted");
    assert_eq!(
        b.comm.to_string_lossy(),
        std::fs::read_to_string("/proc/self/comm").unwrap().trim_end()
    );

    // Every process of the thread records is in the sums with the same start and name, bar
    // the few that started or ended between the reads.
    let leaders: HashMap<u32, _> =
        threads.iter().filter(|t| t.tid == t.tgid).map(|t| (t.tgid, t)).collect();
    let summed: HashMap<u32, _> = after.iter().map(|p| (p.tgid, p)).collect();
    let missing = leaders.keys().filter(|pid| !summed.contains_key(pid)).count();
    assert!(missing <= 5, "{missing} processes of the task iterator not summed");
    let differing = leaders
        .iter()
        .filter_map(|(pid, t)| Some((t, summed.get(pid)?)))
        .filter(|(t, p)| {
            t.start_boottime_ns != p.start_boottime_ns || t.comm != p.comm.to_string_lossy()
        })
        .count();
    assert!(differing <= 5, "{differing} processes with another start or name");
    assert!(after.len() > 10, "{} processes", after.len());
}

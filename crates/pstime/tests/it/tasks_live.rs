//! The task iterator (root): every process is there, with the figures /proc has.

#![cfg(feature = "bpf")]

use pstime::tasks::TaskIter;
use test_tier::live;

#[live]
fn every_process_and_thread_is_listed_with_its_figures() {
    let iter = TaskIter::load().unwrap();
    let tasks = iter.read().unwrap();
    let me = std::process::id();
    let mine: Vec<_> = tasks.iter().filter(|t| t.tgid == me).collect();
    let threads = std::fs::read_dir(format!("/proc/{me}/task")).unwrap().count();
    assert_eq!(mine.len(), threads, "one record per thread");
    let leader = mine.iter().find(|t| t.tid == me).unwrap();
    assert_eq!(leader.comm, std::fs::read_to_string("/proc/self/comm").unwrap().trim_end());
    assert_eq!(leader.ppid, std::os::unix::process::parent_id());
    let processes = std::fs::read_dir("/proc")
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().parse::<u32>().is_ok())
        .count();
    let tgids: std::collections::BTreeSet<u32> = tasks.iter().map(|t| t.tgid).collect();
    // Processes come and go between the two listings; a handful either way. (PID 1 is not
    // listed by the kernel's task iterator here; pstime reads what it misses from /proc.)
    assert!(tgids.len().abs_diff(processes) <= 5, "{} vs /proc {processes}", tgids.len());
}

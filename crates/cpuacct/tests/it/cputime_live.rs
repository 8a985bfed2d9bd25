//! Event-based CPU time against the tick (root): a thread that runs in bursts placed between
//! ticks is nearly invisible to /proc/stat's tick-sampled accounting, while the sched_switch
//! figure matches the thread's own CPU time. And an exiting process is caught with its time.

#![allow(clippy::unwrap_used)] // helpers unwrap too; clippy.toml allows it in #[test] fns only

use std::time::Duration;
use test_tier::live;

use cpuacct::cputime::{CpuEvents, Wanted};

const CPU: usize = 1;

/// The tests here run one at a time: another test's work on CPU 1 would count as busy time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: ts is a live local.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn pin_to(cpu: usize) {
    // SAFETY: cpu_set_t is plain data; zeroed is empty; the calls only read it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        assert_eq!(libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set), 0);
    }
}

/// Busy (non-idle) ticks of one CPU in /proc/stat, in ns.
fn tick_busy_ns(cpu: usize) -> u64 {
    let stat = std::fs::read_to_string("/proc/stat").unwrap();
    let line = stat.lines().find(|l| l.starts_with(&format!("cpu{cpu} "))).unwrap();
    let f: Vec<u64> = line.split_whitespace().skip(1).map(|v| v.parse().unwrap()).collect();
    // user nice system idle iowait irq softirq steal
    let busy = f[0] + f[1] + f[2] + f[5] + f[6] + f[7];
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
    busy * 1_000_000_000 / hz
}

/// The tick period of these kernels (CONFIG_HZ=250, ../shared/REFERENCE.md). Ticks fall on
/// multiples of it in CLOCK_MONOTONIC; on a kernel with another HZ the tick assertion below
/// fails and says so.
const TICK_NS: u64 = 4_000_000;

/// Runs from 12% to 80% of every tick period, sleeping across each tick, for `total`.
fn dodge_ticks(total: Duration) {
    let start = clock_ns(libc::CLOCK_MONOTONIC);
    let end = start + total.as_nanos() as u64;
    let mut period = start / TICK_NS + 1;
    loop {
        let wake = period * TICK_NS + TICK_NS / 8;
        if wake >= end {
            break;
        }
        let ts = libc::timespec {
            tv_sec: (wake / 1_000_000_000) as i64,
            tv_nsec: (wake % 1_000_000_000) as i64,
        };
        // SAFETY: ts is a live local; absolute sleep on CLOCK_MONOTONIC.
        unsafe {
            libc::clock_nanosleep(
                libc::CLOCK_MONOTONIC,
                libc::TIMER_ABSTIME,
                &ts,
                std::ptr::null_mut(),
            )
        };
        let stop = period * TICK_NS + TICK_NS * 4 / 5;
        while clock_ns(libc::CLOCK_MONOTONIC) < stop {
            std::hint::spin_loop();
        }
        period = clock_ns(libc::CLOCK_MONOTONIC) / TICK_NS + 1;
    }
}

#[live]
fn bursts_between_ticks_hide_from_the_tick_but_not_from_sched_switch() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if std::thread::available_parallelism().unwrap().get() <= CPU {
        panic!("needs CPU {CPU}");
    }
    let wanted = Wanted { busy: true, exits: false };
    let events = CpuEvents::attach(wanted).unwrap();
    // sched_switch charges every task that ran on the CPU, not only ours: another task there
    // (on a shared machine) shows up as a difference, and a task that ran before the window and
    // is switched out inside it is charged all at once. One of three windows must agree; a
    // wrong accounting fails all three.
    // Other work on the CPU can also keep the bursts from running or fill the gaps the tick
    // samples: such a window does not count either.
    let mut errors = Vec::new();
    for _ in 0..3 {
        let (own, event) = match bursts_on_cpu(&events) {
            Ok(window) => window,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        let error = (event as f64 - own as f64).abs() / own as f64;
        if error < 0.05 {
            return;
        }
        errors.push(format!("sched_switch {event} ns vs own {own} ns ({:.1}%)", error * 100.0));
    }
    panic!("no window agreed within 5%: {}", errors.join("; "));
}

/// One 2 s window of bursts between ticks on CPU [`CPU`]: the thread's own CPU time and what
/// sched_switch charged on that CPU meanwhile, or why the window shows nothing (the bursts did
/// not run, or the tick did not miss most of them).
fn bursts_on_cpu(events: &CpuEvents<'_>) -> Result<(u64, u64), String> {
    let (own, wall, event, tick) = {
        std::thread::scope(|s| {
            s.spawn(|| {
                pin_to(CPU);
                std::thread::sleep(Duration::from_millis(20)); // a switch seen on the CPU
                let before = events.busy().unwrap()[CPU];
                let tick_before = tick_busy_ns(CPU);
                let own_before = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID);
                dodge_ticks(Duration::from_secs(2));
                let own = clock_ns(libc::CLOCK_THREAD_CPUTIME_ID) - own_before;
                let tick = tick_busy_ns(CPU) - tick_before;
                let after = events.busy().unwrap()[CPU];
                (own, after.busy_ns - before.busy_ns, after.task_ns - before.task_ns, tick)
            })
            .join()
            .unwrap()
        })
    };
    // The thread's own CPU time is what the scheduler charged it, which leaves out steal
    // (the hypervisor running another guest): the charged time at switches is compared;
    // the wall time between switches, steal included, is shown.
    eprintln!(
        "own {own} ns, sched_switch {event} ns charged ({wall} ns wall), tick-sampled {tick} ns"
    );
    // 12–80% of 2 s is 0.24–1.6 s when the CPU is ours; other work on a shared machine takes
    // some of it, so only enough for the comparison below is required.
    if own <= 200_000_000 {
        return Err(format!("the bursts hardly ran: {own} ns"));
    }
    if tick >= own / 2 {
        return Err(format!("the tick saw {tick} ns of {own} ns (is HZ 250? another task there?)"));
    }
    Ok((own, event))
}

#[live]
fn an_exiting_process_is_caught_with_its_cpu_time() {
    let _serial = SERIAL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let wanted = Wanted { busy: false, exits: true };
    let events = CpuEvents::attach(wanted).unwrap();
    let (child_pid, exited) = {
        // A child that burns ~0.2 s of CPU and exits.
        let child = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .spawn()
            .unwrap();
        let pid = child.id();
        let status = child.wait_with_output().unwrap().status;
        assert!(status.success());
        (pid, events.take_exited().unwrap())
    };
    let found = exited.iter().find(|t| t.pid == child_pid).expect("the child's exit was seen");
    assert_eq!(found.tgid, child_pid);
    assert_eq!(found.ppid, std::process::id());
    assert_eq!(found.comm, "sh");
    assert!(found.runtime_ns > 10_000_000, "{found:?}");
    assert_eq!(found.group_runtime_ns, Some(found.runtime_ns), "a one-thread process: {found:?}");
    assert_eq!(found.group_start_boottime_ns, found.start_boottime_ns);
    assert!(found.exit_boottime_ns > found.start_boottime_ns);
}

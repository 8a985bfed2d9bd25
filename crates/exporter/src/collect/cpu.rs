//! `cpu`: per-CPU time by mode, twice, under two names so that a sum never double counts:
//!
//! - `platscope_cpu_tick_seconds_total{cpu,mode}`: `/proc/stat` as the kernel keeps it,
//!   tick-sampled (cpuacct's `/proc/stat` reader; ticks are `USER_HZ` from `sysconf`). `guest`
//!   and `guest_nice` are taken out of `user` and `nice` (the kernel counts them in both), so
//!   the modes of one CPU add up to its total time.
//! - `platscope_cpu_switch_seconds_total{cpu,mode}`: measured at every context switch by
//!   cpuacct's BPF program (the one `platscope cpu util --event` uses), loaded once when the
//!   collector is built and read at each scrape: `task` is what the scheduler charged the tasks
//!   that ran, `interrupt_steal` the rest of the busy time (interrupts with
//!   `IRQ_TIME_ACCOUNTING`, and time the hypervisor gave another guest). The two add up to the
//!   CPU's non-idle time since the program was loaded. Without root or BPF this family is left
//!   out (a one-line note on stderr when the collector is built); the tick family stays.

use std::sync::mpsc;
use std::time::Duration;

use cpuacct::cputime::{CpuBusy, CpuEvents, Wanted};
use measure::cpustat::{parse_proc_stat, CpuTimes, ProcStat};
use measure::time::ClockTicks;
use measure::{FsRoot, UsageError};

use super::{CollectError, Collector, Config};
use crate::{Family, Kind, Unit};

/// A request to the thread that owns the BPF programs: where to send the reading.
type Reply = mpsc::SyncSender<Result<Vec<CpuBusy>, String>>;

/// The `cpu` collector.
#[derive(Debug)]
pub struct Cpu {
    root: FsRoot,
    ticks: ClockTicks,
    /// The BPF reader, when it could be loaded.
    switch: Option<mpsc::Sender<Reply>>,
}

/// Registry entry.
pub(super) fn factory(config: &Config) -> Result<Box<dyn Collector>, UsageError> {
    Ok(Box::new(Cpu::new(config.root.clone(), config.root.is_live())))
}

impl Cpu {
    /// Reads `/proc/stat` under `root`; with `bpf`, loads the switch-time program now (a note
    /// on stderr if it cannot be, and the tick family alone is reported).
    pub fn new(root: FsRoot, bpf: bool) -> Self {
        let switch = if bpf {
            match start_switch_reader() {
                Ok(sender) => Some(sender),
                Err(why) => {
                    measure::say!(
                        "cpu collector: platscope_cpu_switch_seconds_total left out ({why})"
                    );
                    None
                }
            }
        } else {
            None
        };
        Cpu { root, ticks: ClockTicks::system(), switch }
    }

    /// Whether the BPF family is reported.
    pub fn has_switch_times(&self) -> bool {
        self.switch.is_some()
    }
}

/// Starts the thread that owns the BPF programs (libbpf's handles cannot move between
/// threads) and answers readings; it ends when the collector is dropped.
fn start_switch_reader() -> Result<mpsc::Sender<Reply>, String> {
    let (ready_tx, ready_rx) = mpsc::sync_channel::<Result<(), String>>(1);
    let (tx, rx) = mpsc::channel::<Reply>();
    std::thread::Builder::new()
        .name("cpu-switch-bpf".into())
        .spawn(move || {
            let events = match CpuEvents::attach(Wanted { busy: true, exits: false }) {
                Ok(events) => {
                    let _ = ready_tx.send(Ok(()));
                    events
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e.to_string()));
                    return;
                }
            };
            for reply in rx {
                let _ = reply.send(events.busy().map_err(|e| e.to_string()));
            }
        })
        .map_err(|e| format!("starting its thread: {e}"))?;
    match ready_rx.recv_timeout(Duration::from_secs(30)) {
        Ok(Ok(())) => Ok(tx),
        Ok(Err(why)) => Err(why),
        Err(_) => Err("the BPF program did not load within 30 s".into()),
    }
}

impl Collector for Cpu {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn collect(&self, out: &mut Vec<Family>) -> Result<(), CollectError> {
        let fail = |message: String| CollectError { collector: "cpu", message };
        let mut buf = String::new();
        let stat = self
            .root
            .parse(&self.root.path("proc/stat"), &mut buf, parse_proc_stat)
            .map_err(|e| fail(e.to_string()))?;
        out.push(tick_family(&stat, self.ticks));
        if let Some(switch) = &self.switch {
            let (reply, answer) = mpsc::sync_channel(1);
            switch.send(reply).map_err(|_| fail("the BPF reader thread has stopped".into()))?;
            let busy = answer
                .recv_timeout(Duration::from_secs(5))
                .map_err(|_| fail("the BPF reader did not answer within 5 s".into()))?
                .map_err(fail)?;
            out.push(switch_family(&busy));
        }
        Ok(())
    }
}

/// Tick-sampled seconds per CPU and mode; `guest` is taken out of `user` and `guest_nice` out
/// of `nice`, so the modes add up to the CPU's total.
pub fn tick_family(stat: &ProcStat, ticks: ClockTicks) -> Family {
    let mut fam = Family::new(
        "platscope_cpu_tick_seconds",
        Kind::Counter,
        Some(Unit::Seconds),
        "CPU time by mode from /proc/stat (tick-sampled); guest time is not also in user.",
    );
    for line in &stat.cpus {
        let cpu = line.cpu.to_string();
        for (mode, value) in modes(&line.times) {
            fam.push(&[("cpu", &cpu), ("mode", mode)], ticks.to_secs(value));
        }
    }
    fam
}

fn modes(t: &CpuTimes) -> Vec<(&'static str, u64)> {
    let guest = t.guest.unwrap_or(0);
    let guest_nice = t.guest_nice.unwrap_or(0);
    let mut out = vec![
        ("user", t.user.saturating_sub(guest)),
        ("nice", t.nice.saturating_sub(guest_nice)),
        ("system", t.system),
        ("idle", t.idle),
        ("iowait", t.iowait),
        ("irq", t.irq),
        ("softirq", t.softirq),
    ];
    // Columns an old kernel does not print are left out, not reported as 0.
    for (mode, value) in [("steal", t.steal), ("guest", t.guest), ("guest_nice", t.guest_nice)] {
        if let Some(v) = value {
            out.push((mode, v));
        }
    }
    out
}

/// Switch-measured busy seconds per CPU: `task` plus `interrupt_steal` is the busy time.
/// CPUs not yet seen switching are left out (their busy time is unknown).
pub fn switch_family(busy: &[CpuBusy]) -> Family {
    let mut fam = Family::new(
        "platscope_cpu_switch_seconds",
        Kind::Counter,
        Some(Unit::Seconds),
        "Busy CPU time measured at every context switch (BPF) since the exporter started: \
         task = charged to tasks, interrupt_steal = the rest.",
    );
    for b in busy.iter().filter(|b| !b.unknown) {
        let cpu = b.cpu.to_string();
        let task = b.task_ns.min(b.busy_ns);
        fam.push(&[("cpu", &cpu), ("mode", "task")], task as f64 * 1e-9);
        fam.push(&[("cpu", &cpu), ("mode", "interrupt_steal")], (b.busy_ns - task) as f64 * 1e-9);
    }
    fam
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Value;
    use test_tier::live;

    fn number(fam: &Family, cpu: &str, mode: &str) -> f64 {
        let want = crate::Labels::new(&[("cpu", cpu), ("mode", mode)]);
        match fam.samples.iter().find(|s| s.labels == want).map(|s| &s.value) {
            Some(Value::Number(v)) => *v,
            other => panic!("{cpu}/{mode}: {other:?}"),
        }
    }

    #[test]
    fn tick_modes_add_up_without_guest_twice() {
        let text = "cpu  300 20 100 1000 10 5 5 2 50 10\n\
                    cpu0 300 20 100 1000 10 5 5 2 50 10\n\
                    ctxt 99\n";
        let stat = parse_proc_stat(text).unwrap();
        let fam = tick_family(&stat, ClockTicks::new(100));
        assert_eq!(fam.kind, Kind::Counter);
        assert_eq!(number(&fam, "0", "user"), 2.5);
        assert_eq!(number(&fam, "0", "nice"), 0.1);
        assert_eq!(number(&fam, "0", "guest"), 0.5);
        let sum: f64 = fam
            .samples
            .iter()
            .map(|s| match s.value {
                Value::Number(v) => v,
                Value::Histogram { .. } => 0.0,
            })
            .sum();
        let total = stat.cpus[0].times.total() as f64 / 100.0;
        assert!((sum - total).abs() < 1e-9, "{sum} vs {total}");
    }

    #[test]
    fn switch_modes_add_up_to_busy_and_unknown_cpus_are_left_out() {
        let busy = [
            CpuBusy {
                cpu: 0,
                busy_ns: 3_000_000_000,
                task_ns: 2_500_000_000,
                switches: 9,
                unknown: false,
            },
            CpuBusy { cpu: 1, busy_ns: 0, task_ns: 0, switches: 0, unknown: true },
        ];
        let fam = switch_family(&busy);
        assert_eq!(fam.samples.len(), 2);
        assert_eq!(number(&fam, "0", "task"), 2.5);
        assert_eq!(number(&fam, "0", "interrupt_steal"), 0.5);
    }

    #[test]
    fn without_bpf_the_tick_family_alone() {
        let cpu = Cpu::new(FsRoot::live(), false);
        assert!(!cpu.has_switch_times());
        let mut out = Vec::new();
        cpu.collect(&mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].name, "platscope_cpu_tick_seconds");
        assert!(!out[0].samples.is_empty());
    }

    #[live("loads cpuacct's BPF program (root)")]
    fn switch_times_grow_between_scrapes() {
        let cpu = Cpu::new(FsRoot::live(), true);
        assert!(cpu.has_switch_times(), "BPF did not load (see the note above; run as root)");
        let total = |cpu: &Cpu| {
            let mut out = Vec::new();
            cpu.collect(&mut out).unwrap();
            let fam = out.iter().find(|f| f.name == "platscope_cpu_switch_seconds").unwrap();
            fam.samples
                .iter()
                .map(|s| match s.value {
                    Value::Number(v) => v,
                    Value::Histogram { .. } => 0.0,
                })
                .sum::<f64>()
        };
        let before = total(&cpu);
        // Busy work on this CPU: the switch-measured busy time must grow.
        let start = std::time::Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(200) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let after = total(&cpu);
        assert!(after > before, "busy seconds {before} -> {after}");
    }
}

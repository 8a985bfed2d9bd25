//! What the transactions cost: the server's process tree CPU (pstime's exact per-process
//! clocks, backends that start during the run included, reaped ones through the parent's
//! `cutime + cstime`), the whole machine's busy time (`/proc/stat`'s measured idle against the
//! wall clock), and this process's own CPU, each between two moments around the run.

use measure::cpustat::MachineReading;
use measure::time::{process_cpu_ns, ClockTicks};
use measure::FsRoot;
use pstime::{Sampler, Snapshot};
use serde::{Deserialize, Serialize};

use crate::Error;

/// CPU per transaction and what it rests on.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    /// The server's main process.
    pub server_pid: u32,
    /// Processes counted in its tree (itself and descendants seen at either end).
    pub server_processes: u32,
    /// CPU of the server's processes, ns.
    pub server_cpu_ns: u64,
    /// Some of it is missing (a process exited and its parent had not reaped it by the end).
    pub server_cpu_lower_bound: bool,
    /// Busy time of every CPU, ns: wall time × CPUs less idle, I/O wait and steal
    /// ([`MachineReading`]; the tick-sampled busy columns miss short transactions).
    pub machine_busy_ns: u64,
    /// This process's CPU (all its threads), ns.
    pub driver_cpu_ns: u64,
    /// Transactions the figures are divided by.
    pub transactions: u64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub server_us_per_tx: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub machine_us_per_tx: f64,
    #[serde(deserialize_with = "measure::nan::f64_or_null")]
    pub driver_us_per_tx: f64,
}

/// The first reading.
#[derive(Debug)]
pub struct CostProbe {
    sampler: Sampler,
    first: Snapshot,
    machine: MachineReading,
    driver_ns: u64,
    root: u32,
    ticks: ClockTicks,
}

fn own_cpu_ns() -> u64 {
    process_cpu_ns(std::process::id()).unwrap_or(0)
}

impl CostProbe {
    /// Reads every process (one `/proc` scan), `/proc/stat` and this process's CPU clock.
    pub fn start(server_pid: u32) -> Result<Self, Error> {
        let ticks = ClockTicks::system();
        let mut sampler = Sampler::new(FsRoot::live(), pstime::Options::default(), ticks)?;
        let first = sampler.snapshot()?;
        let machine = MachineReading::now().map_err(Error::Cpu)?;
        Ok(CostProbe { sampler, first, machine, driver_ns: own_cpu_ns(), root: server_pid, ticks })
    }

    /// The second reading, divided by `transactions`.
    pub fn finish(mut self, transactions: u64) -> Result<Cost, Error> {
        let driver_ns = own_cpu_ns().saturating_sub(self.driver_ns);
        let machine =
            MachineReading::now().map_err(Error::Cpu)?.busy_ns_since(&self.machine, self.ticks);
        let second = self.sampler.snapshot()?;
        let report = pstime::compare(
            &self.first,
            &second,
            None,
            self.sampler.basis(),
            self.sampler.options(),
        );
        let parents: std::collections::HashMap<u32, u32> =
            report.processes.iter().map(|p| (p.pid, p.ppid)).collect();
        let in_tree = |mut pid: u32| {
            for _ in 0..64 {
                if pid == self.root {
                    return true;
                }
                match parents.get(&pid) {
                    Some(&pp) if pp != 0 && pp != pid => pid = pp,
                    _ => return false,
                }
            }
            false
        };
        let (mut cpu, mut n, mut lower) = (0u64, 0u32, false);
        for p in report.processes.iter().filter(|p| in_tree(p.pid)) {
            n += 1;
            match p.cpu_ns {
                Some(ns) => cpu = cpu.saturating_add(ns),
                None => lower = true,
            }
            if p.cpu_lower_bound {
                lower = true;
            }
            // Children it reaped during the run (backends that ended): their whole lives.
            cpu = cpu.saturating_add(self.ticks.to_ns(p.children_ticks));
        }
        let per = |ns: u64| {
            if transactions == 0 {
                f64::NAN
            } else {
                ns as f64 / 1e3 / transactions as f64
            }
        };
        Ok(Cost {
            server_pid: self.root,
            server_processes: n,
            server_cpu_ns: cpu,
            server_cpu_lower_bound: lower,
            machine_busy_ns: machine,
            driver_cpu_ns: driver_ns,
            transactions,
            server_us_per_tx: per(cpu),
            machine_us_per_tx: per(machine),
            driver_us_per_tx: per(driver_ns),
        })
    }
}

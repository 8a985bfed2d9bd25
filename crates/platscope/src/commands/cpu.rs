//! `platscope cpu scale`; `cpu pstime` and `cpu util` are registry tools in cpuacct
//! (`cpuacct::command`), added to this group by the registry.

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum CpuCommand {
    /// Throughput against threads for one instance of a parallel job (seed 004's Tamp), then
    /// against units × threads: single-thread speed, where one instance stops scaling and why,
    /// and what the filled machine does — with how many CPUs were busy at each step.
    Scale(super::compress::ScaleArgs),
}

pub fn run(command: &CpuCommand, json: bool, store: &results::StoreOptions) -> anyhow::Result<()> {
    match command {
        CpuCommand::Scale(args) => super::compress::run_scale(args, json, store),
    }
}

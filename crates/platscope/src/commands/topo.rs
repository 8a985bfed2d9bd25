use anyhow::Context;

use crate::cli::TopoArgs;
use crate::output::{emit, emit_json};

pub fn run(args: &TopoArgs, json: bool) -> anyhow::Result<()> {
    let topology = topo::Topology::detect().context("reading the topology")?;
    if args.facts {
        let facts = topo::machine_facts(&topology);
        return if json {
            emit_json(&facts)
        } else {
            Ok(emit(&topo::render::facts_text(&facts, None))?)
        };
    }
    if json {
        emit_json(&topology)
    } else if args.hardware {
        Ok(emit(&topo::numactl_hardware(&topology))?)
    } else {
        Ok(emit(&topo::topology_text(&topology))?)
    }
}

use anyhow::Context;
use place::{pin, Arena, ArenaSpec, PlacementRequest};
use serde::Serialize;

use crate::cli::PlaceArgs;
use crate::output::{emit, emit_json};

#[derive(Serialize)]
struct PlaceResult<'a> {
    request: &'a PlacementRequest,
    /// The CPU that touched the memory first.
    touched_from_cpu: Option<u32>,
    placement: place::Placement,
}

pub fn run(args: &PlaceArgs, json: bool) -> anyhow::Result<()> {
    let topology = topo::Topology::detect().context("reading the topology")?;
    let request = PlacementRequest::resolve(&args.placement, &topology)?;
    if let Some(cpus) = &request.cpus {
        pin::pin_current_thread(cpus)?;
    }
    let spec = ArenaSpec { bytes: args.size, policy: request.policy.clone(), page: args.page };
    let arena = Arena::new(spec, &topology)?;
    let touched_from_cpu = pin::current_cpu();
    let placement = arena.placement()?;
    if json {
        emit_json(&PlaceResult { request: &request, touched_from_cpu, placement })
    } else {
        Ok(emit(&place::placement_text(&placement, touched_from_cpu))?)
    }
}

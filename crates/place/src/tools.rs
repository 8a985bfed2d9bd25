//! The views of where things are: `platscope topo` (the machine's nodes, CPUs, memory and
//! environment) and `platscope place` (memory allocated under a placement and where its pages
//! really are). They store nothing: [`experiment::Tool`]s.
//!
//! `topo` lives here rather than in the `topo` crate because the experiment seam itself depends
//! on `topo` (every run is given the topology), so `topo` cannot depend on the seam.

use clap::Args;
use experiment::output::{emit, emit_json};
use experiment::{Format, Globals, Tool};
use measure::Classified;
use serde::Serialize;
use topo::Topology;

use crate::{parse_page, PlacementArgs};
use crate::{pin, Arena, ArenaSpec, PageSize, Placement, PlacementRequest};

/// The topology of this machine, or a runtime error saying it could not be read.
pub fn detect_topology() -> Result<Topology, Classified> {
    Topology::detect().map_err(|e| Classified::runtime(format!("reading the topology: {e}")))
}

/// What a view prints for `--csv`: it has no table to give.
fn no_csv(command: &str) -> Classified {
    Classified::usage(format!("{command} has no CSV form; use --json or the text output"))
}

/// Show NUMA nodes, CPUs, memory per node, distances, caches and the environment facts
/// that change memory results.
#[derive(Debug, Args)]
pub struct TopoArgs {
    /// Print the same layout as `numactl --hardware`.
    #[arg(long, conflicts_with = "json")]
    pub hardware: bool,
    /// Print the machine facts table (CPU, microcode, caches, TLBs, page sizes, memory devices,
    /// kernel settings, mitigations); with --json, the facts as a list of {setting, value}.
    #[arg(long, conflicts_with = "hardware")]
    pub facts: bool,
}

/// `platscope topo`.
#[derive(Debug)]
pub struct Topo;

impl Tool for Topo {
    const PATH: &'static [&'static str] = &["topo"];
    const ABOUT: &'static str = "Show NUMA nodes, CPUs, memory per node, distances, caches and \
                                 the environment facts that change memory results";
    type Args = TopoArgs;

    fn run(args: &TopoArgs, globals: &Globals) -> Result<(), Classified> {
        let topology = detect_topology()?;
        if args.facts {
            let facts = topo::machine_facts(&topology);
            match globals.format {
                Format::Json => emit_json(&facts)?,
                Format::Csv => return Err(no_csv("topo --facts")),
                Format::Text => emit(&topo::render::facts_text(&facts, None))?,
            }
            return Ok(());
        }
        match globals.format {
            Format::Json => emit_json(&topology)?,
            Format::Csv => return Err(no_csv("topo")),
            Format::Text if args.hardware => emit(&topo::numactl_hardware(&topology))?,
            Format::Text => emit(&topo::topology_text(&topology))?,
        }
        Ok(())
    }
}

/// Allocate memory under a placement, first-touch it, and show on which nodes its pages
/// really are.
#[derive(Debug, Args)]
pub struct PlaceArgs {
    /// How much to allocate: bytes or a binary unit (64MiB, 1GiB, 4k).
    #[arg(long, value_parser = topo::units::parse_bytes, allow_hyphen_values = true)]
    pub size: u64,

    /// Page size: 4k (THP kept out), thp, 2m or 1g (hugetlb pools).
    #[arg(long, default_value = "4k", value_parser = parse_page)]
    pub page: PageSize,

    #[command(flatten)]
    pub placement: PlacementArgs,
}

/// `platscope place --json`.
#[derive(Debug, Serialize)]
struct PlaceResult<'a> {
    request: &'a PlacementRequest,
    /// The CPU that touched the memory first.
    touched_from_cpu: Option<u32>,
    placement: Placement,
}

/// `platscope place`.
#[derive(Debug)]
pub struct Place;

impl Tool for Place {
    const PATH: &'static [&'static str] = &["place"];
    const ABOUT: &'static str = "Allocate memory under a placement, first-touch it, and show on \
                                 which nodes its pages really are";
    type Args = PlaceArgs;

    fn run(args: &PlaceArgs, globals: &Globals) -> Result<(), Classified> {
        if globals.format == Format::Csv {
            return Err(no_csv("place"));
        }
        let topology = detect_topology()?;
        let request = PlacementRequest::resolve(&args.placement, &topology)?;
        if let Some(cpus) = &request.cpus {
            pin::pin_current_thread(cpus)?;
        }
        let spec = ArenaSpec { bytes: args.size, policy: request.policy.clone(), page: args.page };
        let arena = Arena::new(spec, &topology)?;
        let touched_from_cpu = pin::current_cpu();
        let placement = arena.placement()?;
        match globals.format {
            Format::Json => {
                emit_json(&PlaceResult { request: &request, touched_from_cpu, placement })?
            }
            _ => emit(&crate::placement_text(&placement, touched_from_cpu))?,
        }
        Ok(())
    }
}

//! (b) Node × node latency: idle latency from each CPU node to each memory node, as a heatmap
//! with each cell's ratio to its row's local cell.

use std::fmt::Write as _;

use crate::latency::LatencyMatrix;
use topo::Topology;

use super::heatmap::{heatmap, Cell, Heatmap};
use super::{placement_text, samples_text, Figure};
use chart::svg::{self, bytes_label, esc, fmt3};

pub fn latency_matrix(m: &LatencyMatrix, topology: &Topology) -> Option<Figure> {
    if m.cells.iter().all(Vec::is_empty) {
        return None;
    }
    let cells = m
        .cells
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let from = m.cpu_nodes.get(i).copied();
            let local = from
                .and_then(|f| m.memory_nodes.iter().position(|&n| n == f))
                .and_then(|j| row.get(j))
                .map(|c| c.ns.median);
            row.iter()
                .enumerate()
                .map(|(j, c)| {
                    let to = m.memory_nodes.get(j).copied();
                    let slit = match (from, to, &topology.distances) {
                        (Some(f), Some(t), Some(d)) => d.get(f, t),
                        _ => None,
                    };
                    let note = match (local, from == to) {
                        (_, true) => "local".to_string(),
                        (Some(l), false) if l > 0.0 => format!("{}× local", fmt3(c.ns.median / l)),
                        _ => String::new(),
                    };
                    let slit_text = slit.map_or(String::new(), |s| format!("; SLIT distance {s}"));
                    Cell {
                        value: c.ns.median,
                        note,
                        tip: format!(
                            "median {} ns, best {} ns, p99 {} ns over {} samples{}; CPU {}, memory {}{slit_text}",
                            fmt3(c.ns.median),
                            fmt3(c.ns.min),
                            fmt3(c.ns.p99),
                            c.ns.samples,
                            if c.ns.noisy { " [noisy]" } else { "" },
                            c.cpu.map_or("?".to_string(), |c| c.to_string()),
                            placement_text(&c.placement)
                        ),
                    }
                })
                .collect()
        })
        .collect();
    let svg = heatmap(&Heatmap {
        id: super::LATENCY_MATRIX.id,
        title: "Idle latency from each CPU node to each memory node",
        rows: &m.cpu_nodes,
        cols: &m.memory_nodes,
        cells,
        unit: "ns",
        ramp: svg::RAMP_LATENCY,
        row_title: "CPU node",
        col_title: "memory node",
    });
    let all = m.cells.iter().flatten();
    let noisy = m.cells.iter().flatten().filter(|c| c.ns.noisy).count();
    let total = m.cells.iter().flatten().count();
    let mut caption = format!(
        "Idle load-to-use latency from the first CPU of each CPU node (rows) to memory bound to each node (columns), \
         {} chased per cell. Cells: {}; darker is slower; the second line is the ratio to the row's local cell. \
         Best, p99 and the verified placement are in each cell's tooltip.",
        esc(&bytes_label(m.bytes as f64)),
        samples_text("samples", all.map(|c| &c.ns))
    );
    if noisy > 0 {
        let _ =
            write!(caption, " {noisy} of {total} cells were noisy (middle half spread above 5%).");
    }
    if topology.distances.is_none() {
        caption.push_str(" The firmware gave no SLIT distances to compare with.");
    }
    Some(Figure { svg, caption, after: String::new() })
}

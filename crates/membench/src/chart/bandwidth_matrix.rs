//! (c) Node × node bandwidth: each CPU node streaming from each memory node, as a heatmap with
//! the best round under the median.

use crate::bandwidth::BandwidthMatrix;
use place::Placement;
use std::fmt::Write as _;

use super::heatmap::{heatmap, Cell, Heatmap};
use super::{placement_text, samples_text, Figure};
use chart::svg::{self, bytes_label, esc, fmt3};

pub fn bandwidth_matrix(m: &BandwidthMatrix) -> Option<Figure> {
    if m.cells.iter().all(Vec::is_empty) {
        return None;
    }
    let cells = m
        .cells
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| {
                    let placements: Vec<&Placement> =
                        c.threads.iter().flat_map(|t| t.placements.iter()).collect();
                    let memory = placements.first().map_or("not reported".to_string(), |p| placement_text(p));
                    Cell {
                        value: c.aggregate_gbs.median,
                        note: format!("best {}", fmt3(c.aggregate_gbs.max)),
                        tip: format!(
                            "median {} GB/s, slowest round {}, best {} over {} rounds{}; {} thread(s); memory {memory}{}",
                            fmt3(c.aggregate_gbs.median),
                            fmt3(c.aggregate_gbs.min),
                            fmt3(c.aggregate_gbs.max),
                            c.aggregate_gbs.samples,
                            if c.aggregate_gbs.noisy { " [noisy]" } else { "" },
                            c.threads.len(),
                            if c.interrupted { "; INTERRUPTED" } else { "" }
                        ),
                    }
                })
                .collect()
        })
        .collect();
    let svg = heatmap(&Heatmap {
        id: super::BANDWIDTH_MATRIX.id,
        title: "Bandwidth from each CPU node to each memory node",
        rows: &m.cpu_nodes,
        cols: &m.memory_nodes,
        cells,
        unit: "GB/s",
        ramp: svg::RAMP_BANDWIDTH,
        row_title: "CPU node",
        col_title: "memory node",
    });
    let first = m.cells.iter().flatten().next();
    let kernel = first.map_or("?".to_string(), |c| format!("{} kernel ({})", c.kernel, c.how()));
    let per_thread = first.map_or(String::new(), |c| bytes_label(c.bytes_per_thread as f64));
    let accounting = first.map_or(String::new(), |c| c.accounting.clone());
    let mut caption = format!(
        "Bandwidth of the {} with {} thread(s) on each CPU node (rows), each streaming through its own {} bound to each memory node (columns). \
         Cells: {} of all threads together, in GB/s (10<sup>9</sup> bytes/s); darker is faster; the second line is the best round. \
         Counted: {}.",
        esc(&kernel),
        m.threads_per_cell,
        esc(&per_thread),
        samples_text("rounds", m.cells.iter().flatten().map(|c| &c.aggregate_gbs)),
        esc(&accounting)
    );
    if let Some(check) = first.and_then(|c| c.size_check.as_ref()) {
        let _ = write!(
            caption,
            " Buffers sized so each cell's threads together stream at least 4× the last-level \
             cache; the first cell was checked at twice that, and its size used for all: {}.",
            esc(&check.sentence())
        );
    }
    Some(Figure { svg, caption, after: String::new() })
}

//! The node × node heatmap both matrices are drawn as: a cell per (CPU node, memory node) with
//! its value, a second line and a tooltip, coloured along a ramp with its key.

use std::fmt::Write as _;

use chart::svg::{self, esc, exact, fmt3, px, Rgb};

/// One heatmap cell: value, a short second line, and its tooltip.
pub(super) struct Cell {
    pub(super) value: f64,
    pub(super) note: String,
    pub(super) tip: String,
}

pub(super) struct Heatmap<'a> {
    pub(super) id: &'a str,
    pub(super) title: &'a str,
    pub(super) rows: &'a [u32],
    pub(super) cols: &'a [u32],
    pub(super) cells: Vec<Vec<Cell>>,
    pub(super) unit: &'a str,
    pub(super) ramp: &'a [Rgb],
    /// What rows and columns are (`CPU node`, `memory node`).
    pub(super) row_title: &'a str,
    pub(super) col_title: &'a str,
}

pub(super) fn heatmap(h: &Heatmap<'_>) -> String {
    let n_rows = h.cells.len().max(1);
    let n_cols = h.cells.iter().map(Vec::len).max().unwrap_or(1).max(1);
    let (left, top, right) = (96.0, 58.0, 20.0);
    let cell_w = ((600.0 - left - right) / n_cols as f64).min(200.0);
    let cell_h = (cell_w * 0.5).clamp(24.0, 84.0);
    let grid_w = cell_w * n_cols as f64;
    let grid_h = cell_h * n_rows as f64;
    let width = 600.0;
    let values: Vec<f64> =
        h.cells.iter().flatten().map(|c| c.value).filter(|v| v.is_finite()).collect();
    let lo = values.iter().copied().fold(f64::MAX, f64::min);
    let hi = values.iter().copied().fold(f64::MIN, f64::max);
    let height = top + grid_h + if hi > lo { 70.0 } else { 16.0 };
    let t = |v: f64| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
    let mut out = svg::open(h.id, width, height, h.title);
    // Column labels (memory nodes) on top, row labels (CPU nodes) on the left.
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"{}\" y=\"18\" text-anchor=\"middle\">{}</text>",
        px(left + grid_w / 2.0),
        esc(h.col_title)
    );
    for j in 0..n_cols {
        let label = h.cols.get(j).map_or("?".to_string(), u32::to_string);
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            px(left + cell_w * (j as f64 + 0.5)),
            px(top - 10.0),
            esc(&label)
        );
    }
    let _ = write!(
        out,
        "<text class=\"axis-title\" x=\"16\" y=\"{y}\" text-anchor=\"middle\" transform=\"rotate(-90 16 {y})\">{}</text>",
        esc(h.row_title),
        y = px(top + grid_h / 2.0)
    );
    let font = (cell_h * 0.3).clamp(9.0, 17.0);
    for (i, row) in h.cells.iter().enumerate() {
        let row_label = h.rows.get(i).map_or("?".to_string(), u32::to_string);
        let cy = top + cell_h * i as f64;
        let _ = write!(
            out,
            "<text class=\"tick-label\" x=\"{}\" y=\"{}\" dy=\"0.32em\" text-anchor=\"end\">{}</text>",
            px(left - 10.0),
            px(cy + cell_h / 2.0),
            esc(&row_label)
        );
        for (j, cell) in row.iter().enumerate() {
            let col_label = h.cols.get(j).map_or("?".to_string(), u32::to_string);
            let cx = left + cell_w * j as f64;
            if !cell.value.is_finite() {
                // Nothing measured here (a CPU with itself): a blank cell, no data.
                let _ = write!(
                    out,
                    "<rect class=\"cell blank\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#eef0f3\"><title>{}</title></rect>\
                     <text class=\"cell-value\" x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"#5a6472\">—</text>",
                    px(cx),
                    px(cy),
                    px(cell_w),
                    px(cell_h),
                    esc(&cell.tip),
                    px(cx + cell_w / 2.0),
                    px(cy + cell_h / 2.0)
                );
                continue;
            }
            let color = svg::ramp(h.ramp, t(cell.value));
            let ink = if color.is_light() { "#1d2430" } else { "#ffffff" };
            let _ = write!(
                out,
                "<rect class=\"data cell\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" \
                 data-value=\"{}\" data-row=\"{}\" data-col=\"{}\"><title>{} {} → {} {}: {}</title></rect>",
                px(cx),
                px(cy),
                px(cell_w),
                px(cell_h),
                color.hex(),
                exact(cell.value),
                esc(&row_label),
                esc(&col_label),
                esc(h.row_title),
                esc(&row_label),
                esc(h.col_title),
                esc(&col_label),
                esc(&cell.tip)
            );
            let two_lines = cell_h >= 44.0 && !cell.note.is_empty();
            let value_y =
                if two_lines { cy + cell_h / 2.0 - font * 0.45 } else { cy + cell_h / 2.0 };
            let _ = write!(
                out,
                "<text class=\"cell-value\" x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"{ink}\" font-size=\"{}\">{} {}</text>",
                px(cx + cell_w / 2.0),
                px(value_y),
                px(font),
                esc(&fmt3(cell.value)),
                esc(h.unit)
            );
            if two_lines {
                let _ = write!(
                    out,
                    "<text class=\"cell-note\" x=\"{}\" y=\"{}\" dy=\"0.35em\" text-anchor=\"middle\" fill=\"{ink}\" font-size=\"{}\">{}</text>",
                    px(cx + cell_w / 2.0),
                    px(value_y + font * 1.25),
                    px(font * 0.72),
                    esc(&cell.note)
                );
            }
        }
    }
    let _ = write!(
        out,
        "<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
        px(left),
        px(top),
        px(grid_w),
        px(grid_h)
    );
    // A colour key only where colours differ (not for a one-node machine's single cell).
    if hi > lo {
        out.push_str(&svg::legend_ramp(
            h.id,
            h.ramp,
            (left, top + grid_h + 22.0, grid_w.min(320.0)),
            &format!("{} {}", fmt3(lo), h.unit),
            &format!("{} {}", fmt3(hi), h.unit),
        ));
    }
    out.push_str("</svg>");
    out
}

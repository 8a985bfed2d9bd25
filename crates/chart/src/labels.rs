//! Text labels beside the points of a chart, placed so that none covers another label, a point
//! or a reserved area (a legend), none leaves the drawing, and each is nearer its own point than
//! any other: each label tries positions around its point in turn — right and above first, then
//! below, left, centred, then further out — and takes the first that is free. A label with no
//! free place is left out (`None`), never drawn over something or beside the wrong point.
//!
//! Text is measured by an estimate, not by a browser: each character's advance in the widest
//! sans-serif face of the page's font list (DejaVu Sans, Debian's default), plus the white halo
//! `.point-label` draws around its letters. A browser's boxes are checked against it by the
//! Chromium test of the compression scaling chart.
//!
//! ```
//! use chart::labels::{place, PointLabel, Rect};
//!
//! let bounds = Rect { left: 0.0, top: 0.0, right: 200.0, bottom: 100.0 };
//! // Two points close together: the second label goes elsewhere.
//! let points = [
//!     PointLabel { x: 100.0, y: 50.0, text: "2/2".into() },
//!     PointLabel { x: 100.0, y: 56.0, text: "1/2".into() },
//! ];
//! let placed = place(&points, 4.5, 12.0, bounds, &[]);
//! let (a, b) = (placed[0].as_ref().unwrap(), placed[1].as_ref().unwrap());
//! assert!(!a.rect.overlaps(&b.rect));
//! // A point at the right edge is labelled on its left.
//! let edge = place(&[PointLabel { x: 198.0, y: 50.0, text: "2/2".into() }], 4.5, 12.0, bounds, &[]);
//! assert_eq!(edge[0].as_ref().unwrap().anchor, "end");
//! ```

use std::fmt::Write as _;

use crate::svg::{esc, px};

/// An axis-aligned box in the SVG's user units (y grows downwards).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub left: f64,
    pub top: f64,
    pub right: f64,
    pub bottom: f64,
}

impl Rect {
    /// Whether the two boxes share any area (touching edges do not).
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }

    /// Whether this box lies wholly inside `outer`.
    pub fn inside(&self, outer: &Rect) -> bool {
        self.left >= outer.left
            && self.right <= outer.right
            && self.top >= outer.top
            && self.bottom <= outer.bottom
    }

    /// The box around a point marker of radius `r` at (`x`, `y`).
    pub fn around(x: f64, y: f64, r: f64) -> Rect {
        Rect { left: x - r, top: y - r, right: x + r, bottom: y + r }
    }
}

/// A label wanted beside the point (`x`, `y`).
#[derive(Debug, Clone, PartialEq)]
pub struct PointLabel {
    pub x: f64,
    pub y: f64,
    pub text: String,
}

/// Where a label went: its text's anchor point and `text-anchor`, and the box it covers.
#[derive(Debug, Clone, PartialEq)]
pub struct Placed {
    pub x: f64,
    /// The baseline.
    pub y: f64,
    /// `start`, `middle` or `end`.
    pub anchor: &'static str,
    pub rect: Rect,
    pub text: String,
}

impl Placed {
    /// The label as an SVG `<text>` of class `class`.
    pub fn svg(&self, class: &str) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "<text class=\"{class}\" x=\"{}\" y=\"{}\"{}>{}</text>",
            px(self.x),
            px(self.y),
            if self.anchor == "start" {
                String::new()
            } else {
                format!(" text-anchor=\"{}\"", self.anchor)
            },
            esc(&self.text)
        );
        out
    }
}

/// The white halo `.point-label` and `.bar-label` draw around their letters (a 3 px stroke):
/// half of it on each side.
const HALO: f64 = 1.5;

/// The advance of `c` in ems, in DejaVu Sans (the widest face of the page's sans-serif list, and
/// the one Debian resolves `system-ui` to): digits 0.636, most letters 0.55–0.7.
fn advance(c: char) -> f64 {
    match c {
        ' ' | '.' | ',' | ':' | ';' | '|' | '!' | '\'' => 0.32,
        '/' | '(' | ')' | '[' | ']' | 'i' | 'j' | 'l' | 'f' | 't' | 'r' | 'I' => 0.42,
        'm' | 'w' | 'M' | 'W' | '%' | '×' | '—' => 0.98,
        _ => 0.7,
    }
}

/// The estimated width of `text` at `font_size` px, halo included.
pub fn text_width(text: &str, font_size: f64) -> f64 {
    text.chars().map(advance).sum::<f64>() * font_size + 2.0 * HALO
}

/// The box of `text` drawn at (`x`, baseline `y`) with `anchor`, halo included.
pub fn text_box(text: &str, font_size: f64, x: f64, y: f64, anchor: &str) -> Rect {
    let width = text_width(text, font_size);
    let left = match anchor {
        "middle" => x - width / 2.0,
        "end" => x - width + HALO,
        _ => x - HALO,
    };
    // DejaVu Sans: ascender 0.93 em, descender 0.24 em.
    Rect {
        left,
        top: y - 0.93 * font_size - HALO,
        right: left + width,
        bottom: y + 0.24 * font_size + HALO,
    }
}

/// How far `rect` is from the point (`x`, `y`) (0 when the point is inside it).
fn distance(rect: &Rect, x: f64, y: f64) -> f64 {
    let dx = (rect.left - x).max(x - rect.right).max(0.0);
    let dy = (rect.top - y).max(y - rect.bottom).max(0.0);
    dx.hypot(dy)
}

/// Whether a label at `rect` reads as `own`'s: no other point is as near it. Points closer to
/// `own` than two markers' width are one place to the eye and do not count.
fn reads_as_its_own(rect: &Rect, own: &PointLabel, points: &[PointLabel], radius: f64) -> bool {
    let mine = distance(rect, own.x, own.y);
    points
        .iter()
        .filter(|q| (q.x - own.x).hypot(q.y - own.y) >= 2.0 * radius)
        .all(|q| distance(rect, q.x, q.y) > mine)
}

/// Places a label for each of `points` (in order; earlier ones get the better places), each
/// beside a marker of radius `radius`, in text of `font_size` px: inside `bounds`, clear of
/// every point's marker, of `reserved` boxes and of each other, and nearer its own point than
/// any other (so it reads as that point's). `None` for a label that found no free place.
pub fn place(
    points: &[PointLabel],
    radius: f64,
    font_size: f64,
    bounds: Rect,
    reserved: &[Rect],
) -> Vec<Option<Placed>> {
    let markers: Vec<Rect> = points.iter().map(|p| Rect::around(p.x, p.y, radius)).collect();
    let mut taken: Vec<Rect> = Vec::new();
    let gap = radius + 2.0;
    let ascent = 0.93 * font_size;
    let descent = 0.24 * font_size;
    let mut out = Vec::with_capacity(points.len());
    for p in points {
        let mut chosen = None;
        'rings: for ring in 0..4 {
            let further = f64::from(ring) * (ascent + descent + 2.0);
            // Diagonal: the text's bottom (or top) corner near the point.
            let above = p.y - gap - descent - further;
            let below = p.y + gap + ascent + further;
            let level = p.y + 0.36 * font_size;
            let candidates = [
                (p.x + gap, above, "start"),
                (p.x + gap, below, "start"),
                (p.x - gap, above, "end"),
                (p.x - gap, below, "end"),
                (p.x, above - 2.0, "middle"),
                (p.x, below + 2.0, "middle"),
                (p.x + gap + 2.0 + further, level, "start"),
                (p.x - gap - 2.0 - further, level, "end"),
            ];
            for (x, y, anchor) in candidates {
                let rect = text_box(&p.text, font_size, x, y, anchor);
                let free = rect.inside(&bounds)
                    && !markers.iter().chain(reserved).chain(&taken).any(|r| r.overlaps(&rect))
                    && reads_as_its_own(&rect, p, points, radius);
                if free {
                    chosen = Some(Placed { x, y, anchor, rect, text: p.text.clone() });
                    break 'rings;
                }
            }
        }
        if let Some(placed) = &chosen {
            taken.push(placed.rect);
        }
        out.push(chosen);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: Rect = Rect { left: 64.0, top: 0.0, right: 600.0, bottom: 344.0 };

    fn label(x: f64, y: f64, text: &str) -> PointLabel {
        PointLabel { x, y, text: text.into() }
    }

    #[test]
    fn crowded_points_get_labels_that_cover_nothing() {
        // Four lines meeting at three thread counts, two of them at the right edge and two
        // points almost on top of each other: the scaling chart's worst case.
        let mut points = Vec::new();
        for (i, x) in [64.0, 322.0, 580.0].into_iter().enumerate() {
            for (j, y) in [300.0, 296.0, 200.0, 40.0].into_iter().enumerate() {
                points.push(label(x, y - 3.0 * i as f64, &format!("{}/64", 8 * (i + j))));
            }
        }
        let legend = [Rect { left: 70.0, top: 4.0, right: 420.0, bottom: 20.0 }];
        let placed = place(&points, 4.5, 12.0, BOUNDS, &legend);
        let boxes: Vec<Rect> = placed.iter().flatten().map(|p| p.rect).collect();
        assert_eq!(boxes.len(), points.len(), "every label found a place: {placed:?}");
        for (i, a) in boxes.iter().enumerate() {
            assert!(a.inside(&BOUNDS), "{a:?}");
            assert!(!a.overlaps(&legend[0]), "{a:?}");
            for b in &boxes[i + 1..] {
                assert!(!a.overlaps(b), "{a:?} and {b:?}");
            }
            for p in &points {
                assert!(!a.overlaps(&Rect::around(p.x, p.y, 4.5)), "{a:?} covers {p:?}");
            }
        }
    }

    #[test]
    fn a_label_never_sits_nearer_another_point() {
        // A column of points 10 px apart at the left edge: a label may not drift up beside
        // the next point; one that cannot be placed beside its own is left out.
        let column: Vec<PointLabel> =
            [334.0, 324.0, 305.0, 267.0].into_iter().map(|y| label(64.0, y, "12/64")).collect();
        let placed = place(&column, 4.5, 12.0, Rect { left: 65.0, ..BOUNDS }, &[]);
        for (p, own) in placed.iter().zip(&column) {
            let Some(p) = p else { continue };
            assert!(reads_as_its_own(&p.rect, own, &column, 4.5), "{p:?} for {own:?}");
            for other in column.iter().filter(|o| o.y != own.y) {
                assert!(distance(&p.rect, other.x, other.y) > distance(&p.rect, own.x, own.y));
            }
        }
        assert!(placed[3].is_some() && placed[2].is_some(), "room above: {placed:?}");
        // Two points on top of each other are one place: both labelled beside it.
        let twins = [label(300.0, 100.0, "40/64"), label(300.0, 100.2, "64/64")];
        assert!(place(&twins, 4.5, 12.0, BOUNDS, &[]).iter().all(Option::is_some));
    }

    #[test]
    fn a_label_with_no_room_is_left_out() {
        let tight = Rect { left: 0.0, top: 0.0, right: 30.0, bottom: 30.0 };
        let placed = place(&[label(15.0, 15.0, "a long label")], 4.5, 12.0, tight, &[]);
        assert_eq!(placed, vec![None]);
    }

    #[test]
    fn the_first_choice_is_right_and_above_and_the_svg_says_where() {
        let placed = place(&[label(200.0, 200.0, "1/2")], 4.5, 12.0, BOUNDS, &[]);
        let p = placed[0].as_ref().unwrap();
        assert_eq!(p.anchor, "start");
        assert!(p.x > 200.0 && p.rect.bottom <= 200.0 - 4.5, "{p:?}");
        assert_eq!(
            p.svg("point-label"),
            "<text class=\"point-label\" x=\"206.5\" y=\"190.6\">1/2</text>"
        );
        let edge = place(&[label(598.0, 200.0, "1/2")], 4.5, 12.0, BOUNDS, &[]);
        assert!(edge[0].as_ref().unwrap().svg("point-label").contains("text-anchor=\"end\""));
    }

    #[test]
    fn text_widths_grow_with_the_text() {
        assert!(text_width("64/64", 12.0) > text_width("2/2", 12.0));
        // Three DejaVu digits at 12 px are 22.9 px: the estimate is not smaller.
        assert!(text_width("888", 12.0) >= 3.0 * 0.636 * 12.0);
    }
}

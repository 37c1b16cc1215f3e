//! Inline SVG charts for the HTML report, drawn by hand: three chart kinds
//! do not justify a plotting crate, and hand-written SVG needs no script
//! and no network to display. Every label goes through `escape_html`;
//! hovering a mark shows its `<title>`.
//!
//! Layout: horizontal bars, so that long agent and slice labels get a
//! left margin of their own instead of being rotated or clipped.

use std::fmt::Write;

use crate::escape::escape_html as h;
use crate::format::{duration, pct};
use crate::model::Rate;

const WIDTH: f64 = 960.0;
/// Left margin for labels; labels longer than `LABEL_CHARS` are cut (the
/// whole label is in the mark's title).
const LEFT: f64 = 200.0;
const RIGHT: f64 = 150.0;
const LABEL_CHARS: usize = 24;

/// Okabe–Ito colours, distinguishable with colour-vision deficiencies;
/// arms cycle through them.
pub const ARM_COLORS: [&str; 7] =
    ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#7f7f7f"];

pub fn arm_color(i: usize) -> &'static str {
    ARM_COLORS[i % ARM_COLORS.len()]
}

/// `label`, or its start and end around an ellipsis when longer than
/// `LABEL_CHARS`: the end tells `oracle@<run-a>` from `oracle@<run-b>`.
fn cut(label: &str) -> String {
    let chars: Vec<char> = label.chars().collect();
    if chars.len() <= LABEL_CHARS {
        return label.to_string();
    }
    let head = (LABEL_CHARS - 1) / 2;
    let tail = LABEL_CHARS - 1 - head;
    let mut out: String = chars[..head].iter().collect();
    out.push('…');
    out.extend(&chars[chars.len() - tail..]);
    out
}

fn plot_width() -> f64 {
    WIDTH - LEFT - RIGHT
}

fn open(o: &mut String, height: f64, title: &str) {
    let _ = write!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {height}\" width=\"{WIDTH}\" \
         height=\"{height}\" role=\"img\" aria-label=\"{}\" font-family=\"system-ui, sans-serif\" font-size=\"12\">",
        h(title)
    );
}

/// The x axis from 0 to `max` at the bottom of the plot, with vertical
/// grid lines up to `top`.
fn axis(o: &mut String, ticks: &[(f64, String)], max: f64, top: f64, bottom: f64) {
    for (v, label) in ticks {
        let x = LEFT + v / max * plot_width();
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{bottom}\" stroke=\"#e3e3e3\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            bottom + 14.0,
            h(label)
        );
    }
}

/// Legend items left to right from the plot's left edge, wrapping onto
/// more lines as needed. Returns the SVG and the height it takes.
fn legend(items: &[(String, &str)]) -> (String, f64) {
    let line = 18.0;
    let mut o = String::new();
    let (mut x, mut y) = (LEFT, 16.0);
    for (name, color) in items {
        let shown = cut(name);
        let width = 16.0 + 7.0 * shown.chars().count() as f64 + 18.0;
        if x > LEFT && x + width > WIDTH {
            x = LEFT;
            y += line;
        }
        let _ = write!(
            o,
            "<rect x=\"{x:.1}\" y=\"{:.1}\" width=\"12\" height=\"12\" fill=\"{color}\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" fill=\"#333\"><title>{}</title>{}</text>",
            y - 10.0,
            x + 16.0,
            y,
            h(name),
            h(&shown)
        );
        x += width;
    }
    (o, y + 10.0)
}

/// Pass rate per group (Overall, then slices): a heading per group, then
/// one labelled bar per arm with its Wilson interval as a whisker and
/// `rate (passed/n)` beside it.
pub fn rate_chart(groups: &[(String, Vec<Rate>)], arms: &[String]) -> String {
    let bar = 14.0;
    let gap = 5.0;
    let heading = 20.0;
    let group_gap = 10.0;
    let names: Vec<(String, &str)> =
        arms.iter().enumerate().map(|(i, a)| (a.clone(), arm_color(i))).collect();
    let (legend_svg, legend_h) = legend(&names);
    let top = legend_h + 8.0;
    let group_h = heading + arms.len() as f64 * (bar + gap);
    let plot_h = groups.len() as f64 * (group_h + group_gap);
    let height = top + plot_h + 24.0;
    let mut o = String::new();
    open(&mut o, height, "pass rate per group with 95% intervals");
    o.push_str(&legend_svg);
    let ticks: Vec<(f64, String)> = (0..=4).map(|i| (i as f64 * 0.25, format!("{}%", i * 25))).collect();
    axis(&mut o, &ticks, 1.0, top, top + plot_h);
    let w = plot_width();
    for (g, (label, cells)) in groups.iter().enumerate() {
        let y0 = top + g as f64 * (group_h + group_gap);
        let _ = write!(
            o,
            "<text x=\"10\" y=\"{:.1}\" font-weight=\"700\" fill=\"#222\"><title>{}</title>{}</text>",
            y0 + 14.0,
            h(label),
            h(&cut(label))
        );
        for (a, cell) in cells.iter().enumerate() {
            let y = y0 + heading + a as f64 * (bar + gap);
            let color = arm_color(a);
            let tip = format!("{label} · {}: {}", arms[a], crate::format::rate_cell(cell));
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#333\"><title>{}</title>{}</text>",
                LEFT - 10.0,
                y + bar - 3.0,
                h(&arms[a]),
                h(&cut(&arms[a]))
            );
            let (Some(rate), Some(i)) = (cell.rate, cell.interval) else {
                let _ = write!(
                    o,
                    "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#999\" font-style=\"italic\"><title>{}</title>no judged trials</text>",
                    LEFT + 6.0,
                    y + bar - 3.0,
                    h(&tip)
                );
                continue;
            };
            let bw = (rate * w).max(2.0);
            let (xl, xh) = (LEFT + i.lo * w, LEFT + i.hi * w);
            let mid = y + bar / 2.0;
            let (t, b) = (y + 2.0, y + bar - 2.0);
            let _ = write!(
                o,
                "<g><title>{}</title><rect x=\"{LEFT}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bar}\" fill=\"{color}\" \
                 fill-opacity=\"0.85\"/><path d=\"M{xl:.1} {mid:.1}H{xh:.1}M{xl:.1} {t:.1}V{b:.1}M{xh:.1} {t:.1}V{b:.1}\" \
                 stroke=\"#222\" stroke-width=\"1.5\" fill=\"none\"/><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#222\">{} \
                 ({}/{})</text></g>",
                h(&tip),
                LEFT + w + 8.0,
                y + bar - 3.0,
                pct(Some(rate)),
                cell.passed,
                cell.n
            );
        }
    }
    o.push_str("</svg>");
    o
}

/// One stacked bar per row (an arm), segments in the order of `segments`
/// (name, colour), each as long as its count; counts written inside the
/// segments wide enough to hold them.
pub fn stacked_chart(rows: &[(String, Vec<u64>)], segments: &[(&str, &str)]) -> String {
    let bar = 22.0;
    let gap = 10.0;
    let names: Vec<(String, &str)> = segments.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    let (legend_svg, legend_h) = legend(&names);
    let top = legend_h + 8.0;
    let plot_h = rows.len() as f64 * (bar + gap) - gap;
    let height = top + plot_h + 12.0;
    let mut o = String::new();
    open(&mut o, height, "trial outcomes and failure classes per agent");
    o.push_str(&legend_svg);
    let w = plot_width();
    for (r, (label, counts)) in rows.iter().enumerate() {
        let y = top + r as f64 * (bar + gap);
        let total: u64 = counts.iter().sum();
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#222\"><title>{}</title>{}</text>",
            LEFT - 10.0,
            y + bar / 2.0 + 4.0,
            h(label),
            h(&cut(label))
        );
        let mut x = LEFT;
        for (k, &n) in counts.iter().enumerate() {
            if n == 0 || total == 0 {
                continue;
            }
            let (name, color) = segments[k];
            let sw = n as f64 / total as f64 * w;
            let _ = write!(
                o,
                "<g><title>{}: {name} {n} of {total}</title><rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{sw:.1}\" \
                 height=\"{bar}\" fill=\"{color}\" stroke=\"#fff\" stroke-width=\"1\"/>",
                h(label)
            );
            if sw >= 8.0 * n.to_string().len() as f64 + 6.0 {
                // Dark text on the light segments (skipped, budget).
                let ink = if matches!(color, "#d0d0d0" | "#56B4E9") { "#222" } else { "#fff" };
                let _ = write!(
                    o,
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"{ink}\" font-weight=\"600\">{n}</text>",
                    x + sw / 2.0,
                    y + bar / 2.0 + 4.0
                );
            }
            o.push_str("</g>");
            x += sw;
        }
        let _ = write!(
            o,
            "<text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">{total} trials</text>",
            LEFT + w + 8.0,
            y + bar / 2.0 + 4.0
        );
    }
    o.push_str("</svg>");
    o
}

/// One point of the time chart: seconds, colour, and the hover text.
pub struct Dot {
    pub secs: f64,
    pub color: &'static str,
    pub tip: String,
}

/// Where a time lands on the x axis, from 0 to 1.
enum Scale {
    Linear {
        max: f64,
    },
    /// From `lo` to `hi` seconds, logarithmic.
    Log {
        lo: f64,
        hi: f64,
    },
}

impl Scale {
    fn at(&self, secs: f64) -> f64 {
        match *self {
            Scale::Linear { max } => secs.max(0.0) / max,
            Scale::Log { lo, hi } => (secs.max(lo).ln() - lo.ln()) / (hi.ln() - lo.ln()),
        }
    }
}

/// Time per trial: one row per arm, one dot per trial at its total time,
/// and a tick at the row's median. The axis is logarithmic when the times
/// span two decades or more (a 0.3 s failure beside a 3 min success).
pub fn time_chart(rows: &[(String, Vec<Dot>)], legend_items: &[(&str, &str)]) -> String {
    let row_h = 30.0;
    let names: Vec<(String, &str)> = legend_items.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    let (legend_svg, legend_h) = legend(&names);
    let top = legend_h + 8.0;
    let plot_h = rows.len() as f64 * row_h;
    let height = top + plot_h + 44.0;
    let times: Vec<f64> =
        rows.iter().flat_map(|(_, d)| d.iter().map(|d| d.secs)).filter(|s| s.is_finite()).collect();
    let (scale, ticks, note) = time_axis(&times);
    let mut o = String::new();
    open(&mut o, height, "time per trial");
    o.push_str(&legend_svg);
    let w = plot_width();
    for (v, label) in &ticks {
        let x = LEFT + scale.at(*v) * w;
        let _ = write!(
            o,
            "<line x1=\"{x:.1}\" y1=\"{top}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#e3e3e3\"/>\
             <text x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#555\">{}</text>",
            top + plot_h,
            top + plot_h + 14.0,
            h(label)
        );
    }
    let _ = write!(
        o,
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" fill=\"#777\">{note}</text>",
        LEFT + w / 2.0,
        top + plot_h + 32.0
    );
    for (r, (label, dots)) in rows.iter().enumerate() {
        let mid = top + r as f64 * row_h + row_h / 2.0;
        let _ = write!(
            o,
            "<line x1=\"{LEFT}\" y1=\"{mid:.1}\" x2=\"{:.1}\" y2=\"{mid:.1}\" stroke=\"#f0f0f0\"/>\
             <text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\" fill=\"#222\"><title>{}</title>{}</text>",
            LEFT + w,
            LEFT - 10.0,
            mid + 4.0,
            h(label),
            h(&cut(label))
        );
        let mut secs: Vec<f64> = dots.iter().map(|d| d.secs).collect();
        secs.sort_by(f64::total_cmp);
        if let Some(median) = median(&secs) {
            let x = LEFT + scale.at(median) * w;
            let _ = write!(
                o,
                "<line x1=\"{x:.1}\" y1=\"{:.1}\" x2=\"{x:.1}\" y2=\"{:.1}\" stroke=\"#222\" stroke-width=\"2\">\
                 <title>median {}</title></line><text x=\"{:.1}\" y=\"{:.1}\" fill=\"#555\">median {}</text>",
                mid - 13.0,
                mid + 13.0,
                duration(median),
                LEFT + w + 8.0,
                mid + 4.0,
                duration(median)
            );
        }
        for (i, d) in dots.iter().enumerate() {
            // A small deterministic vertical jitter keeps equal times apart.
            let jitter = [0.0, -6.0, 6.0, -3.0, 3.0, -9.0, 9.0][i % 7];
            let _ = write!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"4.5\" fill=\"{}\" fill-opacity=\"0.85\" stroke=\"#fff\" \
                 stroke-width=\"0.8\"><title>{}</title></circle>",
                LEFT + scale.at(d.secs) * w,
                mid + jitter,
                d.color,
                h(&d.tip)
            );
        }
    }
    o.push_str("</svg>");
    o
}

fn median(sorted: &[f64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2]),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) / 2.0),
    }
}

/// Decades that read well as times, for the logarithmic axis.
const LOG_TICKS: [(f64, &str); 9] = [
    (0.01, "0.01s"),
    (0.1, "0.1s"),
    (1.0, "1s"),
    (10.0, "10s"),
    (60.0, "1m"),
    (600.0, "10m"),
    (3600.0, "1h"),
    (36000.0, "10h"),
    (360000.0, "100h"),
];

/// The scale, its ticks, and a note under the axis.
fn time_axis(times: &[f64]) -> (Scale, Vec<(f64, String)>, &'static str) {
    let max = times.iter().copied().fold(0.0_f64, f64::max);
    let min_pos = times.iter().copied().filter(|&t| t > 0.0).fold(f64::INFINITY, f64::min);
    if max > 0.0 && min_pos.is_finite() && max / min_pos >= 100.0 {
        let lo = LOG_TICKS.iter().rev().find(|(v, _)| *v <= min_pos).map_or(0.01, |t| t.0);
        let hi = LOG_TICKS.iter().find(|(v, _)| *v >= max).map_or(360000.0, |t| t.0);
        let ticks = LOG_TICKS
            .iter()
            .filter(|(v, _)| *v >= lo && *v <= hi)
            .map(|(v, l)| (*v, l.to_string()))
            .collect();
        return (Scale::Log { lo, hi }, ticks, "seconds per trial, logarithmic scale");
    }
    let (ticks, top) = time_ticks(max);
    (Scale::Linear { max: top }, ticks, "seconds per trial")
}

/// Ticks at round steps of seconds or minutes, and the axis maximum they
/// reach.
fn time_ticks(max: f64) -> (Vec<(f64, String)>, f64) {
    let max = if max.is_finite() && max > 0.0 { max } else { 1.0 };
    let steps = [
        0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0,
        7200.0, 14400.0, 28800.0, 86400.0,
    ];
    let step = steps.iter().copied().find(|s| max / s <= 6.0).unwrap_or(86400.0);
    let top = (max / step).ceil() * step;
    let ticks = (0..=((top / step).round() as u64)).map(|i| {
        let v = i as f64 * step;
        let label = if step < 1.0 {
            format!("{v:.1}s")
        } else if v < 60.0 || step < 60.0 && v < 600.0 {
            format!("{v:.0}s")
        } else {
            duration(v)
        };
        (v, label)
    });
    (ticks.collect(), top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_ticks_are_round() {
        let (ticks, top) = time_ticks(78.0);
        assert_eq!(top, 90.0);
        assert_eq!(
            ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["0s", "15s", "30s", "45s", "60s", "75s", "90s"]
        );
        let (ticks, top) = time_ticks(184.0);
        assert_eq!(top, 240.0);
        assert_eq!(ticks.last().unwrap().1, "4m00s");
        let (_, top) = time_ticks(0.0);
        assert_eq!(top, 1.0);
    }

    #[test]
    fn wide_spans_of_time_get_a_log_axis() {
        let (scale, ticks, _) = time_axis(&[0.3, 1.2, 184.0]);
        assert!(matches!(scale, Scale::Log { lo, hi } if lo == 0.1 && hi == 600.0));
        assert_eq!(
            ticks.iter().map(|t| t.1.as_str()).collect::<Vec<_>>(),
            ["0.1s", "1s", "10s", "1m", "10m"]
        );
        assert!((scale.at(0.1) - 0.0).abs() < 1e-12 && (scale.at(600.0) - 1.0).abs() < 1e-12);
        let (scale, _, _) = time_axis(&[10.0, 78.0]);
        assert!(matches!(scale, Scale::Linear { max } if max == 90.0));
    }

    #[test]
    fn labels_are_escaped_and_cut() {
        let groups = vec![("<b>Overall</b>".to_string(), vec![Rate::default()])];
        let svg = rate_chart(&groups, &["a<script>alert(1)</script>".to_string()]);
        assert!(!svg.contains("<script"), "{svg}");
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("no judged trials"));
        assert_eq!(cut("abcdefghijklmnopqrstuvwxyz0123"), "abcdefghijk…stuvwxyz0123");
        assert_eq!(cut("oracle"), "oracle");
    }
}

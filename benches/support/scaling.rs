//! The scaling curve of the informer bench: sync time, peak memory and CPU against the
//! number of pods, saved as CSV, fitted, and drawn as the SVG the README shows.
//!
//! `cargo bench --bench informer -- --curve` measures and draws; `-- --draw [file.csv]`
//! redraws from a saved CSV. The SVG is written by hand (no plotting dependency): two panels
//! with linear axes, so a straight line is what linear growth looks like.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// The sizes of the curve.
pub const SIZES: [usize; 5] = [1_000, 10_000, 50_000, 100_000, 200_000];
/// Where the curve's figures are kept (next to the bench, committed).
pub const CSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/scaling.csv");
/// The picture the README shows.
pub const SVG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/benches/scaling.svg");
/// Fits use the sizes from here up: below it, fixed costs (threads, buffers, the binary's
/// own pages) are a visible part of the figures and bend a power-law fit.
const FIT_FROM: usize = 10_000;

/// One client run of the curve.
#[derive(Clone, Debug)]
pub struct Row {
    pub pods: usize,
    pub kind: String,
    pub sync_seconds: f64,
    pub peak_mib: f64,
    pub cpu_seconds: f64,
}

pub fn to_csv(rows: &[Row]) -> String {
    let mut out = String::from("pods,type,sync_seconds,peak_mib,cpu_seconds\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},{:.4},{:.1},{:.2}",
            r.pods, r.kind, r.sync_seconds, r.peak_mib, r.cpu_seconds
        );
    }
    out
}

pub fn parse_csv(text: &str) -> Vec<Row> {
    text.lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let number = |i: usize| -> f64 {
                f.get(i)
                    .and_then(|x| x.trim().parse().ok())
                    .unwrap_or_else(|| panic!("bad CSV line {l:?}"))
            };
            Row {
                pods: number(0) as usize,
                kind: f[1].trim().to_owned(),
                sync_seconds: number(2),
                peak_mib: number(3),
                cpu_seconds: number(4),
            }
        })
        .collect()
}

/// The rows of each kind, in first-seen order of kinds, sorted by size.
fn by_kind(rows: &[Row]) -> Vec<(String, Vec<Row>)> {
    let mut order = Vec::new();
    let mut groups: BTreeMap<String, Vec<Row>> = BTreeMap::new();
    for r in rows {
        if !groups.contains_key(&r.kind) {
            order.push(r.kind.clone());
        }
        groups.entry(r.kind.clone()).or_default().push(r.clone());
    }
    order
        .into_iter()
        .map(|k| {
            let mut v = groups.remove(&k).unwrap_or_default();
            v.sort_by_key(|r| r.pods);
            (k, v)
        })
        .collect()
}

/// The exponent `k` of the least-squares fit `y = a * n^k` (a line in log-log space), over
/// the sizes from `FIT_FROM` up; `None` with fewer than two such points.
pub fn exponent(points: &[(usize, f64)]) -> Option<f64> {
    let logs: Vec<(f64, f64)> = points
        .iter()
        .filter(|(n, y)| *n >= FIT_FROM && *y > 0.0)
        .map(|(n, y)| ((*n as f64).ln(), y.ln()))
        .collect();
    if logs.len() < 2 {
        return None;
    }
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let sxy: f64 = logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let sxx: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    (sxx > 0.0).then(|| sxy / sxx)
}

fn show(k: Option<f64>) -> String {
    k.map_or("-".into(), |k| format!("{k:.2}"))
}

/// Prints each kind's growth exponents and per-pod figures at the largest size.
pub fn report(rows: &[Row]) {
    println!(
        "growth exponents (fit y = a*n^k over {FIT_FROM}+ pods; 1.00 is linear), and per pod at the largest size:"
    );
    println!(
        "{:>15} {:>8} {:>8} {:>8} {:>14} {:>14}",
        "type", "k sync", "k peak", "k CPU", "µs/pod sync", "KiB/pod peak"
    );
    for (kind, v) in by_kind(rows) {
        let pick = |f: fn(&Row) -> f64| v.iter().map(|r| (r.pods, f(r))).collect::<Vec<_>>();
        let last = v.last().expect("a group has rows");
        println!(
            "{:>15} {:>8} {:>8} {:>8} {:>14.2} {:>14.2}",
            kind,
            show(exponent(&pick(|r| r.sync_seconds))),
            show(exponent(&pick(|r| r.peak_mib))),
            show(exponent(&pick(|r| r.cpu_seconds))),
            last.sync_seconds * 1e6 / last.pods as f64,
            last.peak_mib * 1024.0 / last.pods as f64,
        );
    }
}

/// A tick label: at most three decimals, no float noise (`1.2`, not `1.2000000000000002`).
fn tick(value: f64) -> String {
    let text = format!("{value:.3}");
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

const COLOURS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

/// A "nice" upper bound for an axis: 1, 2 or 5 times a power of ten, at least `max`.
fn nice_ceiling(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let power = 10f64.powf(max.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|v| *v >= max)
        .unwrap_or(10.0 * power)
}

/// One panel: `value` of each kind against pods, linear axes, at `(x0, y0)`.
fn panel(
    svg: &mut String,
    groups: &[(String, Vec<Row>)],
    (x0, y0): (f64, f64),
    title: &str,
    value: fn(&Row) -> f64,
) {
    let (w, h) = (380.0, 250.0);
    let max_n = groups
        .iter()
        .flat_map(|(_, v)| v.iter().map(|r| r.pods))
        .max()
        .unwrap_or(1) as f64;
    let max_y = groups
        .iter()
        .flat_map(|(_, v)| v.iter().map(value))
        .fold(0.0, f64::max);
    let (x_top, y_top) = (nice_ceiling(max_n), nice_ceiling(max_y));
    let px = |n: f64| x0 + n / x_top * w;
    let py = |y: f64| y0 + h - y / y_top * h;
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="{}" font-size="15" font-weight="bold">{title}</text>"##,
        x0,
        y0 - 12.0
    );
    for i in 0..=5 {
        let (fx, fy) = (i as f64 / 5.0 * x_top, i as f64 / 5.0 * y_top);
        let _ = writeln!(
            svg,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x2}" y2="{y:.1}" stroke="#ddd"/><text x="{tx}" y="{ty:.1}" font-size="11" text-anchor="end">{fy}</text>"##,
            y = py(fy),
            x2 = x0 + w,
            tx = x0 - 6.0,
            ty = py(fy) + 4.0,
            fy = tick(fy),
        );
        let _ = writeln!(
            svg,
            r##"<text x="{x:.1}" y="{y}" font-size="11" text-anchor="middle">{k}k</text>"##,
            x = px(fx),
            y = y0 + h + 16.0,
            k = tick(fx / 1000.0),
        );
    }
    let _ = writeln!(
        svg,
        r##"<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#444"/><text x="{x:.1}" y="{y}" font-size="12" text-anchor="middle">pods in the cache</text>"##,
        x = x0 + w / 2.0,
        y = y0 + h + 34.0
    );
    for (i, (kind, v)) in groups.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let points: Vec<String> = v
            .iter()
            .map(|r| format!("{:.1},{:.1}", px(r.pods as f64), py(value(r))))
            .collect();
        let _ = writeln!(
            svg,
            r##"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="2"/>"##,
            points.join(" ")
        );
        for r in v {
            let _ = writeln!(
                svg,
                r##"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{colour}"/>"##,
                px(r.pods as f64),
                py(value(r))
            );
        }
        let k = exponent(&v.iter().map(|r| (r.pods, value(r))).collect::<Vec<_>>());
        let _ = writeln!(
            svg,
            r##"<rect x="{x}" y="{y}" width="12" height="12" fill="{colour}"/><text x="{tx}" y="{ty}" font-size="12">{kind} (k = {k})</text>"##,
            x = x0 + 10.0,
            y = y0 + 10.0 + 18.0 * i as f64,
            tx = x0 + 28.0,
            ty = y0 + 20.0 + 18.0 * i as f64,
            k = show(k),
        );
    }
}

/// Draws sync time and peak memory against pods, one line per kind.
pub fn write_svg(rows: &[Row], path: &str) {
    let groups = by_kind(rows);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="920" height="360" viewBox="0 0 920 360" font-family="sans-serif">"##
    );
    let _ = writeln!(svg, r##"<rect width="920" height="360" fill="white"/>"##);
    panel(&mut svg, &groups, (60.0, 40.0), "initial sync (s)", |r| {
        r.sync_seconds
    });
    panel(&mut svg, &groups, (520.0, 40.0), "peak memory (MiB)", |r| {
        r.peak_mib
    });
    let _ = writeln!(
        svg,
        r##"<text x="460" y="352" font-size="11" text-anchor="middle" fill="#555">k: exponent of a fit y = a·n^k over {FIT_FROM}+ pods (1 is linear). Redraw: cargo bench --bench informer -- --curve</text>"##
    );
    svg.push_str("</svg>\n");
    std::fs::write(path, svg).unwrap_or_else(|e| panic!("{path}: {e}"));
}

//! `tcc profile --report=FILE.html`: the calibration profile as one
//! self-contained HTML page a person can read (inline SVG and a few lines
//! of inline script; nothing is fetched from the network).
//!
//! A summary comes first: the model, samples and bins, how many tensors
//! hold non-finite values, have outliers, saturate or are constant, and
//! the tensors whose outliers stretch their range the most. Then one row
//! per tensor, in the profile's order (sortable by any column): its
//! range, the 0.01 % and 99.99 % percentiles read from the histogram,
//! their ratio to the range, its marks, and the histogram itself (log
//! scale, percentiles and zero drawn in).
//!
//! The marks say what matters for int8 quantization:
//! - *non-finite*: NaNs or infinities were seen (not binned);
//! - *outliers*: the largest magnitude is at least [`OUTLIER_RATIO`]
//!   times the 99.99th percentile's, so min/max calibration would spend
//!   two or more of int8's bits on a few values (percentile or entropy
//!   calibration suits it better);
//! - *saturated*: at least [`SATURATION_SHARE`] of the values sit in the
//!   first or last bin, far more than in the bins beside it (a clip, a
//!   ReLU6, a sigmoid's flat end: the range end is a hard limit), unless
//!   that end is 0: then it is *zeros* (a ReLU's, exact in int8);
//! - *constant*: every value was the same.

use std::fmt::Write as _;

use super::profile::{Profile, TensorRange};

/// `|max| / |p99.99|` from which a tensor is marked as having outliers.
pub const OUTLIER_RATIO: f64 = 4.0;
/// The share of a tensor's values in an end bin from which it is marked
/// saturated (when that bin also holds far more than its neighbours).
pub const SATURATION_SHARE: f64 = 0.01;
/// Columns of a drawn histogram (the profile's bins are summed into them).
const COLUMNS: usize = 128;

/// What the page says about one tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct TensorSummary {
    /// Finite values counted in the histogram.
    pub count: u64,
    /// The 0.01 % and 99.99 % percentiles (from the bins).
    pub p_low: f64,
    pub p_high: f64,
    /// Largest magnitude over the 99.99th percentile's (1 when there are
    /// no outliers; infinite when the percentiles are 0 but not the range).
    pub outlier_ratio: f64,
    /// Share of the values in the first and in the last bin when that
    /// end saturates, else `None`.
    pub saturated_low: Option<f64>,
    pub saturated_high: Option<f64>,
    /// The share of the values piled at an end of the range that is 0
    /// (a ReLU's zeros), which is not saturation.
    pub zeros: Option<f64>,
}

impl TensorSummary {
    pub fn of(t: &TensorRange) -> Self {
        let count: u64 = t.histogram.iter().sum();
        let p_low = percentile(t, 1e-4);
        let p_high = percentile(t, 1.0 - 1e-4);
        let magnitude = (t.min as f64).abs().max((t.max as f64).abs());
        let typical = p_low.abs().max(p_high.abs());
        let outlier_ratio = if magnitude == 0.0 {
            1.0
        } else if typical == 0.0 {
            f64::INFINITY
        } else {
            magnitude / typical
        };
        let bins = t.histogram.len();
        let end_share = |end: usize, inward: &mut dyn Iterator<Item = usize>| -> Option<f64> {
            if count == 0 || bins < 3 || t.max <= t.min {
                return None;
            }
            let at_end = t.histogram[end] as f64;
            let share = at_end / count as f64;
            let near: Vec<f64> = inward.take(8).map(|i| t.histogram[i] as f64).collect();
            let mean = near.iter().sum::<f64>() / near.len().max(1) as f64;
            (share >= SATURATION_SHARE && at_end > 10.0 * mean).then_some(share)
        };
        let low = end_share(0, &mut (1..bins));
        let high = end_share(
            bins.saturating_sub(1),
            &mut (0..bins.saturating_sub(1)).rev(),
        );
        // A pile at an end that is zero is a ReLU's (or a mask's) zeros:
        // exact in int8, not a clip of the range.
        let (zeros_low, zeros_high) = (t.min == 0.0, t.max == 0.0);
        TensorSummary {
            count,
            p_low,
            p_high,
            outlier_ratio,
            saturated_low: low.filter(|_| !zeros_low),
            saturated_high: high.filter(|_| !zeros_high),
            zeros: if zeros_low {
                low
            } else if zeros_high {
                high
            } else {
                None
            },
        }
    }

    /// The marks of a tensor, as (css class, text).
    pub fn marks(&self, t: &TensorRange) -> Vec<(&'static str, String)> {
        let mut marks = Vec::new();
        if t.nonfinite > 0 {
            marks.push(("bad", format!("non-finite: {}", t.nonfinite)));
        }
        if self.count > 0 && t.min == t.max {
            marks.push(("info", "constant".to_string()));
        } else if self.outlier_ratio >= OUTLIER_RATIO {
            marks.push((
                "warn",
                format!(
                    "outliers: |max| {} the 99.99th percentile",
                    if self.outlier_ratio.is_finite() {
                        format!("{:.1}x", self.outlier_ratio)
                    } else {
                        "far beyond".to_string()
                    }
                ),
            ));
        }
        if let Some(share) = self.saturated_low {
            marks.push(("sat", format!("saturated at min: {:.1} %", share * 100.0)));
        }
        if let Some(share) = self.saturated_high {
            marks.push(("sat", format!("saturated at max: {:.1} %", share * 100.0)));
        }
        if let Some(share) = self.zeros {
            marks.push(("info", format!("zeros: {:.1} %", share * 100.0)));
        }
        if self.count == 0 {
            marks.push(("bad", "no finite values".to_string()));
        }
        marks
    }
}

/// The value below which a share `q` of the tensor's finite values lie,
/// read from its histogram (linear inside a bin).
pub fn percentile(t: &TensorRange, q: f64) -> f64 {
    let count: u64 = t.histogram.iter().sum();
    let (min, max) = (t.min as f64, t.max as f64);
    if count == 0 || max <= min {
        return min;
    }
    let bins = t.histogram.len() as f64;
    let target = q * count as f64;
    let mut below = 0.0;
    for (i, &c) in t.histogram.iter().enumerate() {
        let c = c as f64;
        if c > 0.0 && below + c >= target {
            let within = ((target - below) / c).clamp(0.0, 1.0);
            return min + (i as f64 + within) / bins * (max - min);
        }
        below += c;
    }
    max
}

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as the page shows it: 4 significant digits.
fn num(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else {
            "∞".into()
        };
    }
    if v == 0.0 {
        return "0".into();
    }
    let magnitude = v.abs();
    if (1e-3..1e5).contains(&magnitude) {
        let digits = (3 - magnitude.log10().floor() as i32).max(0) as usize;
        format!("{v:.digits$}")
    } else {
        format!("{v:.3e}")
    }
}

/// `v` as a sort key attribute (finite, so that the script can compare).
fn key(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else if v > 0.0 {
        "1e308".into()
    } else {
        "-1e308".into()
    }
}

/// The inline SVG of a tensor's histogram: bars on a log scale, the
/// percentiles dashed, zero solid.
fn histogram_svg(t: &TensorRange, s: &TensorSummary) -> String {
    let (width, height) = (COLUMNS as f64 * 3.0, 56.0);
    let bins = t.histogram.len().max(1);
    let columns = COLUMNS.min(bins);
    let mut sums = vec![0u64; columns];
    for (i, &c) in t.histogram.iter().enumerate() {
        sums[i * columns / bins] += c;
    }
    let top = sums.iter().copied().max().unwrap_or(0);
    let scale = ((top as f64) + 1.0).ln().max(1e-9);
    let step = width / columns as f64;
    let mut path = format!("M0 {height}");
    for (i, &c) in sums.iter().enumerate() {
        let h = if c == 0 {
            0.0
        } else {
            // At least a pixel for a non-empty column.
            (((c as f64) + 1.0).ln() / scale * (height - 2.0)).max(1.0)
        };
        let y = height - h;
        let _ = write!(
            path,
            " L{:.1} {y:.1} L{:.1} {y:.1}",
            i as f64 * step,
            (i + 1) as f64 * step
        );
    }
    let _ = write!(path, " L{width} {height} Z");
    let (min, max) = (t.min as f64, t.max as f64);
    let x_of = |v: f64| {
        if max > min {
            ((v - min) / (max - min) * width).clamp(0.0, width)
        } else {
            0.0
        }
    };
    let mut svg = format!(
        "<svg class=\"hist\" width=\"{width}\" height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\"><title>{} values from {} to {}</title><path d=\"{path}\"/>",
        s.count,
        num(min),
        num(max)
    );
    if min < 0.0 && max > 0.0 {
        let x = x_of(0.0);
        let _ = write!(
            svg,
            "<line class=\"zero\" x1=\"{x:.1}\" y1=\"0\" x2=\"{x:.1}\" y2=\"{height}\"/>"
        );
    }
    if max > min && s.count > 0 {
        for p in [s.p_low, s.p_high] {
            let x = x_of(p);
            let _ = write!(
                svg,
                "<line class=\"pct\" x1=\"{x:.1}\" y1=\"0\" x2=\"{x:.1}\" y2=\"{height}\"/>"
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

const STYLE: &str = "
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #222; }
h1 { font-size: 1.4em; margin-bottom: 0.2em; }
.summary { display: flex; gap: 2.5em; flex-wrap: wrap; margin: 1em 0; }
.summary dl { display: grid; grid-template-columns: auto auto; gap: 0.2em 1em; margin: 0; }
.summary dt { color: #666; }
.summary dd { margin: 0; font-weight: 600; }
table { border-collapse: collapse; }
th, td { padding: 3px 8px; border-bottom: 1px solid #e4e4e4; text-align: right; vertical-align: middle; }
th { position: sticky; top: 0; background: #f6f6f6; cursor: pointer; user-select: none; }
th.sorted-up::after { content: ' \\25B2'; } th.sorted-down::after { content: ' \\25BC'; }
td.name, th.name { text-align: left; max-width: 28em; overflow-wrap: anywhere; }
td.name small { color: #777; }
td.marks, th.marks, th.hist { text-align: left; max-width: 18em; }
.mark { display: inline-block; border-radius: 3px; padding: 0 5px; margin: 1px; font-size: 12px; }
.mark.bad { background: #fdd; color: #900; } .mark.warn { background: #fea; color: #740; }
.mark.sat { background: #def; color: #036; } .mark.info { background: #eee; color: #555; }
svg.hist path { fill: #4a7fb5; } svg.hist { background: #fafafa; display: block; }
svg.hist line.zero { stroke: #222; stroke-width: 1; }
svg.hist line.pct { stroke: #d33; stroke-width: 1; stroke-dasharray: 3 2; }
.legend { color: #555; font-size: 13px; max-width: 60em; }
";

/// Sorts the table by the clicked column (numbers by `data-v`, else text).
const SCRIPT: &str = "
document.querySelectorAll('th[data-col]').forEach(function (th) {
  th.addEventListener('click', function () {
    var col = Number(th.dataset.col), body = document.querySelector('tbody');
    var up = !th.classList.contains('sorted-up');
    document.querySelectorAll('th').forEach(function (h) { h.classList.remove('sorted-up', 'sorted-down'); });
    th.classList.add(up ? 'sorted-up' : 'sorted-down');
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col], y = b.cells[col], r;
      if (x.dataset.v !== undefined) { r = Number(x.dataset.v) - Number(y.dataset.v); }
      else { r = x.textContent.localeCompare(y.textContent); }
      return up ? r : -r;
    });
    rows.forEach(function (row) { body.appendChild(row); });
  });
});
";

/// The page for `profile`.
pub fn render(profile: &Profile) -> String {
    let summaries: Vec<TensorSummary> = profile.tensors.iter().map(TensorSummary::of).collect();
    let bins = profile.tensors.first().map_or(0, |t| t.histogram.len());
    let count = |f: &dyn Fn(&TensorRange, &TensorSummary) -> bool| {
        profile
            .tensors
            .iter()
            .zip(&summaries)
            .filter(|(t, s)| f(t, s))
            .count()
    };
    let nonfinite = count(&|t, _| t.nonfinite > 0);
    let outliers = count(&|t, s| t.min != t.max && s.outlier_ratio >= OUTLIER_RATIO);
    let saturated = count(&|_, s| s.saturated_low.is_some() || s.saturated_high.is_some());
    let constant = count(&|t, s| s.count > 0 && t.min == t.max);
    let values: u64 = summaries.iter().map(|s| s.count).sum();
    let title = format!("tcc profile: {}", profile.model);
    let mut html = String::new();
    let _ = write!(
        html,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\"/>\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        escape(&title),
        escape(&title)
    );
    // The summary.
    html.push_str("<div class=\"summary\">\n<dl>\n");
    let mut item = |label: &str, value: String| {
        let _ = writeln!(html, "<dt>{}</dt><dd>{}</dd>", escape(label), value);
    };
    item("model", escape(&profile.model));
    item("samples", profile.samples.to_string());
    if let Some(inputs) = &profile.inputs {
        item("from", escape(inputs));
    }
    item("tensors", profile.tensors.len().to_string());
    item("bins per tensor", bins.to_string());
    item("finite values seen", values.to_string());
    html.push_str("</dl>\n<dl>\n");
    let mut item = |label: &str, n: usize, class: &str| {
        let _ = writeln!(
            html,
            "<dt>{}</dt><dd><span class=\"mark {class}\">{n}</span></dd>",
            escape(label)
        );
    };
    item("with non-finite values", nonfinite, "bad");
    item("with outliers", outliers, "warn");
    item("saturated", saturated, "sat");
    item("constant", constant, "info");
    html.push_str("</dl>\n");
    // The tensors whose outliers stretch the range most.
    let mut worst: Vec<usize> = (0..profile.tensors.len())
        .filter(|&i| {
            profile.tensors[i].min != profile.tensors[i].max
                && summaries[i].outlier_ratio >= OUTLIER_RATIO
        })
        .collect();
    worst.sort_by(|&a, &b| {
        summaries[b]
            .outlier_ratio
            .total_cmp(&summaries[a].outlier_ratio)
    });
    if !worst.is_empty() {
        html.push_str("<div>\n<strong>Widest outliers</strong>\n<ol>\n");
        for &i in worst.iter().take(10) {
            let s = &summaries[i];
            let _ = writeln!(
                html,
                "<li><a href=\"#t{i}\">{}</a>: |max| {} the 99.99th percentile</li>",
                escape(&profile.tensors[i].name),
                if s.outlier_ratio.is_finite() {
                    format!("{:.1}x", s.outlier_ratio)
                } else {
                    "far beyond".into()
                }
            );
        }
        html.push_str("</ol>\n</div>\n");
    }
    html.push_str("</div>\n");
    let _ = writeln!(
        html,
        "<p class=\"legend\">One row per float tensor, in the profile's order (click a column to sort). \
         Histograms: {bins} bins from min to max summed into at most {COLUMNS} columns, heights on a log scale; \
         the dashed red lines are the 0.01 % and 99.99 % percentiles, the black line zero. \
         Marks: <span class=\"mark warn\">outliers</span> when |max| is {OUTLIER_RATIO}x the 99.99th percentile or more \
         (min/max calibration would waste int8 range on a few values); \
         <span class=\"mark sat\">saturated</span> when {}&#160;% or more of the values sit in an end bin, \
         far more than beside it (a clip or a flat activation), unless that end is 0 (<span class=\"mark info\">zeros</span>: a ReLU's, exact in int8); \
         <span class=\"mark bad\">non-finite</span> NaNs or infinities (not binned).</p>",
        SATURATION_SHARE * 100.0
    );
    // The table.
    html.push_str("<table>\n<thead>\n<tr>");
    for (i, (label, class)) in [
        ("#", ""),
        ("tensor", "name"),
        ("min", ""),
        ("max", ""),
        ("p0.01 %", ""),
        ("p99.99 %", ""),
        ("|max| / p99.99", ""),
        ("marks", "marks"),
        ("histogram", "hist"),
    ]
    .iter()
    .enumerate()
    {
        let sortable = if *label == "histogram" {
            String::new()
        } else {
            format!(" data-col=\"{i}\"")
        };
        let class = if class.is_empty() {
            String::new()
        } else {
            format!(" class=\"{class}\"")
        };
        let _ = write!(html, "<th{class}{sortable}>{}</th>", escape(label));
    }
    html.push_str("</tr>\n</thead>\n<tbody>\n");
    for (i, (t, s)) in profile.tensors.iter().zip(&summaries).enumerate() {
        let shape = t
            .shape
            .iter()
            .map(|d| d.to_string())
            .collect::<Vec<_>>()
            .join("x");
        let marks = s.marks(t);
        let severity = marks
            .iter()
            .map(|(class, _)| match *class {
                "bad" => 3,
                "warn" => 2,
                "sat" => 1,
                _ => 0,
            })
            .max()
            .unwrap_or(0);
        let _ = write!(
            html,
            "<tr id=\"t{i}\"><td data-v=\"{i}\">{i}</td><td class=\"name\">{}<br/><small>{}</small></td>",
            escape(&t.name),
            escape(&shape)
        );
        for v in [t.min as f64, t.max as f64, s.p_low, s.p_high] {
            let _ = write!(html, "<td data-v=\"{}\">{}</td>", key(v), num(v));
        }
        let ratio = if t.min == t.max { 1.0 } else { s.outlier_ratio };
        let _ = write!(
            html,
            "<td data-v=\"{}\">{}</td><td class=\"marks\" data-v=\"{severity}\">",
            key(ratio),
            if ratio.is_finite() {
                format!("{ratio:.2}")
            } else {
                "∞".into()
            }
        );
        for (class, text) in &marks {
            let _ = write!(html, "<span class=\"mark {class}\">{}</span>", escape(text));
        }
        let _ = writeln!(html, "</td><td>{}</td></tr>", histogram_svg(t, s));
    }
    html.push_str("</tbody>\n</table>\n");
    let _ = write!(html, "<script>{SCRIPT}</script>\n</body>\n</html>\n");
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tensor(min: f32, max: f32, histogram: Vec<u64>) -> TensorRange {
        TensorRange {
            name: "t".into(),
            shape: vec![4],
            min,
            max,
            nonfinite: 0,
            histogram,
        }
    }

    #[test]
    fn percentiles_come_from_the_bins() {
        // 100 values evenly over [0, 10): the 50th percentile is 5.
        let t = tensor(0.0, 10.0, vec![10; 10]);
        assert!((percentile(&t, 0.5) - 5.0).abs() < 1e-9);
        assert!((percentile(&t, 1.0) - 10.0).abs() < 1e-9);
        assert_eq!(percentile(&tensor(3.0, 3.0, vec![7, 0]), 0.5), 3.0);
    }

    #[test]
    fn outliers_and_saturation_are_marked() {
        // 10,000 values in [-1, 0.01], one at 100: outliers.
        let mut bins = vec![0u64; 1000];
        bins[..10].iter_mut().for_each(|b| *b = 1000);
        bins[999] = 1;
        let t = tensor(-1.0, 100.0, bins);
        let s = TensorSummary::of(&t);
        assert!(s.outlier_ratio > 50.0, "{s:?}");
        assert!(
            s.marks(&t)
                .iter()
                .any(|(c, m)| *c == "warn" && m.starts_with("outliers"))
        );
        assert_eq!(s.saturated_high, None);
        // A clip at 6: a fifth of the values in the last bin.
        let mut bins = vec![10u64; 100];
        bins[99] = 250;
        let t = tensor(0.0, 6.0, bins);
        let s = TensorSummary::of(&t);
        assert!(s.saturated_high.is_some_and(|x| x > 0.2), "{s:?}");
        assert!(s.outlier_ratio < OUTLIER_RATIO);
        // A ReLU's zeros pile at min = 0: not saturation.
        let mut bins = vec![10u64; 100];
        bins[0] = 500;
        let t = tensor(0.0, 6.0, bins);
        let s = TensorSummary::of(&t);
        assert_eq!((s.saturated_low, s.saturated_high), (None, None));
        assert!(s.zeros.is_some_and(|x| x > 0.3), "{s:?}");
        assert_eq!(s.marks(&t)[0].0, "info");
        // Evenly spread values: no marks.
        let t = tensor(-1.0, 1.0, vec![5; 64]);
        assert!(TensorSummary::of(&t).marks(&t).is_empty());
    }

    #[test]
    fn names_are_escaped() {
        let mut t = tensor(0.0, 1.0, vec![1, 2]);
        t.name = "a<b>&\"c\"".into();
        let page = render(&Profile {
            format: "tcc-profile".into(),
            version: 1,
            model: "m.onnx".into(),
            samples: 1,
            tensors: vec![t],
            inputs: None,
        });
        assert!(page.contains("a&lt;b&gt;&amp;&quot;c&quot;"));
        assert!(!page.contains("a<b>"));
    }
}

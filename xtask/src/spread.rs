//! The median of a workload's per-round ratios and their spread, and the
//! rule that says when the spread is too wide to judge (D51: interleaved ratios).
//!
//! Every timed ratio of the bench comes from rounds in which ours and its
//! baseline ran in turns; a probe prints the per-round ratios as `ratios`.
//! Here they become `ratio` (their median), `ratio_q1`/`ratio_q3` (the
//! middle half of the rounds), `ratio_min`/`ratio_max`, `spread` (the
//! middle half's width over the median) and `too_wide`.

use serde_json::{Value, json};

/// The widest middle half, over the median, a ratio may have and still be
/// judged. With n rounds the median's standard error is about
/// 0.93 × IQR / √n (normal rounds: σ ≈ IQR / 1.35, and the median's error
/// is 1.25 σ / √n), so at this width the median of 15 rounds is good to
/// about ±5% and two runs whose medians differ by more than ~15% differ
/// in the code, not the load — finer than the margins of the targets and
/// than the ±15% run-to-run drift the separate criterion windows showed.
pub(crate) const TOO_WIDE: f64 = 0.20;

/// Fewer rounds than this leave no middle half worth the name.
pub(crate) const FEWEST_ROUNDS: usize = 5;

/// The `p`-quantile of sorted `samples`, interpolating between neighbours.
fn quantile(sorted: &[f64], p: f64) -> f64 {
    match sorted.len() {
        0 => f64::NAN,
        n => {
            let at = p * (n - 1) as f64;
            let (low, high) = (at.floor() as usize, at.ceil() as usize);
            sorted[low] + (sorted[high] - sorted[low]) * (at - low as f64)
        }
    }
}

/// Replaces a row's `ratio` by the median of its `ratios` and adds the
/// spread fields; returns the line to print when the spread is too wide to
/// judge. Rows without `ratios` (sizes, rates) are left as they are. A row
/// with `"every_round": true` is a deadline (each round's time against an
/// absolute limit, as the inspector's rows): its `ratio` is its slowest
/// round, which no spread makes uncertain.
pub(crate) fn annotate(row: &mut Value) -> Option<String> {
    let mut ratios: Vec<f64> = row["ratios"]
        .as_array()?
        .iter()
        .filter_map(Value::as_f64)
        .filter(|r| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let median = quantile(&ratios, 0.5);
    let (q1, q3) = (quantile(&ratios, 0.25), quantile(&ratios, 0.75));
    let (min, max) = (ratios[0], ratios[ratios.len() - 1]);
    let spread = (q3 - q1) / median;
    let too_few = ratios.len() < FEWEST_ROUNDS;
    let deadline = row["every_round"] == json!(true);
    let too_wide = too_few || (spread > TOO_WIDE && !deadline);
    let judged = if deadline { max } else { median };
    let fields = row.as_object_mut()?;
    for (key, value) in [
        ("ratio", json!(judged)),
        ("ratio_median", json!(median)),
        ("ratio_q1", json!(q1)),
        ("ratio_q3", json!(q3)),
        ("ratio_min", json!(min)),
        ("ratio_max", json!(max)),
        ("spread", json!(spread)),
        ("too_wide", json!(too_wide)),
    ] {
        fields.insert(key.into(), value);
    }
    let workload = row["workload"].as_str().unwrap_or_default();
    if too_few {
        Some(format!(
            "{workload}: {} rounds, fewer than {FEWEST_ROUNDS}: too few to judge",
            ratios.len()
        ))
    } else if too_wide {
        Some(format!(
            "{workload}: spread {q1:.3}–{q3:.3} (middle half of {} rounds; all {min:.3}–{max:.3}) \
             is {:.0}% of the median {median:.3}, over {:.0}%: too wide to judge",
            ratios.len(),
            spread * 100.0,
            TOO_WIDE * 100.0
        ))
    } else {
        None
    }
}

/// `q1–q3` of a row with a spread, for the table.
pub(crate) fn shown(row: &Value) -> String {
    match (row["ratio_q1"].as_f64(), row["ratio_q3"].as_f64()) {
        (Some(q1), Some(q3)) => {
            let mark = if row["too_wide"].as_bool() == Some(true) {
                " !"
            } else {
                ""
            };
            format!("{q1:.3}–{q3:.3}{mark}")
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tight_spread_is_judged_and_a_wide_one_is_not() {
        let mut tight = json!({"workload": "W", "ratios": [1.0, 1.02, 0.98, 1.01, 0.99, 1.0]});
        assert_eq!(annotate(&mut tight), None);
        assert!((tight["ratio"].as_f64().unwrap_or_default() - 1.0).abs() < 1e-9);
        let mut wide = json!({"workload": "W2", "ratios": [0.9, 1.3, 2.3, 1.1, 2.0, 1.6]});
        let line = annotate(&mut wide).unwrap_or_default();
        assert!(line.contains("too wide to judge"), "{line}");
        assert_eq!(wide["too_wide"], json!(true));
        let mut few = json!({"workload": "W", "ratios": [1.0, 1.0]});
        assert!(annotate(&mut few).is_some_and(|l| l.contains("too few")));
    }

    #[test]
    fn a_deadline_is_judged_by_its_slowest_round_whatever_its_spread() {
        let mut deadline = json!({"workload": "D", "every_round": true,
            "ratios": [0.05, 0.1, 0.3, 0.12, 0.09, 0.2]});
        assert_eq!(annotate(&mut deadline), None);
        assert_eq!(deadline["ratio"], json!(0.3));
        assert_eq!(deadline["too_wide"], json!(false));
        let mut few = json!({"workload": "D", "every_round": true, "ratios": [0.1, 0.2]});
        assert!(annotate(&mut few).is_some_and(|l| l.contains("too few")));
    }

    #[test]
    fn quartiles_interpolate() {
        let sorted = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(quantile(&sorted, 0.25), 2.0);
        assert_eq!(quantile(&sorted, 0.5), 3.0);
        assert_eq!(quantile(&[1.0, 2.0], 0.5), 1.5);
    }
}

//! The two ways every algorithm hands out a pool — in proportion to weights, and by
//! weighted water-filling up to caps — plus the integer apportionment AdapTBF needs.
//! Keeping them here means one implementation of each, with one set of edge cases
//! (all weights zero, caps that cannot absorb the total, float drift) to get right.

/// Splits `total` in proportion to `weights`; equally when every weight is zero.
pub(crate) fn proportional(total: f64, weights: &[f64]) -> Vec<f64> {
    let mut out = vec![0.0; weights.len()];
    add_proportional(&mut out, total, weights);
    out
}

/// Adds to `out` (one per weight) `total` split in proportion to `weights`, as
/// [`proportional`] splits it, with no allocation.
pub(crate) fn add_proportional(out: &mut [f64], total: f64, weights: &[f64]) {
    let sum: f64 = weights.iter().sum();
    if sum > 0.0 {
        for (o, w) in out.iter_mut().zip(weights) {
            *o += total * w / sum;
        }
    } else {
        let each = total / weights.len().max(1) as f64;
        for o in out.iter_mut() {
            *o += each;
        }
    }
}

/// Adds to `rates` what is left of the pool, in proportion to `weights` (equally when
/// every weight is zero): the work-conserving last step of psharing and PSFA.
pub(crate) fn spread_leftover(rates: &mut [f64], capacity: f64, weights: &[f64]) {
    let left = (capacity - rates.iter().sum::<f64>()).max(0.0);
    for (rate, extra) in rates.iter_mut().zip(proportional(left, weights)) {
        *rate += extra;
    }
}

/// Adds to `rates` what is left of the pool, water-filled up to `caps` by `weights` (see
/// [`water_fill`]): the step that gives spare capacity to the jobs that ask for more.
pub(crate) fn fill_leftover(rates: &mut [f64], capacity: f64, caps: &[f64], weights: &[f64]) {
    let left = (capacity - rates.iter().sum::<f64>()).max(0.0);
    for (rate, extra) in rates.iter_mut().zip(water_fill(left, caps, weights)) {
        *rate += extra;
    }
}

/// Weighted max-min fair division of `total`: item `i` gets `min(caps[i], λ·weights[i])`
/// with λ as large as `total` allows, so nothing is handed out beyond a cap while an
/// uncapped item could take it. Items of weight 0 come last: they share equally what
/// the weighted ones cannot use. The result sums to `min(total, Σ caps)`.
pub(crate) fn water_fill(total: f64, caps: &[f64], weights: &[f64]) -> Vec<f64> {
    let mut out = Vec::new();
    water_fill_into(total, caps, weights, &mut out, &mut FillBuffers::default());
    out
}

/// The buffers [`water_fill_into`] works in, kept by a caller that fills many times a
/// cycle (a tree, at each of its nodes) so that it allocates nothing once they have
/// grown.
#[derive(Debug, Clone, Default)]
pub(crate) struct FillBuffers {
    order: Vec<usize>,
    rest: Vec<f64>,
}

/// [`water_fill`] into `out` (cleared first), in `buffers`.
pub(crate) fn water_fill_into(
    total: f64,
    caps: &[f64],
    weights: &[f64],
    out: &mut Vec<f64>,
    buffers: &mut FillBuffers,
) {
    out.clear();
    out.resize(caps.len(), 0.0);
    let weighted = |i: usize| weights[i] > 0.0;
    let left = fill(total, weighted, caps, |i| weights[i], out, buffers);
    fill(left, |i| !weighted(i), caps, |_| 1.0, out, buffers);
}

/// Water-fills `total` over the items `pick` selects, writing into `out`; returns what
/// is left.
fn fill(
    total: f64,
    pick: impl Fn(usize) -> bool,
    caps: &[f64],
    weight: impl Fn(usize) -> f64,
    out: &mut [f64],
    buffers: &mut FillBuffers,
) -> f64 {
    let FillBuffers { order, rest } = buffers;
    order.clear();
    order.extend((0..caps.len()).filter(|&i| pick(i)));
    // Serving the items whose cap binds first lets one pass settle every item. Ties in
    // index order: the order is then one and the same however the sort goes.
    let ratio = |i: usize| caps[i] / weight(i);
    order.sort_unstable_by(|&a, &b| ratio(a).total_cmp(&ratio(b)).then(a.cmp(&b)));
    // Suffix sums rather than a running subtraction: the last item's share is then
    // exactly what is left, with no drift.
    rest.clear();
    rest.extend(order.iter().map(|&i| weight(i)));
    for k in (0..rest.len().saturating_sub(1)).rev() {
        rest[k] += rest[k + 1];
    }
    let mut left = total;
    for (k, &i) in order.iter().enumerate() {
        let share = (left * weight(i) / rest[k]).min(left);
        out[i] = caps[i].min(share);
        left = (left - out[i]).max(0.0);
    }
    left
}

/// Whole units: distributes exactly `total` units close to the real `shares` (which
/// sum to `total`), each item at most `caps[i]` — floors first, then one more unit to
/// the largest remainders (Hamilton's method), ties by position. Sums to `total`
/// whenever `Σ caps ≥ total`.
pub(crate) fn apportion(total: u64, shares: &[f64], caps: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = shares
        .iter()
        .zip(caps)
        .map(|(&s, &cap)| (s.max(0.0).floor() as u64).min(cap))
        .collect();
    let remainder = |i: usize| shares[i].max(0.0) - out[i] as f64;
    let mut order: Vec<usize> = (0..shares.len()).collect();
    order.sort_by(|&a, &b| remainder(b).total_cmp(&remainder(a)).then(a.cmp(&b)));
    // Float error can make the floors overshoot by a unit: take it back from the
    // smallest remainders.
    let mut excess = out.iter().sum::<u64>().saturating_sub(total);
    for &i in order.iter().rev() {
        if excess == 0 {
            break;
        }
        let back = excess.min(out[i]);
        out[i] -= back;
        excess -= back;
    }
    let mut missing = total.saturating_sub(out.iter().sum());
    while missing > 0 {
        let before = missing;
        for &i in &order {
            if missing == 0 {
                break;
            }
            if out[i] < caps[i] {
                out[i] += 1;
                missing -= 1;
            }
        }
        if missing == before {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proportional_splits_equally_when_all_weights_are_zero() {
        assert_eq!(proportional(9.0, &[0.0, 0.0, 0.0]), vec![3.0; 3]);
        assert_eq!(proportional(9.0, &[1.0, 2.0]), vec![3.0, 6.0]);
    }

    #[test]
    fn water_fill_caps_small_items_and_shares_the_rest_by_weight() {
        let out = water_fill(100.0, &[10.0, 100.0, 100.0], &[1.0, 1.0, 3.0]);
        assert_eq!(out[0], 10.0);
        assert!((out[1] - 22.5).abs() < 1e-9 && (out[2] - 67.5).abs() < 1e-9);
    }

    #[test]
    fn water_fill_serves_zero_weights_with_what_the_others_leave() {
        let out = water_fill(100.0, &[30.0, 50.0, 50.0], &[1.0, 0.0, 0.0]);
        assert_eq!(out, vec![30.0, 35.0, 35.0]);
    }

    #[test]
    fn apportion_sums_exactly_and_respects_caps() {
        let out = apportion(10, &[3.4, 3.4, 3.2], &[u64::MAX; 3]);
        assert_eq!(out, vec![4, 3, 3]);
        let out = apportion(10, &[5.9, 5.9], &[5, 6]);
        assert_eq!(out, vec![5, 5]);
        assert_eq!(
            apportion(3, &[1.0, 1.0, 1.0000001], &[u64::MAX; 3]),
            vec![1; 3]
        );
    }
}

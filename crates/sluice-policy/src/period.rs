//! Period detection from activity samples, after FTIO (Tarraf et al., "Capturing
//! Periodic I/O Using Frequency Techniques", IPDPS 2024).
//!
//! The evenly sampled activity (e.g. a job's arrivals per control interval) goes
//! through a discrete Fourier transform; the dominant frequency is the one whose
//! amplitude is an outlier by z-score (z > 3 and within [`TOLERANCE`] of the largest
//! z), leakage into neighbouring bins and harmonics of a lower candidate are
//! discarded, and more than two unrelated candidates mean "not periodic". FTIO's
//! confidence (how much the winner dominates the other outliers) is multiplied by two
//! terms of ours: the significance of the peak against white noise (Fisher's g-test),
//! because on pure noise a single chance outlier would otherwise be reported with full
//! confidence; and the number of cycles seen, because with a handful the transform is
//! too coarse to pin the period within a few percent.
//!
//! Sample at least five times per period: a shorter period, with bursts of one sample,
//! lands them alternately ⌊p⌋ and ⌈p⌉ samples apart, and the sampled activity then
//! truly repeats at a multiple of the period, which is what may be reported.

use std::f64::consts::TAU;

use serde::{Deserialize, Serialize};

/// Candidates must have a z-score within this fraction of the largest one (FTIO's
/// default tolerance).
pub const TOLERANCE: f64 = 0.8;

/// A detection at or above this confidence is one to act on; SET-10 uses it.
pub const CONFIDENT: f64 = 0.8;

/// Cycles in the window needed for full confidence.
const FULL_CYCLES: f64 = 10.0;

/// A peak as unlikely as 10^-SIGNIFICANT_DIGITS under white noise counts as certain.
const SIGNIFICANT_DIGITS: f64 = 6.0;

/// The share of the best autocorrelation among the period's multiples at which the
/// activity counts as repeating. At the true period and its multiples the
/// autocorrelations are alike (quantisation to whole samples can halve one); at a
/// harmonic's period bursts do not overlap and it is near zero or below.
const REPEATS: f64 = 1.0 / 3.0;

/// The outcome of [`detect_period`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// The dominant period, in seconds.
    pub period_s: f64,
    /// How sure the detection is, in [0, 1]; act on it only from [`CONFIDENT`] up.
    pub confidence: f64,
}

/// Finds the dominant period of `samples`, taken every `sample_interval_s` seconds.
///
/// Returns `None` when there is no candidate at all: fewer than 8 samples, a flat
/// signal, no outlier in the spectrum, more than two unrelated candidates, or input
/// that is not finite.
pub fn detect_period(samples: &[f64], sample_interval_s: f64) -> Option<Detection> {
    let n = samples.len();
    if n < 8
        || !(sample_interval_s.is_finite() && sample_interval_s > 0.0)
        || samples.iter().any(|s| !s.is_finite())
    {
        return None;
    }
    let spectrum = dft(samples);
    // Bins 1 ≤ k < n/2; bin k is bins[k - 1] from here on. The Nyquist bin is left out:
    // a period of two samples cannot be told from noise, whose amplitude there also
    // follows another law.
    let bins: Vec<f64> = spectrum[1..n.div_ceil(2)]
        .iter()
        .map(|c| c.0.hypot(c.1))
        .collect();
    let z = z_scores(&bins)?;
    let z_max = z.iter().copied().fold(0.0, f64::max);
    let candidates: Vec<usize> = (1..=bins.len())
        .filter(|&k| z[k - 1] > 3.0 && z[k - 1] / z_max > TOLERANCE)
        .collect();
    let peaks = distinct_peaks(&candidates, &bins);
    if peaks.len() > 2 {
        return None;
    }
    let &strongest = peaks
        .iter()
        .max_by(|&&a, &&b| z[a - 1].total_cmp(&z[b - 1]))?;

    // FTIO's confidence: the winner's z over the sum of the peaks', and over the sum of
    // every outlier that is not a leak or harmonic of a peak, averaged. Unrelated
    // outliers below the top mean a noisier spectrum.
    let on_peaks: f64 = peaks.iter().map(|&k| z[k - 1]).sum();
    let unrelated: f64 = (1..=bins.len())
        .filter(|&k| z[k - 1] > 3.0 && !is_harmonic_or_leak(k, &peaks))
        .map(|k| z[k - 1])
        .sum();
    let top = z[strongest - 1];
    let share = (top / on_peaks + top / (on_peaks + unrelated)) / 2.0;

    let spectral = refine(&spectrum, strongest);
    let cycles = spectral / period_multiple(samples, n as f64 / spectral) as f64;
    let confidence = share * significance(&bins, strongest) * (cycles / FULL_CYCLES).min(1.0);
    Some(Detection {
        period_s: n as f64 / cycles * sample_interval_s,
        confidence: confidence.clamp(0.0, 1.0),
    })
}

/// The transform of the de-meaned samples at bins 0..=n/2, as (re, im).
fn dft(samples: &[f64]) -> Vec<(f64, f64)> {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let twiddle: Vec<(f64, f64)> = (0..n)
        .map(|j| {
            let angle = TAU * j as f64 / n as f64;
            (angle.cos(), -angle.sin())
        })
        .collect();
    (0..=n / 2)
        .map(|k| {
            let mut acc = (0.0, 0.0);
            let mut j = 0;
            for &s in samples {
                let (c, d) = twiddle[j];
                acc.0 += (s - mean) * c;
                acc.1 += (s - mean) * d;
                j = (j + k) % n;
            }
            acc
        })
        .collect()
}

/// |aₖ − mean| / std of the amplitudes normalised to sum 1; `None` for a flat spectrum.
fn z_scores(bins: &[f64]) -> Option<Vec<f64>> {
    let total: f64 = bins.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let m = bins.len() as f64;
    let normalised: Vec<f64> = bins.iter().map(|a| a / total).collect();
    let mean = normalised.iter().sum::<f64>() / m;
    let std = (normalised.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / m).sqrt();
    (std > 0.0).then(|| normalised.iter().map(|a| (a - mean).abs() / std).collect())
}

/// The candidate bins that are peaks of their own: in increasing frequency, a bin next
/// to a kept one is the same peak leaking (the stronger of the two is kept), and a bin
/// within one of a multiple of a kept one is its harmonic.
fn distinct_peaks(candidates: &[usize], bins: &[f64]) -> Vec<usize> {
    let mut peaks: Vec<usize> = Vec::new();
    for &k in candidates {
        match peaks.last().copied() {
            Some(last) if k - last <= 1 => {
                if bins[k - 1] > bins[last - 1] {
                    peaks.pop();
                    peaks.push(k);
                }
            }
            _ if is_harmonic_or_leak(k, &peaks) => {}
            _ => peaks.push(k),
        }
    }
    peaks
}

/// Whether bin `k` is, or is next to, a multiple of one of `peaks`.
fn is_harmonic_or_leak(k: usize, peaks: &[usize]) -> bool {
    peaks.iter().any(|&p| {
        let multiple = (k as f64 / p as f64).round().max(1.0) as usize * p;
        k.abs_diff(multiple) <= 1
    })
}

/// The fractional bin of the peak at bin `k`, by Jacobsen's three-bin estimator: a
/// period that falls between two bins is placed between them instead of being rounded
/// to one, which is what keeps the error within a few percent.
fn refine(spectrum: &[(f64, f64)], k: usize) -> f64 {
    let (Some(&a), Some(&b), Some(&c)) =
        (spectrum.get(k - 1), spectrum.get(k), spectrum.get(k + 1))
    else {
        return k as f64;
    };
    // δ = Re[(X₋ − X₊) / (2X₀ − X₋ − X₊)]
    let num = (a.0 - c.0, a.1 - c.1);
    let den = (2.0 * b.0 - a.0 - c.0, 2.0 * b.1 - a.1 - c.1);
    let norm = den.0 * den.0 + den.1 * den.1;
    if norm == 0.0 {
        return k as f64;
    }
    let delta = (num.0 * den.0 + num.1 * den.1) / norm;
    k as f64 + delta.clamp(-0.5, 0.5)
}

/// How many times the spectral period the true period is (1 to 4). Narrow bursts
/// that fall between bins can leave a harmonic stronger than the fundamental; the
/// activity itself settles it: it repeats at its true period and every multiple, so
/// the autocorrelation there is high, while at a harmonic's period the bursts do not
/// line up and it is near zero or below. The first multiple whose autocorrelation is
/// within a factor [`REPEATS`] of the best is taken.
fn period_multiple(samples: &[f64], period: f64) -> usize {
    let n = samples.len();
    let mean = samples.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = samples.iter().map(|s| s - mean).collect();
    let energy: f64 = centred.iter().map(|c| c * c).sum();
    let at = |lag: usize| {
        let sum: f64 = centred
            .iter()
            .zip(&centred[lag..])
            .map(|(a, b)| a * b)
            .sum();
        sum / energy * n as f64 / (n - lag) as f64
    };
    // A fractional period puts bursts alternately one whole lag and the next apart:
    // both count.
    let scores: Vec<f64> = (1..=4)
        .map(|m| m as f64 * period)
        .take_while(|&lag| lag <= n as f64 / 2.0)
        .map(|lag| at(lag.floor() as usize) + at(lag.ceil() as usize))
        .collect();
    let best = scores.iter().copied().fold(0.0, f64::max);
    scores
        .iter()
        .position(|&r| best > 0.0 && r >= best * REPEATS)
        .map_or(1, |i| i + 1)
}

/// 1 for a peak that white noise would essentially never produce, falling to 0 for
/// one that it produces by chance. Fisher's test on g, the peak's share of the power,
/// with the peak taken as its bin and the stronger neighbour (leakage splits a peak
/// that falls between bins): under white noise a pair of bins holds that share with
/// p ≈ m·(1 + (m−1)g)·(1 − g)^(m−1) over m bins. Mapped to −log₁₀ p /
/// [`SIGNIFICANT_DIGITS`].
fn significance(bins: &[f64], peak: usize) -> f64 {
    let power: f64 = bins.iter().map(|a| a * a).sum();
    let m = bins.len() as f64;
    let neighbour = [peak.wrapping_sub(2), peak]
        .iter()
        .filter_map(|&b| bins.get(b))
        .map(|a| a * a)
        .fold(0.0, f64::max);
    let g = ((bins[peak - 1].powi(2) + neighbour) / power).min(1.0);
    let log10_p = m.log10()
        + (1.0 + (m - 1.0) * g).log10()
        + (m - 1.0) * (1.0 - g).max(f64::MIN_POSITIVE).log10();
    (-log10_p / SIGNIFICANT_DIGITS).clamp(0.0, 1.0)
}

//! FTIO's own rule, as the IO-SETS paper's BeeGFS script acted on it: the dominant
//! frequency of the activity since the job began and FTIO's confidence in it, with none
//! of the checks [`super::detect_period`] adds. Read from FTIO's code
//! (`tuda-parallel/FTIO`: `ftio/freq/_dft_workflow.py`, the Z-score branch of
//! `ftio/analysis/anomaly_detection.py`), not copied.
//!
//! What it reports that the checked detection does not: a window holding a single
//! burst after a silence has its strongest bin at one cycle per window, so FTIO names
//! the window's length as the period, with a confidence of 0.6–0.9. For an application
//! that computes first, that length is its first iteration so far, which is in the
//! right decade of periods from early in its first I/O phase: this is what lets the
//! paper's SET-10 + FTIO place jobs about as early as the periods known. It is also
//! confident on some windows of pure noise, which is why sluice's `set10` does not use
//! it.

use super::{Detection, TOLERANCE, ftio_z_scores, noise_p_value, searchable};
use crate::fft::fft;

/// The dominant period of `samples` (taken every `sample_interval_s` seconds) by FTIO's
/// rule, its confidence FTIO's: `None` when FTIO finds no dominant frequency (no bin
/// with z > 3 within [`TOLERANCE`] of the largest z, or more than two after exact
/// harmonics are dropped), for fewer than 8 samples, or input that is not finite.
///
/// 1. amplitudes of bins 1 … ⌊n/2⌋ of the transform, doubled and normalised to sum 1;
/// 2. z-score of each, |aₖ − mean| / std; candidates have z > 3 and z / z_max above
///    [`TOLERANCE`];
/// 3. a candidate whose bin is a whole multiple of a lower candidate's is its harmonic
///    and is dropped; more than two left means "not periodic";
/// 4. the confidence of a bin is the mean of its z's share among the bins within
///    [`TOLERANCE`] of z_max and among the bins with z > 3 (harmonics left out of
///    both); the most confident candidate wins.
///
/// The period is n ÷ its bin (no refinement), `cycles` the bin, `resolution` half a
/// bin; `p_value` is reported as [`super::detect_period`] computes it, for comparison,
/// and does not enter the confidence.
pub fn detect_ftio(samples: &[f64], sample_interval_s: f64) -> Option<Detection> {
    if !searchable(samples, sample_interval_s) {
        return None;
    }
    let n = samples.len();
    let complex: Vec<(f64, f64)> = samples.iter().map(|&s| (s, 0.0)).collect();
    let spectrum = fft(&complex);
    // Bin k is amps[k - 1]; FTIO keeps the Nyquist bin of an even length.
    let amps: Vec<f64> = spectrum[1..=n / 2]
        .iter()
        .map(|c| 2.0 * c.0.hypot(c.1))
        .collect();
    let z = ftio_z_scores(&amps)?;
    let z_max = z.iter().copied().fold(0.0, f64::max);
    let near_max = |k: usize| z[k - 1] / z_max > TOLERANCE;
    let outlier = |k: usize| z[k - 1] > 3.0;
    let mut kept: Vec<usize> = Vec::new();
    let mut harmonics: Vec<usize> = Vec::new();
    for k in (1..=amps.len()).filter(|&k| near_max(k) && outlier(k)) {
        match kept.iter().any(|&low| k % low == 0) {
            true => harmonics.push(k),
            false => kept.push(k),
        }
    }
    if kept.is_empty() || kept.len() > 2 {
        return None;
    }
    let counted = |k: usize| !harmonics.contains(&k);
    let share_among = |k: usize, within: &dyn Fn(usize) -> bool| {
        let sum: f64 = (1..=amps.len())
            .filter(|&j| within(j) && counted(j))
            .map(|j| z[j - 1])
            .sum();
        if sum > 0.0 { z[k - 1] / sum } else { 0.0 }
    };
    let confidence = |k: usize| (share_among(k, &near_max) + share_among(k, &outlier)) / 2.0;
    let best = kept
        .into_iter()
        .max_by(|&a, &b| confidence(a).total_cmp(&confidence(b)))?;
    let period = n as f64 / best as f64;
    Some(Detection {
        period_s: period * sample_interval_s,
        confidence: confidence(best).clamp(0.0, 1.0),
        p_value: noise_p_value(samples, &[best as f64]),
        cycles: best as f64,
        resolution: 0.5 / (best as f64).min(period),
    })
}

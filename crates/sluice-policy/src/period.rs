//! Period detection from activity samples, after FTIO (Tarraf et al., "Capturing
//! Periodic I/O Using Frequency Techniques", IPDPS 2024).
//!
//! The evenly sampled activity (e.g. a job's arrivals per control interval) goes
//! through a discrete Fourier transform; the dominant frequency is the one whose
//! amplitude is an outlier by z-score (z > 3 and within [`TOLERANCE`] of the largest
//! z), leakage into neighbouring bins and harmonics of a lower candidate are
//! discarded, and more than two unrelated candidates mean "not periodic". FTIO's
//! confidence (how much the winner dominates the other outliers) is multiplied by a
//! term of ours: the significance of the peak against white noise (Fisher's g-test),
//! because on pure noise a single chance outlier would otherwise be reported with full
//! confidence. The period is then refined on the autocorrelation, which also settles
//! whether the strongest peak was a harmonic; how many cycles the window held is
//! reported beside the confidence, since it bounds how precise the period can be
//! ([`Detection::bounds`]).
//!
//! [`History`] keeps what a controller needs to detect periods from seconds to hours
//! in bounded memory: the last [`WINDOW`] samples at the control interval and the last
//! [`WINDOW`] sums of [`COARSE`] samples.
//!
//! Sample at least five times per period: a shorter period, with bursts of one sample,
//! lands them alternately ⌊p⌋ and ⌈p⌉ samples apart, and the sampled activity then
//! truly repeats at a multiple of the period, which is what may be reported.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::fft::{autocorrelation, fft};

/// Candidates must have a z-score within this fraction of the largest one (FTIO's
/// default tolerance).
pub const TOLERANCE: f64 = 0.8;

/// A detection at or above this confidence is one to act on; SET-10 uses it.
pub const CONFIDENT: f64 = 0.8;

/// Whole periods the window must hold for a period to be reported at all: below two,
/// nothing in the window is seen to repeat.
pub const MIN_CYCLES: f64 = 2.0;

/// Samples per level of a [`History`].
pub const WINDOW: usize = 1024;

/// Samples of the fine level summed into one of the coarse level of a [`History`].
pub const COARSE: usize = 16;

/// Samples a level of a [`History`] needs before it is searched.
const MIN_SAMPLES: usize = 32;

/// The normalised autocorrelation at the period from which the activity counts as
/// fully repeating. Bursts of I/O with a period jittering by 5% of 19.2 s (a second,
/// near the length of the burst) still reach 0.5; bursts at random times give 0.3 at
/// most at a lag of half the window, their best chance alignment.
const REPEATED: f64 = 0.5;

/// Cycles in the window below which the period is refined on the autocorrelation.
const REFINE_BELOW: f64 = 8.0;

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
    /// How sure the detection is that the activity repeats at this period, in [0, 1];
    /// act on it only from [`CONFIDENT`] up.
    pub confidence: f64,
    /// Periods in the window searched (its length ÷ the period), at least
    /// [`MIN_CYCLES`]: the more, the more precise the period.
    pub cycles: f64,
    /// The relative error the period may have: half a bin of the transform,
    /// 1 / (2 · cycles), or half a sample, 1 / (2 · samples per period), whichever is
    /// larger.
    pub resolution: f64,
}

impl Detection {
    /// The periods the activity may truly have: the period ± its
    /// [`resolution`](Self::resolution). Tested to hold the true period whenever the
    /// detection is confident (and within 5% of it from four cycles on,
    /// tests/period.rs); SET-10 acts only once both ends fall in one decade.
    pub fn bounds(&self) -> (f64, f64) {
        let r = self.resolution;
        (self.period_s * (1.0 - r), self.period_s * (1.0 + r))
    }
}

/// Finds the dominant period of `samples`, taken every `sample_interval_s` seconds.
///
/// Returns `None` when there is no candidate at all: fewer than 8 samples, a flat
/// signal, no outlier in the spectrum, more than two unrelated candidates, a period
/// seen fewer than [`MIN_CYCLES`] times, or input that is not finite.
pub fn detect_period(samples: &[f64], sample_interval_s: f64) -> Option<Detection> {
    let n = samples.len();
    if n < 8
        || !(sample_interval_s.is_finite() && sample_interval_s > 0.0)
        || samples.iter().any(|s| !s.is_finite())
    {
        return None;
    }
    let mean = samples.iter().sum::<f64>() / n as f64;
    let centred: Vec<f64> = samples.iter().map(|s| s - mean).collect();
    let complex: Vec<(f64, f64)> = centred.iter().map(|&c| (c, 0.0)).collect();
    let spectrum = fft(&complex);
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
    let peaks = distinct_peaks(&candidates, &bins, &spectrum);
    if peaks.len() > 2 {
        return None;
    }
    let &strongest = peaks
        .iter()
        .max_by(|&&a, &&b| z[a - 1].total_cmp(&z[b - 1]))?;

    let acf = normalised_autocorrelation(&centred);
    let spectral = n as f64 / refine(&spectrum, strongest);
    let multiple = period_multiple(&acf, spectral);
    let period = on_autocorrelation(&acf, spectral * multiple as f64);
    let cycles = n as f64 / period;
    if cycles < MIN_CYCLES {
        return None;
    }

    // FTIO's confidence is the average of two shares: the winner's z over the sum of
    // the candidate peaks' z, and over that sum plus every other outlier (z > 3). We
    // keep the first and let the autocorrelation stand for the second: I/O bursts whose
    // period jitters smear their higher harmonics into a continuum of outliers, which
    // would halve the confidence in the plainest periodic activity, whereas how much
    // of the activity lines up with itself one period later measures the same
    // noisiness directly.
    let on_peaks: f64 = peaks.iter().map(|&k| z[k - 1]).sum();
    let share = z[strongest - 1] / on_peaks;
    let repeats = (value_at(&acf, period) / REPEATED).clamp(0.0, 1.0);
    let significant = significance(&bins, strongest).max(comb_significance(&bins, cycles));
    let confidence = share * significant * repeats;
    Some(Detection {
        period_s: period * sample_interval_s,
        confidence: confidence.clamp(0.0, 1.0),
        cycles,
        resolution: 0.5 / cycles.min(period),
    })
}

/// The normalised autocorrelation at a fractional lag, between its two whole lags.
fn value_at(acf: &[f64], lag: f64) -> f64 {
    let l = lag.floor() as usize;
    match (acf.get(l), acf.get(l + 1)) {
        (Some(&a), Some(&b)) => a + (b - a) * (lag - l as f64),
        (Some(&a), None) => a,
        _ => 0.0,
    }
}

/// The autocorrelation of de-meaned samples at every lag, over its value at lag 0 and
/// corrected for the overlap shrinking with the lag (n / (n − lag)), so that a lag
/// late in the window is not handicapped against an early one.
fn normalised_autocorrelation(centred: &[f64]) -> Vec<f64> {
    let n = centred.len() as f64;
    let raw = autocorrelation(centred);
    let energy = raw.first().copied().unwrap_or(0.0);
    if energy <= 0.0 {
        return vec![0.0; raw.len()];
    }
    raw.iter()
        .enumerate()
        .map(|(lag, r)| r / energy * n / (n - lag as f64))
        .collect()
}

/// The period (in samples) refined on the autocorrelation, where the window holds it
/// fewer than [`REFINE_BELOW`] times: the centre of the autocorrelation's peak within
/// half a transform bin of `period`. The transform's bins are 1/n apart in frequency,
/// coarse for periods seen a few times; the autocorrelation peaks where the activity
/// lines up with itself, at any lag. With more cycles, or without such a peak, the
/// spectral period stands: Jacobsen's estimate is then the finer of the two.
fn on_autocorrelation(acf: &[f64], period: f64) -> f64 {
    let n = acf.len() as f64;
    if n / period >= REFINE_BELOW {
        return period;
    }
    let r = 0.5 * period / n;
    let lo = (period * (1.0 - r)).floor().max(1.0) as usize;
    // Lags far into the window compare few samples; three quarters keeps a third.
    let hi = ((period * (1.0 + r)).ceil() as usize).min(acf.len() * 3 / 4);
    // A peak of the autocorrelation, not a bump of its noise: the highest point within
    // a quarter period either side.
    let reach = (period / 4.0).ceil() as usize;
    let best = (lo.max(1)..=hi)
        .filter(|&l| {
            let around = &acf[l.saturating_sub(reach)..(l + reach + 1).min(acf.len())];
            around.iter().all(|&v| v <= acf[l]) && l + 1 < acf.len()
        })
        .max_by(|&a, &b| acf[a].total_cmp(&acf[b]));
    let Some(l) = best.filter(|&l| acf[l] > 0.0) else {
        return period;
    };
    // The centre of the peak's upper half: bursts that jitter make it broad and flat,
    // and its highest lag then wanders with the noise while its centre does not.
    let top = acf[l];
    let half = |k: usize| acf[k] >= top / 2.0;
    let first = (0..l).rev().take_while(|&k| half(k)).last().unwrap_or(l);
    let last = (l + 1..acf.len() * 3 / 4)
        .take_while(|&k| half(k))
        .last()
        .unwrap_or(l);
    let (mut sum, mut weight) = (0.0, 0.0);
    for (k, v) in acf.iter().enumerate().take(last + 1).skip(first) {
        let w = v - top / 2.0;
        sum += k as f64 * w;
        weight += w;
    }
    if weight > 0.0 { sum / weight } else { l as f64 }
}

/// |aₖ − mean| / std of the amplitudes normalised to sum 1 (FTIO's z-score); `None`
/// for a flat spectrum. When no bin is an outlier so (z > 3), the robust z-score
/// (aₖ − median) / (1.4826 · MAD) instead: the comb of a narrow burst seen a few times
/// is many outliers at once (a burst of 1.5 samples every 24 puts eleven harmonics of
/// equal height among 47 bins), and they inflate the standard deviation enough to hide
/// themselves, but not the median.
fn z_scores(bins: &[f64]) -> Option<Vec<f64>> {
    let total: f64 = bins.iter().sum();
    if total <= 0.0 {
        return None;
    }
    let m = bins.len() as f64;
    let normalised: Vec<f64> = bins.iter().map(|a| a / total).collect();
    let mean = normalised.iter().sum::<f64>() / m;
    let std = (normalised.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / m).sqrt();
    if std <= 0.0 {
        return None;
    }
    let z: Vec<f64> = normalised.iter().map(|a| (a - mean).abs() / std).collect();
    if z.iter().any(|&v| v > 3.0) {
        return Some(z);
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let centre = median(&mut normalised.clone());
    let mad = median(&mut normalised.iter().map(|a| (a - centre).abs()).collect());
    let top = normalised.iter().copied().fold(0.0, f64::max);
    // A spectrum mostly of zeros has no deviation: a millionth of its top stands in.
    let scale = (1.4826 * mad).max(1e-6 * top);
    Some(
        normalised
            .iter()
            .map(|a| (a - centre).max(0.0) / scale)
            .collect(),
    )
}

/// The candidate bins that are peaks of their own: in increasing frequency, a bin next
/// to a kept one is the same peak leaking (the stronger of the two is kept), and a bin
/// within one of a multiple of a kept one is its harmonic. Multiples are taken of the
/// kept peak's fractional bin (Jacobsen's): the fifth harmonic of bin 4.3 is 21.5, two
/// bins from 5 × 4.
fn distinct_peaks(candidates: &[usize], bins: &[f64], spectrum: &[(f64, f64)]) -> Vec<usize> {
    let mut peaks: Vec<usize> = Vec::new();
    let mut at: Vec<f64> = Vec::new();
    for &k in candidates {
        match peaks.last().copied() {
            Some(last) if k - last <= 1 => {
                if bins[k - 1] > bins[last - 1] {
                    peaks.pop();
                    at.pop();
                    peaks.push(k);
                    at.push(refine(spectrum, k));
                }
            }
            _ if is_harmonic_or_leak(k, &at) => {}
            _ => {
                peaks.push(k);
                at.push(refine(spectrum, k));
            }
        }
    }
    peaks
}

/// Whether bin `k` is, or is within a bin of, a multiple of one of the fractional bins
/// `peaks`.
fn is_harmonic_or_leak(k: usize, peaks: &[f64]) -> bool {
    peaks.iter().any(|&p| {
        let multiple = (k as f64 / p).round().max(1.0) * p;
        (k as f64 - multiple).abs() <= 1.0
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
fn period_multiple(acf: &[f64], period: f64) -> usize {
    let n = acf.len();
    // A fractional period puts bursts alternately one whole lag and the next apart:
    // both count.
    let scores: Vec<f64> = (1..=4)
        .map(|m| m as f64 * period)
        .take_while(|&lag| lag <= n as f64 / 2.0)
        .map(|lag| acf[lag.floor() as usize] + acf[(lag.ceil() as usize).min(n - 1)])
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

/// A job's activity, kept for period detection at two resolutions in bounded memory
/// (2 × [`WINDOW`] samples): the last [`WINDOW`] samples at the interval they are
/// pushed at (100 ms: periods of about 0.5 s to 50 s), and the last [`WINDOW`] sums of
/// [`COARSE`] of them (1.6 s: about 8 s to 13 min). IO-SETS' applications have periods
/// of 19.2 s and 384 s, which no single window of a few thousand samples holds both
/// several times at 100 ms. Pure: the caller pushes one sample per interval and passes
/// the interval's length in.
#[derive(Debug, Clone, Default)]
pub struct History {
    fine: VecDeque<f32>,
    coarse: VecDeque<f32>,
    /// The sum of the fine samples not yet summed into a coarse one, and their number.
    partial: f64,
    partial_len: usize,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        History::default()
    }

    /// Adds the activity of the next interval.
    pub fn push(&mut self, value: f64) {
        push_bounded(&mut self.fine, value);
        self.partial += value;
        self.partial_len += 1;
        if self.partial_len == COARSE {
            push_bounded(&mut self.coarse, self.partial);
            self.partial = 0.0;
            self.partial_len = 0;
        }
    }

    /// Adds `count` intervals without activity (at most a window's worth is kept).
    pub fn push_idle(&mut self, count: usize) {
        for _ in 0..count.min(WINDOW * COARSE) {
            self.push(0.0);
        }
    }

    /// The period of the activity pushed every `interval_s` seconds, from the level
    /// that sees it best: the fine one when it is confident and has seen the period at
    /// least four times (its resolution is then within an eighth), else whichever
    /// confident level has seen more cycles, else the more confident one. The coarse
    /// level only reports periods the fine window holds fewer than four times: a short
    /// period summed over coarse bins can alias into a slow beat.
    pub fn detect(&self, interval_s: f64) -> Option<Detection> {
        let level = |samples: &VecDeque<f32>, dt: f64| {
            (samples.len() >= MIN_SAMPLES)
                .then(|| {
                    let s: Vec<f64> = samples.iter().map(|&v| f64::from(v)).collect();
                    detect_period(&s, dt)
                })
                .flatten()
        };
        let fine = level(&self.fine, interval_s);
        let confident = |d: &Option<Detection>| d.filter(|d| d.confidence >= CONFIDENT);
        if let Some(f) = confident(&fine).filter(|f| f.cycles >= 4.0) {
            // The coarse level could not do better: its transform is not computed.
            return Some(f);
        }
        let fine_span = self.fine.len() as f64 * interval_s;
        let coarse = level(&self.coarse, interval_s * COARSE as f64)
            .filter(|d| d.period_s * 4.0 > fine_span);
        match (confident(&fine), confident(&coarse)) {
            (Some(f), Some(c)) => Some(if c.cycles > f.cycles { c } else { f }),
            (Some(d), None) | (None, Some(d)) => Some(d),
            (None, None) => match (fine, coarse) {
                (Some(f), Some(c)) => Some(if c.confidence > f.confidence { c } else { f }),
                (f, c) => f.or(c),
            },
        }
    }
}

fn push_bounded(window: &mut VecDeque<f32>, value: f64) {
    if window.len() == WINDOW {
        window.pop_front();
    }
    window.push_back(value as f32);
}

/// The same test for the whole comb of a period seen `f0` times: the bins nearest to
/// f0 and its multiples, each with its neighbours from six cycles up. Narrow bursts spread their power
/// over many harmonics of similar height (a burst of 6% of its period over about 16),
/// so that no single one holds a large share, yet the comb as a whole does. Under white
/// noise each bin's power is exponential, so the comb's power over the mean power of
/// the other bins is about Gamma(K) for K bins; its tail by the Wilson–Hilferty cube
/// root, and the search over every possible period by a factor m. A comb that would
/// cover half the spectrum or more says
/// nothing (a period seen about twice), and the single-peak test stands alone.
fn comb_significance(bins: &[f64], f0: f64) -> f64 {
    let m = bins.len();
    let mut comb = vec![false; m];
    let mut h = 1.0;
    while h * f0 <= m as f64 + 1.0 {
        let k = (h * f0).round() as usize;
        // Neighbours catch what leaks from a harmonic between bins; with harmonics
        // fewer than six bins apart they would fill the spectrum.
        let reach = usize::from(f0 >= 6.0);
        for b in k.saturating_sub(reach)..=k + reach {
            if (1..=m).contains(&b) {
                comb[b - 1] = true;
            }
        }
        h += 1.0;
    }
    let count = comb.iter().filter(|&&c| c).count();
    if count == 0 || 2 * count >= m {
        return 0.0;
    }
    let (mut on, mut off) = (0.0, 0.0);
    for (a, &c) in bins.iter().zip(&comb) {
        if c {
            on += a * a;
        } else {
            off += a * a;
        }
    }
    if off <= 0.0 {
        return 1.0;
    }
    let k = count as f64;
    let x = on / (off / (m - count) as f64);
    let spread = 1.0 / (9.0 * k);
    let z = ((x / k).cbrt() - (1.0 - spread)) / spread.sqrt();
    if z < 1.0 {
        return 0.0;
    }
    // log₁₀ of the normal tail beyond z (Mills' ratio), then of the search.
    let log10_p = -(z * z / 2.0) / std::f64::consts::LN_10
        - (z * (2.0 * std::f64::consts::PI).sqrt()).log10()
        + (m as f64).log10();
    (-log10_p / SIGNIFICANT_DIGITS).clamp(0.0, 1.0)
}

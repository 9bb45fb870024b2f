//! Period detection from activity samples, after FTIO (Tarraf et al., "Capturing
//! Periodic I/O Using Frequency Techniques", IPDPS 2024).
//!
//! The evenly sampled activity (e.g. a job's arrivals per control interval) goes
//! through a discrete Fourier transform; the dominant frequency is the one whose
//! amplitude is an outlier by z-score (z > 3 and within [`TOLERANCE`] of the largest
//! z), leakage into neighbouring bins and harmonics of a lower candidate are
//! discarded, and more than two unrelated candidates mean "not periodic". FTIO's
//! confidence (how much the winner dominates the other outliers) is multiplied by a
//! term of ours: the significance against white noise of the peak and of the comb of
//! the period's harmonics, on the samples' ranks and with every choice made from the
//! data counted ([`Detection::p_value`]), because on pure noise a single chance outlier
//! would otherwise be reported with full confidence. The period is then refined on the autocorrelation, which also settles
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

mod ftio;
pub use ftio::detect_ftio;

/// Candidates must have a z-score within this fraction of the largest one (FTIO's
/// default tolerance).
pub const TOLERANCE: f64 = 0.8;

/// A detection at or above this confidence is one to act on; SET-10 uses it.
pub const CONFIDENT: f64 = 0.8;

/// Whole periods the window must hold for a period to be reported at all: below two,
/// nothing in the window is seen to repeat.
pub const MIN_CYCLES: f64 = 2.0;

/// Samples per level of a [`History`]: 205 s at 100 ms, five periods of IO-SETS'
/// scaled low-frequency application (38.4 s), whose set the fine level then settles by
/// itself from about three (the coarse level sees its bursts as two samples each, too
/// few events for the test of [`Detection::p_value`]).
pub const WINDOW: usize = 2048;

/// The fine samples searched first, as one window: 102 s at 100 ms.
pub const RECENT: usize = 1024;

/// Samples of the fine level summed into one of the coarse level of a [`History`].
pub const COARSE: usize = 16;

/// Samples a level of a [`History`] needs before it is searched.
const MIN_SAMPLES: usize = 64;

/// The normalised autocorrelation at the period from which the activity counts as
/// fully repeating. Bursts of I/O with a period jittering by 5% of 19.2 s (a second,
/// near the length of the burst) still reach 0.5; bursts at random times give 0.3 at
/// most at a lag of half the window, their best chance alignment.
const REPEATED: f64 = 0.5;

/// Cycles in the window below which the period is refined on the autocorrelation.
const REFINE_BELOW: f64 = 8.0;

/// The chance at most that white noise gives a confident detection ([`CONFIDENT`]):
/// the significance term of the confidence is CONFIDENT at this p-value and 1 from
/// 10⁻⁷·⁵. Small, because a controller detects every job's period over and over (a
/// thousand jobs each every 1.6 s make about 2·10⁶ detections a day) and a false one
/// puts a job in the wrong set.
pub const NOISE_P: f64 = 1e-6;

/// The share of the best autocorrelation among the period's multiples at which the
/// activity counts as repeating. At the true period and its multiples the
/// autocorrelations are alike (quantisation to whole samples can halve one); at a
/// harmonic's period bursts do not overlap and it is near zero or below.
const REPEATS: f64 = 1.0 / 3.0;

/// What an algorithm that places jobs by their I/O period (SET-10) knows of one job's,
/// for the administrator: [`crate::Allocator::period`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeriodSeen {
    /// The period the job is placed by, in seconds, and where it comes from; `None`
    /// while it is unknown (SET-10 then puts the job in a set of its own at 1/50).
    pub placed_by: Option<(f64, PeriodFrom)>,
    /// The last detection, whatever its confidence; `None` for a period given, and
    /// before detection first ran.
    pub last: Option<Detection>,
}

/// Where the period a job is placed by comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeriodFrom {
    /// The job's setting (`period` in the controller's configuration).
    Given,
    /// A confident detection whose bounds fall in one decade.
    Detected,
    /// `set10-silence`'s lower bound, the job's longest silence.
    Silence,
}

impl PeriodFrom {
    /// Its name in reports: `given`, `detected`, `silence`.
    pub fn name(self) -> &'static str {
        match self {
            PeriodFrom::Given => "given",
            PeriodFrom::Detected => "detected",
            PeriodFrom::Silence => "silence",
        }
    }
}

/// The outcome of [`detect_period`].
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Detection {
    /// The dominant period, in seconds.
    pub period_s: f64,
    /// How sure the detection is that the activity repeats at this period, in [0, 1];
    /// act on it only from [`CONFIDENT`] up.
    pub confidence: f64,
    /// The chance that white noise would show a peak, or a comb of harmonics, as strong
    /// as this activity's anywhere in its spectrum: the detection is confident only at
    /// [`NOISE_P`] or below.
    pub p_value: f64,
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
    if !searchable(samples, sample_interval_s) {
        return None;
    }
    let n = samples.len();
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
    // Peaks at multiples of the period found are its harmonics, not rivals: the
    // autocorrelation has settled that the strongest was one of them (a burst of a
    // tenth of its period between two bins can leave its second and third harmonics
    // as the two peaks, 1.5 apart, which step 3 cannot tell apart).
    let on_peaks: f64 = peaks.iter().map(|&k| z[k - 1]).sum();
    let fundamental = n as f64 / period;
    let of_period: f64 = peaks
        .iter()
        .filter(|&&k| is_harmonic_or_leak(k, &[fundamental]))
        .map(|&k| z[k - 1])
        .sum();
    let share = of_period.max(z[strongest - 1]) / on_peaks;
    let repeats = (value_at(&acf, period) / REPEATED).clamp(0.0, 1.0);
    // The comb of the period reported, and of the spectral one it was refined from.
    let p_value = noise_p_value(samples, &[cycles, n as f64 / (spectral * multiple as f64)]);
    let significant = (CONFIDENT * p_value.log10() / NOISE_P.log10()).clamp(0.0, 1.0);
    let confidence = share * significant * repeats;
    Some(Detection {
        period_s: period * sample_interval_s,
        confidence: confidence.clamp(0.0, 1.0),
        p_value,
        cycles,
        resolution: 0.5 / cycles.min(period),
    })
}

/// Whether `samples` can be searched for a period at all: at least 8, all finite,
/// taken at a positive, finite interval.
fn searchable(samples: &[f64], sample_interval_s: f64) -> bool {
    samples.len() >= 8
        && sample_interval_s.is_finite()
        && sample_interval_s > 0.0
        && samples.iter().all(|s| s.is_finite())
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

/// FTIO's z-score ([`ftio_z_scores`]); `None` for a flat spectrum. When no bin is an
/// outlier so (z > 3), the robust z-score
/// (aₖ − median) / (1.4826 · MAD) instead: the comb of a narrow burst seen a few times
/// is many outliers at once (a burst of 1.5 samples every 24 puts eleven harmonics of
/// equal height among 47 bins), and they inflate the standard deviation enough to hide
/// themselves, but not the median.
fn z_scores(bins: &[f64]) -> Option<Vec<f64>> {
    let z = ftio_z_scores(bins)?;
    if z.iter().any(|&v| v > 3.0) {
        return Some(z);
    }
    let total: f64 = bins.iter().sum();
    let normalised: Vec<f64> = bins.iter().map(|a| a / total).collect();
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

/// FTIO's z-score: |aₖ − mean| / std of the amplitudes normalised to sum 1; `None`
/// for a flat spectrum.
fn ftio_z_scores(bins: &[f64]) -> Option<Vec<f64>> {
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

/// A job's activity, kept for period detection at two resolutions in bounded memory
/// (2 × [`WINDOW`] samples): the last [`WINDOW`] samples at the interval they are
/// pushed at (100 ms: periods of about 0.5 s to 100 s), and the last [`WINDOW`] sums of
/// [`COARSE`] of them (1.6 s: about 8 s to 27 min). IO-SETS' applications have periods
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

    /// The period of the activity pushed every `interval_s` seconds, from the window
    /// that sees it best: the last [`RECENT`] fine samples when they are confident and
    /// have seen the period at least four times (the resolution is then within an
    /// eighth), else whichever confident window has seen more cycles (the whole fine
    /// level, then the coarse one), else the most confident. A longer window only
    /// reports periods the shorter one holds fewer than four times: a short period
    /// summed over coarse bins can alias into a slow beat, and a long window adds
    /// nothing to a period seen often (its jitter lowers how much the activity repeats).
    pub fn detect(&self, interval_s: f64) -> Option<Detection> {
        let level = |samples: &[f32], dt: f64| {
            (samples.len() >= MIN_SAMPLES)
                .then(|| {
                    let s: Vec<f64> = samples.iter().map(|&v| f64::from(v)).collect();
                    detect_period(&s, dt)
                })
                .flatten()
        };
        let fine = self.fine.as_slices();
        let fine: Vec<f32> = fine.0.iter().chain(fine.1).copied().collect();
        let recent = &fine[fine.len().saturating_sub(RECENT)..];
        let confident = |d: &Option<Detection>| d.filter(|d| d.confidence >= CONFIDENT);
        let mut found = vec![level(recent, interval_s)];
        if let Some(f) = confident(&found[0]).filter(|f| f.cycles >= 4.0) {
            // The longer windows could not do better: their transforms are not computed.
            return Some(f);
        }
        let recent_span = recent.len() as f64 * interval_s;
        if fine.len() > recent.len() {
            found.push(level(&fine, interval_s).filter(|d| d.period_s * 4.0 > recent_span));
        }
        let fine_span = fine.len() as f64 * interval_s;
        let coarse: Vec<f32> = self.coarse.iter().copied().collect();
        found.push(
            level(&coarse, interval_s * COARSE as f64).filter(|d| d.period_s * 4.0 > fine_span),
        );
        let sure = found.iter().filter_map(confident);
        if let Some(best) = sure.max_by(|a, b| a.cycles.total_cmp(&b.cycles)) {
            return Some(best);
        }
        found
            .into_iter()
            .flatten()
            .max_by(|a, b| a.confidence.total_cmp(&b.confidence))
    }

    /// FTIO's rule ([`detect_ftio`]) on the fine level: the activity since the job was
    /// first seen, up to the last [`WINDOW`] samples, as FTIO's window runs from the
    /// application's start (`set10-ftio`).
    pub fn detect_ftio(&self, interval_s: f64) -> Option<Detection> {
        let fine: Vec<f64> = self.fine.iter().map(|&v| f64::from(v)).collect();
        detect_ftio(&fine, interval_s)
    }
}

fn push_bounded(window: &mut VecDeque<f32>, value: f64) {
    if window.len() == WINDOW {
        window.pop_front();
    }
    window.push_back(value as f32);
}

/// The chance that white noise, of any law, shows a spectrum as concentrated as that of
/// `samples`: in its strongest bin, or in the comb of bins at the multiples of one of
/// `fundamentals` (in bins, i.e. cycles in the window). Taken on the samples' ranks,
/// ties broken ([`ranks`]), not their values: the ranks of independent, identically
/// distributed samples are a random permutation whatever the law, so skewed or
/// discrete noise is tested like any other, and the ranks' periodogram is close to
/// Gaussian noise's. Under Gaussian noise the m ordinates between the mean and the
/// Nyquist bin are independent exponentials, so their shares of the total are uniform
/// on the simplex (Dirichlet(1, …, 1)). Then:
///
/// - the strongest share exceeds g with chance at most m·(1 − g)^(m−1) (the first
///   term of Fisher's g-test, which bounds it);
/// - K given bins hold more than a share s with chance P(Binomial(m − 1, s) < K) (the
///   sum of K shares is the K-th smallest of m − 1 uniforms);
/// - the fundamentals are chosen from the data, so that chance is multiplied by the
///   number of distinct combs any fundamental could have picked ([`comb_family`]), for
///   each of the two widths and the [`HARMONICS`] lengths tried;
/// - the two tests are combined by Bonferroni (× 2).
///
/// For ranks the Dirichlet law is an approximation, good in its far tail only from a
/// few dozen samples: below [`MIN_TESTED`] the chance is taken as 1. Measured on 1.17
/// million windows of nine kinds of noise (tests/period_calib.rs), p ≤ 10⁻³ in 0.015%
/// of them and never below 1.5·10⁻⁵.
fn noise_p_value(samples: &[f64], fundamentals: &[f64]) -> f64 {
    if samples.len() < MIN_TESTED {
        return 1.0;
    }
    spectrum_p_value(&ranks(samples), fundamentals)
}

/// [`noise_p_value`] of the ranks: the strongest bin and the combs of `fundamentals`.
fn spectrum_p_value(ranks: &[f64], fundamentals: &[f64]) -> f64 {
    let n = ranks.len();
    let spectrum = fft(&ranks.iter().map(|&r| (r, 0.0)).collect::<Vec<_>>());
    let power: Vec<f64> = spectrum[1..n.div_ceil(2)]
        .iter()
        .map(|c| c.0 * c.0 + c.1 * c.1)
        .collect();
    let m = power.len();
    let total: f64 = power.iter().sum();
    if m < 2 || total <= 0.0 {
        return 1.0;
    }
    let top = power.iter().copied().fold(0.0, f64::max);
    let exponent = i32::try_from(m - 1).unwrap_or(i32::MAX);
    let fisher = m as f64 * (1.0 - top / total).max(0.0).powi(exponent);
    let comb = fundamentals
        .iter()
        .filter(|f| f.is_finite() && **f >= 1.0)
        .flat_map(|&f0| {
            HARMONICS
                .iter()
                .flat_map(move |&h| [0, 1].map(move |reach| (f0, h, reach)))
        })
        .map(|(f0, harmonics, reach)| comb_tail(&power, total, f0, harmonics, reach))
        .fold(1.0, f64::min);
    let combs = (2 * HARMONICS.len()) as f64 * comb_family(m);
    (2.0 * fisher.min(combs * comb)).min(1.0)
}

/// Samples from which the p-value is computed at all (1 below): fewer samples have too
/// few orders for the Dirichlet law to hold in its far tail; at 12, about one order in
/// ten thousand puts the whole of a rank spectrum's power in a comb (p = 0), and at 40
/// one window of four-level noise in 30,000 reached p = 6·10⁻⁷.
const MIN_TESTED: usize = 64;

/// The numbers of harmonics a comb is tried with: a burst of a fraction d of its
/// period puts its power in about the first 1/d harmonics, and the bins beyond hold
/// only noise.
const HARMONICS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, usize::MAX];

/// How many different combs `comb_tail` can form over m bins as the fundamental f0
/// goes from 1 to m, for one width. The comb is set by round(h·f0) for h = 1, 2, …
/// while within the m bins; as f0 crosses [f, f + 1), the h-th harmonic crosses at most
/// h half-integers, and at most H_f ≤ (m + ½)/f harmonics are in range, so at most
/// 1 + H_f(H_f + 1)/2 combs arise there. Summed over f and bounded with
/// Σ1/f² < π²/6 and Σ1/f < 1 + ln m.
fn comb_family(m: usize) -> f64 {
    let m = m as f64;
    let h = m + 0.5;
    m + h * h * std::f64::consts::PI.powi(2) / 12.0 + h * (1.0 + m.ln()) / 2.0
}

/// The chance, under the Dirichlet law of [`noise_p_value`], that the comb of bins
/// round(h·f0) (1-based; with `reach` neighbours either side, which catch a harmonic
/// falling between two bins) holds at least its share of `power`.
fn comb_tail(power: &[f64], total: f64, f0: f64, harmonics: usize, reach: usize) -> f64 {
    let m = power.len();
    let mut comb = vec![false; m];
    let mut h = 1.0;
    while (h * f0).round() <= m as f64 && h <= harmonics as f64 {
        let k = (h * f0).round() as usize;
        for b in k.saturating_sub(reach).max(1)..=(k + reach).min(m) {
            comb[b - 1] = true;
        }
        h += 1.0;
    }
    let count = comb.iter().filter(|&&c| c).count();
    if count == 0 || count >= m {
        return 1.0;
    }
    let held: f64 = power
        .iter()
        .zip(&comb)
        .filter(|(_, c)| **c)
        .map(|(p, _)| p)
        .sum();
    binomial_below(m - 1, held / total, count)
}

/// P(Binomial(trials, s) < k), summed in logarithms: (1 − s)^trials underflows for the
/// shares a real period holds in a long window.
fn binomial_below(trials: usize, s: f64, k: usize) -> f64 {
    if s <= 0.0 {
        return 1.0;
    }
    if s >= 1.0 {
        return if k > trials { 1.0 } else { 0.0 };
    }
    let n = trials as f64;
    let odds = (s / (1.0 - s)).ln();
    let mut term = n * (1.0 - s).ln();
    let mut terms = Vec::with_capacity(k);
    for j in 0..k.min(trials + 1) {
        if j > 0 {
            term += ((n - j as f64 + 1.0) / j as f64).ln() + odds;
        }
        terms.push(term);
    }
    let top = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let sum: f64 = terms.iter().map(|t| (t - top).exp()).sum();
    (top + sum.ln()).exp().min(1.0)
}

/// The samples' ranks less their mean, ties broken in an order fixed but unrelated to
/// the samples (a hash of the position). Ties are the rule in I/O activity (every idle
/// interval is 0). Given one shared rank they would leave the ranks of independent
/// samples far from a random order: with few samples off the common value, the
/// spectrum is that of a few spikes (two half a window apart are two identical halves,
/// a perfect period, once in n − 1 windows), and even a hundred on/off events among
/// 1,024 samples reached p = 2·10⁻⁶ in 30,000 windows of noise. Broken so, every order
/// is as likely, at the cost of some power: the idle samples' ranks spread like noise.
fn ranks(samples: &[f64]) -> Vec<f64> {
    let n = samples.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| {
        samples[a]
            .total_cmp(&samples[b])
            .then_with(|| scramble(a).cmp(&scramble(b)))
    });
    let mean = (n as f64 - 1.0) / 2.0;
    let mut ranks = vec![0.0; n];
    for (rank, &i) in order.iter().enumerate() {
        ranks[i] = rank as f64 - mean;
    }
    ranks
}

/// A bijection of positions that looks random (SplitMix64's finaliser).
fn scramble(i: usize) -> u64 {
    let mut z = (i as u64).wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

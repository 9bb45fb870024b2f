//! Period detection on synthetic activity: bursts every period, with noise and jitter,
//! and white noise that must not be mistaken for a period.

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng};
use sluice_policy::period::{CONFIDENT, detect_period};

/// Proptest picks the seed, the generator makes the noise: shrinking a vector of noise
/// would turn it into a pattern, which is no longer noise.
fn noise_source(seed: [u8; 16]) -> impl FnMut() -> f64 {
    let mut rng = TestRng::from_seed(RngAlgorithm::XorShift, &seed);
    move || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// `n` samples of an application that does I/O for `duty` of every period, each cycle
/// lasting period · (1 ± jitter), with uniform noise of standard deviation `noise`
/// (relative to the burst height) added and the result clipped at zero like a rate.
fn bursts(n: usize, period: f64, duty: f64, noise: f64, jitter: f64, seed: [u8; 16]) -> Vec<f64> {
    let mut uniform = noise_source(seed);
    let mut wobble = move || 2.0 * uniform() - 1.0;
    let mut samples = vec![0.0; n];
    let mut start = (wobble() + 1.0) / 2.0 * period;
    while start < n as f64 {
        let this = period * (1.0 + jitter * wobble());
        let end = ((start + (duty * this).max(1.0)) as usize).min(n);
        for s in &mut samples[start as usize..end] {
            *s += 1.0;
        }
        start += this;
    }
    for s in &mut samples {
        *s = (*s + noise * 3f64.sqrt() * wobble()).max(0.0);
    }
    samples
}

#[test]
fn a_clean_periodic_signal_is_found_with_confidence() {
    for period in [5.0, 10.0, 19.2] {
        let found = detect_period(&bursts(256, period, 0.25, 0.0, 0.0, [0; 16]), 1.0);
        let found = found.expect("a period");
        assert!(found.confidence >= CONFIDENT, "{period}: {found:?}");
        assert!(
            (found.period_s - period).abs() / period <= 0.05,
            "{period}: {found:?}"
        );
    }
}

#[test]
fn the_period_is_in_seconds_of_the_sampling() {
    let found = detect_period(&bursts(256, 8.0, 0.25, 0.0, 0.0, [0; 16]), 0.5).expect("a period");
    assert!((found.period_s - 4.0).abs() < 0.2, "{found:?}");
}

#[test]
fn flat_short_or_broken_input_has_no_period() {
    assert_eq!(detect_period(&[3.0; 64], 1.0), None);
    assert_eq!(detect_period(&[0.0, 1.0, 0.0, 1.0], 1.0), None);
    assert_eq!(detect_period(&[f64::NAN; 64], 1.0), None);
    assert_eq!(
        detect_period(&bursts(64, 8.0, 0.25, 0.0, 0.0, [0; 16]), 0.0),
        None
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn a_confident_period_is_within_five_percent(
        n in prop_oneof![Just(128usize), Just(200), Just(256), Just(512)],
        // Periods of 5 samples and more: with shorter ones a burst of one sample
        // lands alternately 3 and 4 samples apart, and the sampled activity truly
        // repeats at twice the period.
        cycles in 4.0..25.0f64,
        duty in 0.1..0.6f64,
        noise in 0.0..0.5f64,
        jitter in 0.0..0.05f64,
        seed: [u8; 16],
    ) {
        let period = n as f64 / cycles;
        if let Some(found) = detect_period(&bursts(n, period, duty, noise, jitter, seed), 1.0) {
            prop_assert!((0.0..=1.0).contains(&found.confidence));
            if found.confidence >= CONFIDENT {
                let error = (found.period_s - period).abs() / period;
                prop_assert!(error <= 0.05, "period {} found {:?}", period, found);
            }
        }
    }

    #[test]
    fn white_noise_has_no_confident_period(
        n in 16usize..600,
        kind in 0..3u8,
        seed: [u8; 16],
    ) {
        // Uniform, exponential and strongly skewed noise, all non-negative like rates.
        let mut uniform = noise_source(seed);
        let samples: Vec<f64> = (0..n)
            .map(|_| {
                let u = uniform().max(1e-12);
                match kind {
                    0 => u,
                    1 => -u.ln(),
                    _ => u.powi(4),
                }
            })
            .collect();
        if let Some(found) = detect_period(&samples, 1.0) {
            prop_assert!(found.confidence < CONFIDENT, "{:?}", found);
        }
    }
}

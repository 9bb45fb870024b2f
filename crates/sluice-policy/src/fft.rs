//! A fast Fourier transform of any length, for period detection: radix-2 for powers of
//! two and Bluestein's chirp-z for the rest (a window's length is whatever history a
//! job has, not a power of two). A plain DFT costs n² and a window of 28,000 samples
//! (IO-SETS' frame at 100 ms) would take seconds; this takes milliseconds.

use std::f64::consts::PI;

/// A complex number as (re, im).
pub type Complex = (f64, f64);

fn mul(a: Complex, b: Complex) -> Complex {
    (a.0 * b.0 - a.1 * b.1, a.0 * b.1 + a.1 * b.0)
}

fn conj(a: Complex) -> Complex {
    (a.0, -a.1)
}

/// In place, forward (e^{−2πijk/n}) when `inverse` is false; unscaled either way.
/// `data.len()` must be a power of two.
fn radix2(data: &mut [Complex], inverse: bool) {
    let n = data.len();
    if n <= 1 {
        return;
    }
    let bits = n.trailing_zeros();
    for i in 0..n {
        let j = i.reverse_bits() >> (usize::BITS - bits);
        if j > i {
            data.swap(i, j);
        }
    }
    let sign = if inverse { 1.0 } else { -1.0 };
    let mut len = 2;
    while len <= n {
        let angle = sign * 2.0 * PI / len as f64;
        // Twiddles computed from their angle each time, not by repeated multiplication:
        // the error of a product chain grows with the window's length.
        let half = len / 2;
        let twiddles: Vec<Complex> = (0..half)
            .map(|k| {
                let a = angle * k as f64;
                (a.cos(), a.sin())
            })
            .collect();
        for chunk in data.chunks_exact_mut(len) {
            let (lo, hi) = chunk.split_at_mut(half);
            for ((a, b), &w) in lo.iter_mut().zip(hi.iter_mut()).zip(&twiddles) {
                let t = mul(*b, w);
                *b = (a.0 - t.0, a.1 - t.1);
                *a = (a.0 + t.0, a.1 + t.1);
            }
        }
        len *= 2;
    }
}

/// The forward transform of `x` (any length), all n bins.
pub fn fft(x: &[Complex]) -> Vec<Complex> {
    let n = x.len();
    if n.is_power_of_two() || n <= 1 {
        let mut data = x.to_vec();
        radix2(&mut data, false);
        return data;
    }
    // Bluestein: X_k = conj(w_k) · Σ_j (x_j conj(w_j)) · w_{k−j}, w_j = e^{iπj²/n}, a
    // convolution done with power-of-two transforms of length ≥ 2n − 1.
    let m = (2 * n - 1).next_power_of_two();
    // j² mod 2n keeps the chirp's angle small, so that it stays exact for large j.
    let chirp: Vec<Complex> = (0..n)
        .map(|j| {
            let j2 = (j as u128 * j as u128 % (2 * n as u128)) as f64;
            let a = PI * j2 / n as f64;
            (a.cos(), a.sin())
        })
        .collect();
    let mut a = vec![(0.0, 0.0); m];
    for (slot, (&xj, &w)) in a.iter_mut().zip(x.iter().zip(&chirp)) {
        *slot = mul(xj, conj(w));
    }
    let mut b = vec![(0.0, 0.0); m];
    b[0] = chirp[0];
    for j in 1..n {
        b[j] = chirp[j];
        b[m - j] = chirp[j];
    }
    radix2(&mut a, false);
    radix2(&mut b, false);
    for (p, q) in a.iter_mut().zip(&b) {
        *p = mul(*p, *q);
    }
    radix2(&mut a, true);
    let scale = 1.0 / m as f64;
    (0..n)
        .map(|k| {
            let c = mul(a[k], conj(chirp[k]));
            (c.0 * scale, c.1 * scale)
        })
        .collect()
}

/// The autocorrelation Σ_j x_j x_{j+lag} for lags 0 … n−1 (linear, not circular: the
/// signal is padded with zeros to twice its length before the transform).
pub fn autocorrelation(x: &[f64]) -> Vec<f64> {
    let n = x.len();
    let m = (2 * n).next_power_of_two();
    let mut data = vec![(0.0, 0.0); m];
    for (slot, &v) in data.iter_mut().zip(x) {
        *slot = (v, 0.0);
    }
    radix2(&mut data, false);
    for c in &mut data {
        *c = (c.0 * c.0 + c.1 * c.1, 0.0);
    }
    radix2(&mut data, true);
    data.iter().take(n).map(|c| c.0 / m as f64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[Complex]) -> Vec<Complex> {
        let n = x.len();
        (0..n)
            .map(|k| {
                x.iter().enumerate().fold((0.0, 0.0), |acc, (j, &v)| {
                    let a = -2.0 * PI * (j * k % n) as f64 / n as f64;
                    let t = mul(v, (a.cos(), a.sin()));
                    (acc.0 + t.0, acc.1 + t.1)
                })
            })
            .collect()
    }

    #[test]
    fn the_transform_matches_the_definition_at_any_length() {
        for n in [1usize, 2, 3, 7, 8, 12, 31, 64, 100, 257] {
            let x: Vec<Complex> = (0..n)
                .map(|j| (((j * 7 + 3) % 11) as f64 - 5.0, ((j * 5) % 3) as f64))
                .collect();
            let (fast, slow) = (fft(&x), naive(&x));
            for (a, b) in fast.iter().zip(&slow) {
                assert!(
                    (a.0 - b.0).abs() < 1e-8 && (a.1 - b.1).abs() < 1e-8,
                    "n={n}"
                );
            }
        }
    }

    #[test]
    fn the_autocorrelation_is_the_lagged_sum() {
        let x: Vec<f64> = (0..37).map(|j| ((j * 13) % 7) as f64 - 3.0).collect();
        let r = autocorrelation(&x);
        for lag in 0..x.len() {
            let direct: f64 = x.iter().zip(&x[lag..]).map(|(a, b)| a * b).sum();
            assert!((r[lag] - direct).abs() < 1e-8, "lag {lag}");
        }
    }
}

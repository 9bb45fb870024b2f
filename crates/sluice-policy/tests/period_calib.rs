//! Calibration of period detection, not run in CI (`#[ignore]`): how often noise
//! reaches small p-values (`calib`: SEEDS windows per length and kind, default 2,000;
//! NS and KINDS select lengths and kinds), and which periodic bursts are found
//! (`power`). `cargo test --release -p sluice-policy --test period_calib -- --ignored
//! --nocapture`; docs/algorithms.md quotes their output.
use sluice_policy::period::detect_period;

/// xorshift64: a generator with no state but its seed, so each window is reproducible.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

#[test]
#[ignore]
fn calib() {
    let seeds: u64 = std::env::var("SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let ns: Vec<usize> = std::env::var("NS")
        .map(|v| v.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or(vec![
            8usize, 12, 16, 20, 24, 32, 40, 48, 64, 100, 200, 400, 1024,
        ]);
    let kinds: Vec<u64> = std::env::var("KINDS")
        .map(|v| v.split(',').map(|x| x.parse().unwrap()).collect())
        .unwrap_or((0..9).collect());
    for &n in &ns {
        for &kind in &kinds {
            let (mut found, mut c3, mut c4, mut conf) = (0, 0, 0, 0);
            let mut minp: f64 = 1.0;
            let mut maxc: f64 = 0.0;
            for seed in 0..seeds {
                let mut r =
                    Rng(seed.wrapping_mul(0x9E3779B97F4A7C15) ^ (n as u64 * 7919 + kind) | 1);
                let s: Vec<f64> = (0..n)
                    .map(|_| {
                        let u = r.next().max(1e-12);
                        match kind {
                            0 => u,
                            1 => -u.ln(),
                            2 => u.powi(4),
                            3 => (u * 4.0).floor(),
                            4 => {
                                if u < 0.1 {
                                    1.0
                                } else {
                                    0.0
                                }
                            }
                            5 => {
                                if u < 0.02 {
                                    1.0
                                } else {
                                    0.0
                                }
                            }
                            6 => {
                                if u < 0.05 {
                                    1.0
                                } else {
                                    0.0
                                }
                            }
                            7 => {
                                if u < 0.3 {
                                    1.0
                                } else {
                                    0.0
                                }
                            }
                            _ => (-u.ln() * 0.5).floor(),
                        }
                    })
                    .collect();
                if let Some(d) = detect_period(&s, 1.0) {
                    found += 1;
                    if d.p_value <= 1e-3 {
                        c3 += 1;
                    }
                    if d.p_value <= 1e-4 {
                        c4 += 1;
                    }
                    if d.confidence >= 0.8 {
                        conf += 1;
                    }
                    minp = minp.min(d.p_value);
                    maxc = maxc.max(d.confidence);
                }
            }
            println!(
                "n={n:4} kind={kind} found={found:6} p<=1e-3:{c3:5} p<=1e-4:{c4:5} confident:{conf} min p={minp:.2e} max conf={maxc:.3}"
            );
        }
    }
}

#[test]
#[ignore]
fn power() {
    for n in [256usize, 512, 1024] {
        for cycles in [3.0, 4.0, 6.0, 10.0, 20.0] {
            for duty in [0.05, 0.1, 0.25, 0.5] {
                for noise in [0.0, 0.1, 0.3] {
                    let mut ok = 0;
                    let mut minc: f64 = 1.0;
                    for seed in 0..20u64 {
                        let mut r = Rng(seed * 7919 + 17);
                        let s = bursts(n, n as f64 / cycles, duty, noise, &mut r);
                        if let Some(d) = detect_period(&s, 1.0) {
                            let err = (d.period_s - n as f64 / cycles).abs() / (n as f64 / cycles);
                            if d.confidence >= 0.8 && err <= 0.05 {
                                ok += 1;
                            }
                            minc = minc.min(d.confidence);
                        } else {
                            minc = 0.0;
                        }
                    }
                    if ok < 20 {
                        println!(
                            "n={n} cycles={cycles} duty={duty} noise={noise}: {ok}/20 min conf {minc:.2}"
                        );
                    }
                }
            }
        }
    }
}

/// `n` samples of bursts of `duty` of every `period`, from a random phase, with uniform
/// noise of standard deviation `noise` on every sample, clipped at zero like a rate.
fn bursts(n: usize, period: f64, duty: f64, noise: f64, r: &mut Rng) -> Vec<f64> {
    let mut samples = vec![0.0; n];
    let mut start = r.next() * period;
    while start < n as f64 {
        let end = ((start + (duty * period).max(1.0)) as usize).min(n);
        for s in &mut samples[start as usize..end] {
            *s += 1.0;
        }
        start += period;
    }
    for s in &mut samples {
        *s = (*s + noise * 3f64.sqrt() * (2.0 * r.next() - 1.0)).max(0.0);
    }
    samples
}

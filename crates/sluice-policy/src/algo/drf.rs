//! `drf`: dominant resource fairness over a metadata rate and a bandwidth at once, or
//! weighted max-min fairness over one resource.

use super::Allocator;
use crate::obs::{Amount, Round};

/// Dominant resource fairness (Ghodsi et al., NSDI 2011) over two pools at once: the
/// metadata rate (ops/s) and the bandwidth (bytes/s) of one file system.
///
/// A job's demand vector is its `arrivals`; it is given a fraction t ∈ [0, 1] of that
/// vector. Its dominant share is t · maxᵣ(demandᵣ / capacityᵣ). Progressive filling
/// raises every job's dominant share in proportion to its weight until the job's demand
/// is met or a resource it uses is exhausted; jobs that do not use an exhausted resource
/// keep growing. The result is the weighted max-min fair division of dominant shares,
/// capped by demand: a metadata-heavy job cannot crowd out a streaming job by being
/// cheap in bytes, and the reverse. None of the published I/O QoS systems offers this.
///
/// Over one resource (an `f64` pool) the dominant share is the share of that resource,
/// and the same filling is weighted max-min fairness capped by demand (water-filling
/// by weight), so the controllers can run `drf` on any pool.
#[derive(Debug, Clone, Copy, Default)]
pub struct Drf;

/// One job's demand as progressive filling sees it.
struct Claim {
    index: usize,
    demand: [f64; MAX_PARTS],
    /// The job's allocation grows by `demand / dominant · weight` per unit of the
    /// filling level; it is met when the level reaches `met_at`.
    per_level: [f64; MAX_PARTS],
    met_at: f64,
}

impl Claim {
    /// The claim of job `index` asking for `demand` with `weight` on a pool of `capacity`
    /// (its resources only); none when it asks for nothing.
    fn of(index: usize, demand: [f64; MAX_PARTS], weight: f64, capacity: &[f64]) -> Option<Self> {
        let (k, dominant) = capacity
            .iter()
            .enumerate()
            .map(|(r, c)| (r, demand[r] / c))
            .fold(
                (0, 0.0),
                |best, cur| if cur.1 > best.1 { cur } else { best },
            );
        // The fold never takes a NaN: a job asking for nothing has 0.
        if dominant <= 0.0 {
            return None;
        }
        // d / dominant ≤ capacity: no overflow for any weight. A demand whose share
        // overflowed to ∞ is never met, and grows at the pace of one merely larger than
        // the pool: d / dominant = capacity_k · d / d_k.
        let per_level = if dominant.is_finite() {
            demand.map(|d| d / dominant * weight)
        } else {
            demand.map(|d| capacity[k] * (d / demand[k]) * weight)
        };
        Some(Claim {
            index,
            demand,
            per_level,
            met_at: dominant / weight,
        })
    }
}

impl<A: Amount> Allocator<A> for Drf {
    fn allocate(&mut self, round: &Round<'_, A>) -> Vec<A> {
        const { assert!(A::PARTS.len() <= MAX_PARTS) };
        let parts = A::PARTS.len();
        let capacity = part_array(round.capacity());
        let mut claims: Vec<Claim> = round
            .jobs()
            .iter()
            .enumerate()
            .filter_map(|(index, job)| {
                let demand = part_array(job.arrivals);
                Claim::of(index, demand, job.weight_or_one(), &capacity[..parts])
            })
            .collect();
        claims.sort_by(|a, b| a.met_at.total_cmp(&b.met_at).then(a.index.cmp(&b.index)));

        let mut rates = vec![[0.0; MAX_PARTS]; round.jobs().len()];
        let mut used = [0.0; MAX_PARTS];
        let mut slope = claims.iter().fold([0.0; MAX_PARTS], |sum, claim| {
            std::array::from_fn(|r| sum[r] + claim.per_level[r])
        });
        let mut growing = vec![true; claims.len()];
        let mut next = 0;
        while next < claims.len() {
            if !growing[next] {
                next += 1;
                continue;
            }
            // The level at which each resource still in use runs out.
            let (exhausted, level) = (0..parts)
                .filter(|&r| slope[r] > 0.0)
                .map(|r| (r, ((capacity[r] - used[r]) / slope[r]).max(0.0)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .unwrap_or((usize::MAX, f64::INFINITY));
            let claim = &claims[next];
            if claim.met_at <= level {
                rates[claim.index] = claim.demand;
                stop(claim, claim.demand, &mut used, &mut slope);
                growing[next] = false;
                next += 1;
            } else {
                // Everyone still growing who uses the exhausted resource stops here.
                for (k, claim) in claims.iter().enumerate().skip(next) {
                    if growing[k] && claim.demand[exhausted] > 0.0 {
                        let given = claim.per_level.map(|p| p * level);
                        rates[claim.index] = given;
                        stop(claim, given, &mut used, &mut slope);
                        growing[k] = false;
                    }
                }
                slope[exhausted] = 0.0;
            }
        }
        rates
            .into_iter()
            .map(|rate| A::from_parts(&rate[..parts]))
            .collect()
    }
}

/// The most resources a pool divides: a metadata rate and a bandwidth.
const MAX_PARTS: usize = 2;

/// `amount`'s components; those past its own are 0, so they are never demanded.
fn part_array<A: Amount>(amount: A) -> [f64; MAX_PARTS] {
    std::array::from_fn(|r| {
        if r < A::PARTS.len() {
            amount.part(r)
        } else {
            0.0
        }
    })
}

/// Takes a job out of the filling with `given` allocated to it.
fn stop(
    claim: &Claim,
    given: [f64; MAX_PARTS],
    used: &mut [f64; MAX_PARTS],
    slope: &mut [f64; MAX_PARTS],
) {
    for r in 0..MAX_PARTS {
        used[r] += given[r];
        slope[r] = (slope[r] - claim.per_level[r]).max(0.0);
    }
}

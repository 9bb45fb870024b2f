//! A scenario file: jobs, the pool they share, the trace they replay, the set-ups to
//! compare (docs/experiments.md has the schema).

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use sluice_control::config::parse_duration;
use sluice_core::rule::Rate;

/// A whole scenario.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Its name, in titles and file names.
    pub name: String,
    /// The control interval of the controlled set-ups (default 1s).
    #[serde(default = "one_second", deserialize_with = "duration")]
    pub interval: Duration,
    /// Each set-up ends when its jobs have ended, or after this many seconds.
    #[serde(deserialize_with = "seconds")]
    pub timeout: Duration,
    /// The shared capacity.
    pub pool: Pool,
    /// The trace every job replays (scaled by its load).
    pub trace: TraceSpec,
    /// The jobs, in order of arrival.
    #[serde(rename = "job")]
    pub jobs: Vec<Job>,
    /// The set-ups, run one after another.
    #[serde(rename = "setup")]
    pub setups: Vec<Setup>,
}

/// The pool the jobs share (Max_R).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pool {
    /// The pool's name.
    pub name: String,
    /// Which calls count against it (a rule's conditions, e.g. `class=metadata`).
    #[serde(rename = "match")]
    pub matches: String,
    /// Its capacity, in calls per second.
    #[serde(deserialize_with = "rate")]
    pub capacity: Rate,
}

/// A synthetic trace with the published statistics (`sluice trace synth`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Mean calls per second of the whole trace.
    #[serde(deserialize_with = "rate")]
    pub mean: Rate,
    /// Its length in seconds.
    pub seconds: u32,
    /// The random seed.
    #[serde(default)]
    pub seed: u64,
}

/// One job: replayer processes that arrive together.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Job {
    /// The job id.
    pub name: String,
    /// When it arrives, in seconds from the start of the set-up.
    #[serde(default, deserialize_with = "seconds")]
    pub start: Duration,
    /// Replayer processes (each replays the trace × load ÷ processes).
    #[serde(default = "one")]
    pub processes: u32,
    /// The multiple of the trace it replays in all (Table 1's load proportion × jobs).
    #[serde(default = "unit")]
    pub load: f64,
    /// Its rate limit (reservation) in the pool.
    #[serde(deserialize_with = "rate")]
    pub limit: Rate,
    /// Its weight.
    #[serde(default = "unit")]
    pub weight: f64,
}

/// One way of running the jobs.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Setup {
    /// Its name (Baseline, PSFA, …).
    pub name: String,
    /// The pool's algorithm (`sluice alloc --help`), or `none`: no controller, no stage.
    pub algorithm: String,
}

fn one_second() -> Duration {
    Duration::from_secs(1)
}
fn one() -> u32 {
    1
}
fn unit() -> f64 {
    1.0
}

fn rate<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
    let text = String::deserialize(d)?;
    text.parse().map_err(serde::de::Error::custom)
}

fn seconds<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let s = f64::deserialize(d)?;
    Duration::try_from_secs_f64(s)
        .map_err(|_| serde::de::Error::custom(format!("{s}: not a number of seconds ≥ 0")))
}

fn duration<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

impl Scenario {
    /// Reads and checks a scenario file.
    pub fn load(path: &Path) -> Result<Scenario> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let s: Scenario = toml::from_str(&text).with_context(|| format!("{}", path.display()))?;
        s.check().with_context(|| format!("{}", path.display()))?;
        Ok(s)
    }

    fn check(&self) -> Result<()> {
        if self.jobs.is_empty() || self.setups.is_empty() {
            bail!("a scenario needs at least one [[job]] and one [[setup]]");
        }
        for j in &self.jobs {
            let positive = |x: f64| x.is_finite() && x > 0.0;
            if j.processes == 0 || !positive(j.load) || !positive(j.weight) {
                bail!(
                    "job {}: processes, load and weight must be above zero",
                    j.name
                );
            }
            if self.jobs.iter().filter(|o| o.name == j.name).count() > 1 {
                bail!("job {}: named twice", j.name);
            }
        }
        for s in &self.setups {
            if s.algorithm != "none" {
                sluice_policy::registry::find(&s.algorithm)
                    .with_context(|| format!("setup {} (or algorithm = \"none\")", s.name))?;
            }
        }
        Ok(())
    }

    /// The local controller's configuration for a controlled set-up.
    pub fn local_config(&self, algorithm: &str) -> String {
        let mut c = format!(
            "interval = \"{}ms\"\n\n[[pool]]\nname = \"{}\"\nmatch = \"{}\"\ncapacity = \"{}\"\nalgorithm = \"{algorithm}\"\n",
            self.interval.as_millis(),
            self.pool.name,
            self.pool.matches,
            self.pool.capacity
        );
        for j in &self.jobs {
            c += &format!(
                "\n[[job]]\njob = \"{}\"\npool = \"{}\"\nlimit = \"{}\"\nweight = {}\n",
                j.name, self.pool.name, j.limit, j.weight
            );
        }
        c
    }
}

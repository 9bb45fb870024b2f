//! The local controller's state directory: one JSON record per job it attached, written
//! atomically on every change, read back when it starts so that it adopts its jobs.
//!
//! The records and the policy kept from the global are written without waiting for the
//! disk (temp file and rename, no fsync): they are for a restart of the daemon, which
//! they survive, not of the machine, which ends its jobs (and whose global sends the
//! policy again). They are written under the local's lock, on the path of every launch
//! and policy push, which a busy disk must not hold up (with an fsync, launches beside a
//! large write took up to 633 ms: tests/bench/launch_busy_disk.sh).

use std::path::{Path, PathBuf};

use sluice_core::error::Chain;

use super::{JobRecord, LocalError};
use crate::config::persist::{replace_unsynced, write_atomically};
use crate::segment_file::file_safe;

fn jobs_dir(state_dir: &Path) -> PathBuf {
    state_dir.join("jobs")
}

fn record_path(state_dir: &Path, job: &str) -> PathBuf {
    jobs_dir(state_dir).join(format!("{}.json", file_safe(job)))
}

/// Fails, with one line saying what to do, unless this process may write in
/// `state_dir` (created if need be): a record that cannot be saved is a job lost at the
/// next restart, better known at start.
pub fn check_writable(state_dir: &Path) -> Result<(), LocalError> {
    let unwritable = |source| LocalError::StateDir {
        dir: state_dir.to_owned(),
        source,
    };
    let dir = jobs_dir(state_dir);
    std::fs::create_dir_all(&dir).map_err(unwritable)?;
    let probe = dir.join(".writable");
    write_atomically(&probe, b"").map_err(unwritable)?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Every record in `state_dir`; one that cannot be read is logged and skipped.
pub fn load(state_dir: &Path) -> Result<Vec<JobRecord>, LocalError> {
    let dir = jobs_dir(state_dir);
    let io = |doing: String| move |source| LocalError::Io { doing, source };
    std::fs::create_dir_all(&dir).map_err(io(format!(
        "cannot create the state directory {}",
        dir.display()
    )))?;
    let mut records = Vec::new();
    let read = io(format!("cannot read {}", dir.display()));
    for entry in std::fs::read_dir(&dir).map_err(read)? {
        let path = entry
            .map_err(io(format!("cannot read {}", dir.display())))?
            .path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<JobRecord>(&b).map_err(|e| e.to_string()))
        {
            Ok(record) => records.push(record),
            Err(e) => {
                tracing::warn!(path = %path.display(), "unreadable job record removed: {e}");
                let _ = std::fs::remove_file(&path);
            }
        }
    }
    Ok(records)
}

/// Writes `record`; a failure is logged (control goes on, only a restart would lose it).
pub fn save(state_dir: &Path, record: &JobRecord) {
    let path = record_path(state_dir, &record.job);
    let text = serde_json::to_vec_pretty(record).expect("a record serializes");
    if let Err(e) = replace_unsynced(&path, &text) {
        tracing::warn!(path = %path.display(), "cannot save the job record: {e}");
    }
}

/// Removes `job`'s record.
pub fn forget(state_dir: &Path, job: &str) {
    let _ = std::fs::remove_file(record_path(state_dir, job));
}

/// The pools and admin rules last received from the global, as rule texts.
#[derive(serde::Serialize, serde::Deserialize)]
struct SavedPolicy {
    pools: Vec<String>,
    rules: Vec<String>,
    /// Absent from a state directory written before pools had watches.
    #[serde(default)]
    watches: std::collections::BTreeMap<String, String>,
    /// Absent from a state directory written before pools had costs.
    #[serde(default)]
    costs: std::collections::BTreeMap<String, String>,
}

fn policy_path(state_dir: &Path) -> PathBuf {
    state_dir.join("policy.json")
}

/// Keeps the policy in force, so that a restarted local enforces it before its global
/// answers; a failure is logged.
pub fn save_policy(state_dir: &Path, policy: &super::Policy) {
    let saved = SavedPolicy {
        pools: policy.pools.iter().map(ToString::to_string).collect(),
        rules: policy.rules.iter().map(ToString::to_string).collect(),
        watches: policy.watches.clone(),
        costs: policy
            .costs
            .iter()
            .map(|(pool, costs)| (pool.clone(), costs.to_string()))
            .collect(),
    };
    let text = serde_json::to_vec_pretty(&saved).expect("a policy serializes");
    if let Err(e) = replace_unsynced(&policy_path(state_dir), &text) {
        tracing::warn!("cannot save the policy: {e}");
    }
}

/// The policy saved last, if any; one that cannot be read is logged and ignored.
pub fn load_policy(state_dir: &Path) -> Option<super::Policy> {
    let path = policy_path(state_dir);
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Err(e) => return ignored(&path, &e),
    };
    let policy = serde_json::from_slice::<SavedPolicy>(&bytes)
        .map_err(LocalError::from)
        .and_then(|saved| {
            super::Policy::from_proto(&crate::proto::Policy {
                pools: saved.pools,
                rules: saved.rules,
                interval_s: 0.0,
                watches: saved.watches,
                costs: saved.costs,
            })
        });
    match policy {
        Ok(policy) => Some(policy),
        Err(e) => ignored(&path, &e),
    }
}

/// No policy, and the log says why the one at `path` was not read.
fn ignored(path: &Path, e: &(dyn std::error::Error + 'static)) -> Option<super::Policy> {
    tracing::warn!(
        path = %path.display(),
        "saved policy ignored, the adopted jobs keep what their segments hold until the \
         global answers: {}",
        Chain(e)
    );
    None
}

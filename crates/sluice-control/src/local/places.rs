//! What a local controller warns of in the places its jobs name: a `--mount` that does
//! not exist on this node, or an `fs-type` of which no file system is mounted here. Such a
//! job runs, but its calls there are not managed, and nothing else would say so. Each is
//! logged when a job names it, and listed by `sluice status` for as long as it holds.

use std::collections::BTreeMap;
use std::path::Path;

use sluice_core::path::mounts_of_types;

/// The most problems remembered: launchers of any user name places, so the list is
/// bounded; the log has every one.
const MAX_KEPT: usize = 32;

/// A place a job named that this node does not have.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Problem {
    /// A `--mount` (plugstack `mount=`) that does not exist.
    Mount(String),
    /// An `--fs-type` (plugstack `fs-type=`) with no mount of that type.
    FsType(String),
}

impl Problem {
    /// Whether it still holds on this node.
    fn holds(&self, mountinfo: &str) -> bool {
        match self {
            Problem::Mount(path) => !Path::new(path).exists(),
            Problem::FsType(t) => mounts_of_types(mountinfo, std::slice::from_ref(t)).is_empty(),
        }
    }

    /// The warning, for the job that named it last.
    fn line(&self, node: &str, job: &str) -> String {
        match self {
            Problem::Mount(path) => format!(
                "mount {path:?} (job {job:?}): no such directory on node {node}; the job's \
                 calls under it are not managed"
            ),
            Problem::FsType(t) => format!(
                "fs-type {t:?} (job {job:?}): no file system of that type is mounted on node \
                 {node}; the job's calls on it are not managed"
            ),
        }
    }
}

/// The problems seen in the places jobs named, each with the last job that named it.
#[derive(Debug, Default)]
pub struct PlaceWarnings {
    seen: BTreeMap<Problem, String>,
}

impl PlaceWarnings {
    /// Checks the places job `job` names on `node`, logging each problem found.
    pub fn check(&mut self, node: &str, job: &str, mounts: &[String], fs_types: &[String]) {
        if mounts.is_empty() && fs_types.is_empty() {
            return;
        }
        let mountinfo = mountinfo();
        let named = mounts
            .iter()
            .map(|m| Problem::Mount(m.clone()))
            .chain(fs_types.iter().map(|t| Problem::FsType(t.clone())));
        for problem in named.filter(|p| p.holds(&mountinfo)) {
            tracing::warn!(job = %job, "{}", problem.line(node, job));
            if self.seen.len() < MAX_KEPT || self.seen.contains_key(&problem) {
                self.seen.insert(problem, job.to_owned());
            }
        }
    }

    /// The warnings that still hold (a directory made since, or a file system mounted,
    /// clears its own).
    pub fn current(&mut self, node: &str) -> Vec<String> {
        if self.seen.is_empty() {
            return Vec::new();
        }
        let mountinfo = mountinfo();
        self.seen.retain(|problem, _| problem.holds(&mountinfo));
        self.seen
            .iter()
            .map(|(problem, job)| problem.line(node, job))
            .collect()
    }
}

fn mountinfo() -> String {
    std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_mount_and_an_unmounted_type_warn_until_they_hold() {
        let dir = tempfile::tempdir().unwrap();
        let later = dir.path().join("later");
        let mut w = PlaceWarnings::default();
        let mounts = [later.display().to_string(), "/".to_owned()];
        w.check("n1", "7", &mounts, &["nosuchfs".to_owned()]);
        let now = w.current("n1");
        assert_eq!(now.len(), 2, "{now:?}");
        assert!(
            now.iter()
                .any(|l| l.contains("later") && l.contains("job \"7\""))
        );
        assert!(now.iter().any(|l| l.contains("fs-type \"nosuchfs\"")));
        std::fs::create_dir(&later).unwrap();
        assert_eq!(w.current("n1").len(), 1);
    }
}

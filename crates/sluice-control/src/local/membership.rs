//! Whether a process belongs to a job, as the kernel and the batch system recorded it, never
//! as the process says: a user's own launcher joins a job's attachment only when it is one
//! of the job's processes.
//!
//! Two records count. The process tree: a process of the job descends from one of the
//! job's launchers (slurmstepd, which root attached; under proctrack/pgid this is all Slurm
//! leaves). The job's cgroup: Slurm puts every task of job N in `…/job_N/…`, under
//! `slurm/uid_U/` (cgroup v1) or `slurmstepd.scope/` (cgroup v2), directories only root can
//! create or move a process into.

use std::path::Path;

/// Parents followed before giving up: deeper trees are not launched by a batch system.
const MAX_DEPTH: usize = 64;

/// Whether process `pid` is one of `launchers` or descends from one.
pub fn descends_from(pid: u32, launchers: &[u32]) -> bool {
    let mut at = pid;
    for _ in 0..MAX_DEPTH {
        if launchers.contains(&at) {
            return true;
        }
        match parent(at) {
            Some(p) if p > 1 => at = p,
            _ => return false,
        }
    }
    false
}

/// The parent of process `pid`, from `/proc/PID/stat`.
fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold anything, spaces and ')' included:
    // the fields that follow start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The Slurm job whose cgroup holds process `pid` running as `uid`, from
/// `/proc/PID/cgroup`.
pub fn slurm_job_of(pid: u32, uid: u32) -> Option<String> {
    let text =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("cgroup")).ok()?;
    text.lines()
        .filter_map(|line| line.splitn(3, ':').nth(2))
        .find_map(|path| job_in_cgroup_path(path, uid))
}

/// The job N of a cgroup path in Slurm's layout: `…/slurm/uid_U/job_N/…` (v1, for the
/// caller's own uid U) or `…/slurmstepd.scope/job_N/…` (v2). A `job_N` anywhere else is
/// not Slurm's (a user may name a directory of a cgroup tree delegated to it so).
pub fn job_in_cgroup_path(path: &str, uid: u32) -> Option<String> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    let user_dir = format!("uid_{uid}");
    parts.windows(2).find_map(|w| {
        let id = w[1].strip_prefix("job_")?;
        let slurms = w[0] == user_dir || w[0].ends_with("slurmstepd.scope");
        (slurms && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then(|| id.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slurms_cgroup_layouts_name_the_job() {
        for (path, uid, job) in [
            ("/slurm/uid_1000/job_42/step_0/task_0", 1000, Some("42")),
            ("/slurm_n1/uid_1000/job_42/step_batch", 1000, Some("42")),
            (
                "/system.slice/slurmstepd.scope/job_42/step_0/user/task_0",
                1000,
                Some("42"),
            ),
            (
                "/system.slice/n1_slurmstepd.scope/job_7/step_extern/user",
                5,
                Some("7"),
            ),
            // Another user's directory, or a job_ dir a user made in a tree of its own.
            ("/slurm/uid_1001/job_42/step_0", 1000, None),
            (
                "/user.slice/user-1000.slice/user@1000.service/job_42",
                1000,
                None,
            ),
            ("/system.slice/slurmstepd.scope/job_x/step_0", 1000, None),
            ("/", 1000, None),
        ] {
            assert_eq!(job_in_cgroup_path(path, uid).as_deref(), job, "{path}");
        }
    }

    #[test]
    fn a_process_descends_from_its_ancestors_only() {
        let me = std::process::id();
        let parent = parent(me).expect("a parent");
        assert!(descends_from(me, &[parent]));
        assert!(descends_from(me, &[me]));
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        assert!(descends_from(child.id(), &[me]));
        assert!(!descends_from(me, &[child.id()]));
        let _ = child.kill();
        let _ = child.wait();
    }
}

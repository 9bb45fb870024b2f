//! `sluice run`: a command under rules, attached to the node's local controller when one
//! listens, standalone otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sluice_core::config::StageConfig;
use sluice_core::rule::{Rule, RulesFile, parse_rule};
use sluice_core::stats::Stats;

use sluice_control::launch;
use sluice_control::launcher::{Attach, Unreachable, attach};
use sluice_control::program::{
    Held, Signals, find_command, preload, stage_path, start, wait_forwarding, write_stats,
};
use sluice_control::proto::AttachRequest;
use sluice_control::segment_file::{SHM_DIR, SegmentFile, file_safe};
use sluice_control::supervise::{IoUring, inspect};
use sluice_control::transport::CallError;

use crate::Usage;
use crate::client::{deadline, local_socket};

/// Run a command under rules.
///
/// The stage is preloaded into the command and every process it starts, and holds their
/// file-system calls to the rules given. When the node's local controller listens (see
/// --socket), the job is attached to it: every `sluice run` of the job on the node shares
/// one budget, and the controller's pools and rules apply too. Otherwise it runs
/// standalone, with only the rules given. A controller that does not answer within
/// --deadline is passed by: the command runs standalone (or, with --unreachable refuse,
/// not at all), and one line on stderr says so.
///
/// Rules are tried in order, first match wins: `--rule` options in the order given, then
/// the rules of `--rules FILE`. Without `--mount` or `--fs-type`, every path is managed
/// except /proc, /sys, /dev and /run.
///
/// A program the stage cannot enter (statically linked, or written in Go) is supervised:
/// it runs under a seccomp filter that stops its file-system calls, and its reads and
/// writes, in the kernel until `sluice run` has judged and admitted them through the
/// job's budget (see
/// docs/limitations.md for what that costs).
///
/// Example: sluice run --rule 'op=getattr rate=5k/s' --mount /scratch --stats s.json -- ./app
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    spec: JobSpec,
    /// Write the job's counters as JSON to FILE ('-' for stdout) when the command ends
    /// (attached: the counters of the whole job on this node).
    #[arg(long, value_name = "FILE")]
    stats: Option<PathBuf>,
    /// Never attach to a local controller.
    #[arg(long, conflicts_with = "socket")]
    standalone: bool,
    #[command(flatten)]
    io_uring: IoUringArg,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

/// What a job does with io_uring (`sluice run`, `sluice supervise`).
#[derive(clap::Args, Debug, Clone, Copy)]
pub(crate) struct IoUringArg {
    /// io_uring in the job: 'allow' lets programs set up rings (what moves through them
    /// is not held); 'deny' answers io_uring_setup with ENOSYS, as a kernel without
    /// io_uring would, so that programs fall back to plain calls, which are held. Sites
    /// set it for everyone with $SLUICE_IO_URING.
    #[arg(
        long,
        value_name = "allow|deny",
        env = "SLUICE_IO_URING",
        default_value = "allow"
    )]
    pub(crate) io_uring: IoUring,
}

/// A job as its launcher describes it: its rules, the places it manages, its id, and the
/// local controller it attaches to (`sluice run`, `sluice attach`).
#[derive(clap::Args, Debug)]
pub struct JobSpec {
    /// A rule, e.g. 'md: op=getattr,open rate=5k/s' or 'class=data size>=1MiB rate=50MiB/s'
    /// (repeatable; see docs/rules.md).
    #[arg(long = "rule", value_name = "RULE")]
    rules: Vec<String>,
    /// A TOML file of rules (see docs/rules.md), tried after the --rule options.
    #[arg(long = "rules", value_name = "FILE")]
    rules_file: Option<PathBuf>,
    /// Manage this file system or directory (repeatable).
    #[arg(long = "mount", value_name = "PATH")]
    mounts: Vec<String>,
    /// Manage every mount of these file-system types, from /proc/self/mountinfo
    /// (e.g. lustre,beegfs,gpfs,nfs,nfs4,ceph,fuse.*).
    #[arg(long = "fs-type", value_name = "TYPE[,TYPE]", value_delimiter = ',')]
    fs_types: Vec<String>,
    /// Job identifier; default: SLURM_JOB_ID, PBS_JOBID, LSB_JOBID, FLUX_JOB_ID,
    /// SLUICE_JOB_ID, else EXE.UID. A user's ids are its own: the controller joins this
    /// launcher to a job that root attached (the Slurm plugin's) only when it runs inside
    /// that job, and otherwise keys the job as uidUID:ID, apart from every other user's.
    #[arg(long)]
    job: Option<String>,
    /// The local controller's socket (default $SLUICE_SOCKET, else
    /// /run/sluice/local.sock); when nothing listens there, the job runs standalone.
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Root only: attach the job for this user (a uid), as a Slurm prolog does for
    /// $SLURM_JOB_UID. The job's id is then the batch system's, and the user's own
    /// launchers inside the job join it. The local controller refuses it from anyone else.
    #[arg(long, value_name = "UID")]
    uid: Option<u32>,
    /// The job's account, by which a pool with a tree groups it (default
    /// $SLURM_JOB_ACCOUNT). Outside Slurm nothing checks it: a site that divides by
    /// account lets only root's launchers (a prolog's --uid) name one it trusts.
    #[arg(long, value_name = "NAME")]
    account: Option<String>,
    /// The job's QOS (default $SLURM_JOB_QOS), for a tree with a qos level.
    #[arg(long, value_name = "NAME")]
    qos: Option<String>,
    /// The job's partition (default $SLURM_JOB_PARTITION), for a tree with a partition
    /// level.
    #[arg(long, value_name = "NAME")]
    partition: Option<String>,
    /// How long to wait for the local controller's answer, e.g. 500ms or 5s.
    #[arg(long, value_name = "DUR", env = "SLUICE_DEADLINE", default_value = "2s",
          value_parser = deadline)]
    deadline: Duration,
    /// What to do when the local controller's socket is there but nothing answers within
    /// --deadline: 'standalone' runs the job under its own rules only; 'refuse' does not
    /// run it. Sites set it for everyone with $SLUICE_UNREACHABLE.
    #[arg(
        long,
        value_name = "standalone|refuse",
        env = "SLUICE_UNREACHABLE",
        default_value = "standalone"
    )]
    unreachable: Unreachable,
}

impl RunArgs {
    /// Runs the command; returns its exit status (128 + signal when it was killed).
    pub fn run(&self) -> Result<i32> {
        let signals = Signals::of_this_process();
        let config = self.spec.config(&self.command[0])?;
        let stage = stage_path()?;
        let attached = match self.standalone {
            true => Attach::Absent,
            false => self.spec.attach(&config)?,
        };
        let seg = match &attached {
            Attach::Attached(a) => SegmentFile::open(a.segment.clone())?,
            Attach::Absent | Attach::Unanswered(_) => self.spec.standalone_segment(&config)?,
        };
        let preload = preload(&stage);
        let why = find_command(&self.command[0]).and_then(|p| inspect(&p).ok().flatten());
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..])
            .env("LD_PRELOAD", preload)
            .env("SLUICE_SEGMENT", seg.path());
        let held = start(
            &mut cmd,
            why.is_some(),
            self.io_uring.io_uring,
            seg.path(),
            self.spec.job_uid(),
            signals,
        )?;
        let Held {
            mut child,
            supervisor,
        } = match held {
            Ok(held) => held,
            Err(code) => {
                eprintln!("sluice: cannot run '{}': {}", self.command[0], code.1);
                return Ok(code.0);
            }
        };
        let code = wait_forwarding(&mut child)?;
        if let Some(out) = &self.stats {
            // Attached, the segment's rules and pools are the controller's, as of now.
            let (text, _) = seg.segment().config()?;
            let now = StageConfig::from_text(&text)?;
            let stats = Stats::new(&now.job, &now.rules, &now.pools, &seg.segment().totals());
            let supervised = supervisor
                .as_ref()
                .map(|s| s.supervised())
                .unwrap_or_default();
            write_stats(out, &stats, &supervised)?;
        }
        drop(attached);
        Ok(code)
    }
}

impl JobSpec {
    /// Attaches to the node's local controller. A controller that does not answer in time
    /// is [`Attach::Unanswered`] after one line on stderr when the site lets the job run
    /// standalone, an error when it does not; a refusal is an error.
    pub fn attach(&self, config: &StageConfig) -> Result<Attach> {
        let socket = local_socket(self.socket.as_ref());
        let attached = attach(&socket, self.attach_request(config), self.deadline)
            .map_err(CallError::Status)?;
        if let Attach::Unanswered(why) = &attached {
            let job = &config.job;
            match self.unreachable {
                Unreachable::Standalone => {
                    eprintln!("sluice: {why}; job {job} runs standalone, under its own rules only")
                }
                Unreachable::Refuse => {
                    bail!("{why}; job {job} not started (--unreachable refuse)")
                }
            }
        }
        Ok(attached)
    }

    /// What the local controller is told of this launcher.
    fn attach_request(&self, config: &StageConfig) -> AttachRequest {
        let mut request = launch::attach_request(config, self.job_uid());
        let given = [&self.account, &self.qos, &self.partition];
        let asked = [
            &mut request.account,
            &mut request.qos,
            &mut request.partition,
        ];
        for (given, asked) in given.into_iter().zip(asked) {
            if let Some(g) = given {
                g.clone_into(asked);
            }
        }
        request
    }

    /// Who the job runs as: `--uid`, else whoever runs this.
    fn job_uid(&self) -> u32 {
        self.uid.unwrap_or_else(launch::real_uid)
    }

    /// A segment of the job's own, under its own rules only, for its user, removed when
    /// dropped: where the job runs without a controller.
    pub fn standalone_segment(&self, config: &StageConfig) -> Result<SegmentFile> {
        let name = format!("sluice.{}.{}", file_safe(&config.job), std::process::id());
        let owner = self.uid.map(|uid| {
            let gid = sluice_control::identity::primary_gid(uid).unwrap_or(uid);
            (uid, gid)
        });
        Ok(SegmentFile::create(
            Path::new(SHM_DIR).join(name),
            config,
            &[],
            owner,
        )?)
    }

    /// Everything the stage needs, checked before anything runs; `command` names the
    /// job when nothing else does.
    pub fn config(&self, command: &str) -> Result<StageConfig> {
        let mut rules: Vec<Rule> = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            rules.push(parse_rule(r).with_context(|| format!("--rule #{} '{r}'", i + 1))?);
        }
        if let Some(f) = &self.rules_file {
            rules.extend(RulesFile::load(f)?);
        }
        if let Some(t) = self
            .fs_types
            .iter()
            .find(|t| t.is_empty() || t.contains(char::is_whitespace))
        {
            return Err(Usage(format!(
                "--fs-type: '{t}' is not a file-system type (e.g. lustre, nfs4, fuse.*)"
            ))
            .into());
        }
        let (mounts, fs_types) = (self.mounts.clone(), self.fs_types.clone());
        let config = launch::stage_config(
            command,
            self.job.as_deref(),
            self.job_uid(),
            rules,
            mounts,
            fs_types,
        )?;
        Ok(config)
    }
}

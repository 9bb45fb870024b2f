//! What the site's plugstack.conf line and the user's `--sluice` option ask for.

use std::path::PathBuf;
use std::time::Duration;

use sluice_control::config::{DurationError, parse_duration};
use sluice_control::launcher::Unreachable;
use sluice_control::transport::DEFAULT_DEADLINE;
use sluice_core::blame_all;
use sluice_core::rule::{Rule, RulesFile, RulesFileError};

/// The keys plugstack.conf may give, for error messages.
const KEYS: &str =
    "default, socket, stage, mount, fs-type, deadline, unreachable, report, scontrol, supervise";

/// Why the plugin's arguments in plugstack.conf cannot be used: the site administrator's
/// input, which Slurm then refuses to start the plugin with (srun says why).
#[derive(Debug, thiserror::Error)]
pub enum SiteError {
    /// An argument without `=`.
    #[error("plugstack.conf: '{0}' is not KEY=VALUE (keys: {KEYS})")]
    NotKeyValue(String),
    /// A key the plugin does not know.
    #[error("plugstack.conf: unknown key '{0}' (keys: {KEYS})")]
    UnknownKey(String),
    /// A value not among those the key takes.
    #[error("plugstack.conf: {key}={value}: expected {expected}")]
    Value {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What the key takes: "on or off", "an absolute path".
        expected: &'static str,
    },
    /// A value that is not a duration.
    #[error("plugstack.conf: {key}={value}: {source}{or}")]
    Duration {
        /// The key.
        key: &'static str,
        /// The value given.
        value: String,
        /// What else the key takes besides a duration (" (or off)"), or "".
        or: &'static str,
        /// Why it is not a duration.
        source: DurationError,
    },
}

/// Why the rules a job named with `--sluice=FILE` cannot be used: the user's input, which
/// fails the job (before it is queued, in srun, sbatch and salloc).
#[derive(Debug, thiserror::Error)]
#[error("--sluice={}: {source}", file.display())]
pub struct AskError {
    /// The file the job named.
    pub file: PathBuf,
    /// Why its rules cannot be read.
    pub source: RulesFileError,
}

// plugstack.conf is the site administrator's; a rules file, the job's user's: both are
// what someone typed, and fail the same way again until it is corrected.
blame_all!(Input: SiteError, AskError);

/// How long a step's end waits for the job's report unless `report=` says: a few of the
/// local's default intervals (the local reaps the job at its next one).
pub const DEFAULT_REPORT_WAIT: Duration = Duration::from_secs(5);

/// The site's settings: the arguments after the plugin's path in plugstack.conf.
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    /// Whether a job that says nothing is attached (`default=on`) or left alone
    /// (`default=off`: only jobs run with `--sluice` are).
    pub on_by_default: bool,
    /// The local controller's socket (`socket=`).
    pub socket: PathBuf,
    /// The stage to preload (`stage=`); default: `libsluice_stage.so` beside the plugin.
    pub stage: Option<PathBuf>,
    /// The places managed (`mount=`, repeatable); none: every path but /proc, /sys, /dev
    /// and /run, or those of `fs-type=`.
    pub mounts: Vec<String>,
    /// File-system types whose mounts are managed (`fs-type=lustre,nfs4`).
    pub fs_types: Vec<String>,
    /// How long slurmstepd waits for the local controller's answer (`deadline=2s`).
    pub deadline: Duration,
    /// What a step does when the controller's socket is there but nothing answers in
    /// time (`unreachable=standalone|refuse`).
    pub unreachable: Unreachable,
    /// How long a step's end waits, at most, for the job's report to put its summary in
    /// Slurm's AdminComment (`report=5s`); `None` (`report=off`) leaves AdminComment
    /// alone.
    pub report: Option<Duration>,
    /// The `scontrol` that sets AdminComment (`scontrol=`).
    pub scontrol: PathBuf,
    /// Whether a task whose program is static or Go is held through seccomp by a
    /// supervisor of its own (`supervise=on`, the default) or runs unheld (`off`).
    pub supervise: bool,
}

impl Default for Site {
    fn default() -> Self {
        Site {
            on_by_default: true,
            socket: PathBuf::from("/run/sluice/local.sock"),
            stage: None,
            mounts: Vec::new(),
            fs_types: Vec::new(),
            deadline: DEFAULT_DEADLINE,
            unreachable: Unreachable::default(),
            report: Some(DEFAULT_REPORT_WAIT),
            scontrol: PathBuf::from("/usr/bin/scontrol"),
            supervise: true,
        }
    }
}

impl Site {
    /// Reads plugstack.conf's arguments, e.g. `default=off socket=/run/sluice/local.sock`.
    pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Site, SiteError> {
        let mut site = Site::default();
        for arg in args {
            let Some((key, value)) = arg.split_once('=') else {
                return Err(SiteError::NotKeyValue(arg.to_owned()));
            };
            match key {
                "default" => site.on_by_default = on_off("default", value)?,
                "socket" => site.socket = absolute("socket", value)?,
                "stage" => site.stage = Some(absolute("stage", value)?),
                "mount" => site
                    .mounts
                    .push(absolute("mount", value)?.display().to_string()),
                "fs-type" => site.fs_types.extend(
                    value
                        .split(',')
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned),
                ),
                "deadline" => site.deadline = duration("deadline", value, "")?,
                "unreachable" => {
                    site.unreachable = value.parse().map_err(|_| SiteError::Value {
                        key: "unreachable",
                        value: value.to_owned(),
                        expected: "standalone or refuse",
                    })?
                }
                "report" => {
                    site.report = match value {
                        "off" => None,
                        _ => Some(duration("report", value, " (or off)")?),
                    }
                }
                "scontrol" => site.scontrol = absolute("scontrol", value)?,
                "supervise" => site.supervise = on_off("supervise", value)?,
                _ => return Err(SiteError::UnknownKey(key.to_owned())),
            }
        }
        Ok(site)
    }
}

/// `value` of `key`, which takes `on` or `off`.
fn on_off(key: &'static str, value: &str) -> Result<bool, SiteError> {
    match value {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(SiteError::Value {
            key,
            value: value.to_owned(),
            expected: "on or off",
        }),
    }
}

/// `value` of `key`, which takes an absolute path.
fn absolute(key: &'static str, value: &str) -> Result<PathBuf, SiteError> {
    if !value.starts_with('/') {
        return Err(SiteError::Value {
            key,
            value: value.to_owned(),
            expected: "an absolute path",
        });
    }
    Ok(PathBuf::from(value))
}

/// `value` of `key`, which takes a duration (or what `or` says).
fn duration(key: &'static str, value: &str, or: &'static str) -> Result<Duration, SiteError> {
    parse_duration(value).map_err(|source| SiteError::Duration {
        key,
        value: value.to_owned(),
        or,
        source,
    })
}

/// What a job asked for with `--sluice[=off|RULE-FILE]`.
#[derive(Clone, Debug, PartialEq)]
pub enum Ask {
    /// `--sluice`: attached, under the controller's pools and rules.
    On,
    /// `--sluice=off`: untouched.
    Off,
    /// `--sluice=FILE`: attached, with the rules of FILE as the job's own.
    Rules(PathBuf),
}

impl Ask {
    /// Reads the option's argument (`None`: given without one).
    pub fn parse(arg: Option<&str>) -> Ask {
        match arg {
            None | Some("") | Some("on") => Ask::On,
            Some("off") => Ask::Off,
            Some(file) => Ask::Rules(PathBuf::from(file)),
        }
    }

    /// The job's own rules: those of its rules file, checked.
    pub fn rules(&self) -> Result<Vec<Rule>, AskError> {
        match self {
            Ask::Rules(file) => RulesFile::load(file).map_err(|source| AskError {
                file: file.clone(),
                source,
            }),
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use sluice_core::error::{Blame, Chain, Fault};

    use super::*;

    #[test]
    fn site_arguments() {
        let site = Site::parse([
            "default=off",
            "socket=/run/s.sock",
            "mount=/scratch",
            "mount=/home",
            "fs-type=lustre,nfs4",
            "deadline=500ms",
            "unreachable=refuse",
            "report=off",
            "scontrol=/opt/slurm/bin/scontrol",
            "supervise=off",
        ])
        .unwrap();
        assert!(!site.supervise && Site::default().supervise);
        assert_eq!(site.report, None);
        assert_eq!(site.scontrol, PathBuf::from("/opt/slurm/bin/scontrol"));
        assert_eq!(
            Site::parse(["report=2s"]).unwrap().report,
            Some(Duration::from_secs(2))
        );
        assert_eq!(Site::default().report, Some(DEFAULT_REPORT_WAIT));
        assert!(!site.on_by_default);
        assert_eq!(site.socket, PathBuf::from("/run/s.sock"));
        assert_eq!(site.mounts, ["/scratch", "/home"]);
        assert_eq!(site.fs_types, ["lustre", "nfs4"]);
        assert_eq!(site.deadline, Duration::from_millis(500));
        assert_eq!(site.unreachable, Unreachable::Refuse);
        assert_eq!(Site::parse([]).unwrap(), Site::default());
        assert_eq!(Site::default().deadline, Duration::from_secs(2));
        assert_eq!(Site::default().unreachable, Unreachable::Standalone);
        for (bad, says) in [
            ("default=maybe", "default=maybe: expected on or off"),
            (
                "socket=rel.sock",
                "socket=rel.sock: expected an absolute path",
            ),
            ("colour=blue", "unknown key 'colour' (keys: default, "),
            ("mount", "'mount' is not KEY=VALUE"),
            ("deadline=soon", "deadline=soon: \"soon\" is not a duration"),
            (
                "unreachable=wait",
                "unreachable=wait: expected standalone or refuse",
            ),
            (
                "report=later",
                "report=later: \"later\" is not a duration (e.g. 200ms, 1s) (or off)",
            ),
            (
                "scontrol=scontrol",
                "scontrol=scontrol: expected an absolute path",
            ),
            ("supervise=maybe", "supervise=maybe: expected on or off"),
        ] {
            let e = Site::parse([bad]).unwrap_err();
            assert_eq!(e.fault(), Fault::Input, "{bad}");
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("plugstack.conf: {says}")),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn the_users_option() {
        assert_eq!(Ask::parse(None), Ask::On);
        assert_eq!(Ask::parse(Some("off")), Ask::Off);
        assert_eq!(
            Ask::parse(Some("/home/u/r.toml")),
            Ask::Rules("/home/u/r.toml".into())
        );
        let e = Ask::parse(Some("/nonexistent/r.toml")).rules().unwrap_err();
        assert_eq!(e.fault(), Fault::Input);
        let line = Chain(&e).to_string();
        assert!(
            line.starts_with("--sluice=/nonexistent/r.toml: /nonexistent/r.toml: ")
                && line.contains("No such file"),
            "{line}"
        );
        let rules = std::env::temp_dir().join(format!("sluice-spank-{}.toml", std::process::id()));
        std::fs::write(
            &rules,
            "[[rule]]\nmatch = \"op=getattr\"\nrate = \"soon\"\n",
        )
        .unwrap();
        let e = Ask::parse(rules.to_str()).rules().unwrap_err();
        std::fs::remove_file(&rules).unwrap();
        assert!(e.to_string().contains("soon"), "{e}");
    }
}

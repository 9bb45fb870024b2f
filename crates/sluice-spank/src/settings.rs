//! What the site's plugstack.conf line and the user's `--sluice` option ask for.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use sluice_control::config::parse_duration;
use sluice_control::launcher::Unreachable;
use sluice_control::transport::DEFAULT_DEADLINE;
use sluice_core::rule::{Rule, RulesFile};

/// The keys plugstack.conf may give, for error messages.
const KEYS: &str =
    "default, socket, stage, mount, fs-type, deadline, unreachable, report, scontrol, supervise";

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
    pub fn parse<'a>(args: impl IntoIterator<Item = &'a str>) -> Result<Site> {
        let mut site = Site::default();
        for arg in args {
            let Some((key, value)) = arg.split_once('=') else {
                bail!("plugstack.conf: '{arg}' is not KEY=VALUE (keys: {KEYS})");
            };
            match key {
                "default" => {
                    site.on_by_default = match value {
                        "on" => true,
                        "off" => false,
                        _ => bail!("plugstack.conf: default={value}: expected on or off"),
                    }
                }
                "socket" => site.socket = absolute(key, value)?,
                "stage" => site.stage = Some(absolute(key, value)?),
                "mount" => site
                    .mounts
                    .push(absolute(key, value)?.display().to_string()),
                "fs-type" => site.fs_types.extend(
                    value
                        .split(',')
                        .filter(|t| !t.is_empty())
                        .map(str::to_owned),
                ),
                "deadline" => {
                    site.deadline = parse_duration(value)
                        .map_err(|e| anyhow::anyhow!("plugstack.conf: deadline={value}: {e}"))?
                }
                "unreachable" => {
                    site.unreachable = value
                        .parse()
                        .map_err(|e| anyhow::anyhow!("plugstack.conf: unreachable={e}"))?
                }
                "report" => {
                    site.report = match value {
                        "off" => None,
                        _ => Some(parse_duration(value).map_err(|e| {
                            anyhow::anyhow!("plugstack.conf: report={value}: {e} (or off)")
                        })?),
                    }
                }
                "scontrol" => site.scontrol = absolute(key, value)?,
                "supervise" => {
                    site.supervise = match value {
                        "on" => true,
                        "off" => false,
                        _ => bail!("plugstack.conf: supervise={value}: expected on or off"),
                    }
                }
                _ => bail!("plugstack.conf: unknown key '{key}' (keys: {KEYS})"),
            }
        }
        Ok(site)
    }
}

fn absolute(key: &str, value: &str) -> Result<PathBuf> {
    if !value.starts_with('/') {
        bail!("plugstack.conf: {key}={value}: expected an absolute path");
    }
    Ok(PathBuf::from(value))
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
    pub fn rules(&self) -> Result<Vec<Rule>> {
        match self {
            Ask::Rules(file) => {
                RulesFile::load(file).with_context(|| format!("--sluice={}", file.display()))
            }
            _ => Ok(Vec::new()),
        }
    }
}

#[cfg(test)]
mod tests {
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
        for bad in [
            "default=maybe",
            "socket=rel.sock",
            "colour=blue",
            "mount",
            "deadline=soon",
            "unreachable=wait",
            "report=later",
            "scontrol=scontrol",
            "supervise=maybe",
        ] {
            let e = Site::parse([bad]).unwrap_err().to_string();
            assert!(e.starts_with("plugstack.conf: "), "{bad}: {e}");
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
        assert!(
            format!("{e:#}").contains("--sluice=/nonexistent/r.toml"),
            "{e:#}"
        );
    }
}

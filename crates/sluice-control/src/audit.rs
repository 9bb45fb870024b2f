//! The audit trail: one log line, under the tracing target `audit`, for every
//! administrator's change (pool set/rm, rule start/change/stop, job set, reload) and
//! every refusal (an attachment or a join, an admin change, a local controller's link),
//! saying who (uid and user name), from where (the UNIX peer's pid, or the remote
//! address), what, and the old and new value where there is an old one; and the counter
//! `sluice_audit_events_total{action,outcome}` on `/metrics`.
//!
//! Every such event goes through [`Event`], so that the line has one form wherever it is
//! written: a site greps `audit` in the journal, or keeps the target apart with
//! `SLUICE_LOG_LEVEL=audit=info,warn`.

use std::fmt;
use std::net::SocketAddr;
use std::sync::LazyLock;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use tonic::Request;

use crate::identity::user_name;
use crate::transport::peer_cred;

/// The counter's labels: which action, how it ended.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AuditLabels {
    /// `pool_set`, `pool_rm`, `rule_start`, `rule_change`, `rule_stop`, `job_set`,
    /// `share_set`, `reload`, `attach`, `join`, `link`, `costs_learned`.
    pub action: String,
    /// `done`, `refused` (the caller may not), `failed` (the change was wrong or could
    /// not be saved).
    pub outcome: String,
}

/// Every audit event of this process, counted; each daemon's registry exports it.
static EVENTS: LazyLock<Family<AuditLabels, Counter>> = LazyLock::new(Family::default);

/// The process's audit counter, for a `/metrics` registry.
pub fn events() -> Family<AuditLabels, Counter> {
    EVENTS.clone()
}

/// How an audited event ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done as asked.
    Done,
    /// The caller may not do it.
    Refused,
    /// The request was wrong (bad input, nothing of that name) or could not be saved.
    Failed,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
        }
    }
}

/// Who asked, as far as the transport tells.
#[derive(Clone, Debug, Default)]
pub struct Who {
    /// The caller's uid (a UNIX socket's peer).
    pub uid: Option<u32>,
    /// The caller's process (a UNIX socket's peer).
    pub pid: Option<u32>,
    /// The caller's address (TCP).
    pub remote: Option<SocketAddr>,
    /// What asked when no caller did (`SIGHUP`, a server whose figures changed a pool).
    pub via: Option<std::borrow::Cow<'static, str>>,
}

impl Who {
    /// The caller of a gRPC request: its credentials on a UNIX socket, else its address.
    pub fn of<T>(request: &Request<T>) -> Who {
        match peer_cred(request) {
            Some(peer) => Who::unix(peer.uid, peer.pid),
            None => Who {
                remote: request.remote_addr(),
                ..Who::default()
            },
        }
    }

    /// A peer on a UNIX socket.
    pub fn unix(uid: u32, pid: Option<u32>) -> Who {
        Who {
            uid: Some(uid),
            pid,
            ..Who::default()
        }
    }

    /// A caller over TCP.
    pub fn remote(addr: Option<SocketAddr>) -> Who {
        Who {
            remote: addr,
            ..Who::default()
        }
    }

    /// No caller: the daemon was told by `via` (a signal).
    pub fn signal(via: &'static str) -> Who {
        Who {
            via: Some(via.into()),
            ..Who::default()
        }
    }

    /// No caller: the figures read from a server changed something (`ceph-mds:PATH`).
    pub fn server(source: impl fmt::Display) -> Who {
        Who {
            via: Some(source.to_string().into()),
            ..Who::default()
        }
    }
}

impl fmt::Display for Who {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = false;
        if let Some(uid) = self.uid {
            write!(f, "uid {uid}")?;
            if let Some(name) = user_name(uid) {
                write!(f, " ({name})")?;
            }
            said = true;
        }
        if let Some(pid) = self.pid {
            write!(f, "{}pid {pid}", if said { " " } else { "" })?;
            said = true;
        }
        if let Some(addr) = self.remote {
            write!(f, "{}{addr}", if said { " " } else { "" })?;
            said = true;
        }
        match (self.via.as_deref(), said) {
            (Some(via), _) => write!(f, "{}{via}", if said { " " } else { "" }),
            (None, false) => f.write_str("an unknown caller"),
            (None, true) => Ok(()),
        }
    }
}

/// One audited event: an action by someone on something.
pub struct Event<'a> {
    action: &'static str,
    who: &'a Who,
    what: String,
    job: Option<String>,
    node: Option<String>,
}

impl<'a> Event<'a> {
    /// `action` (a label of [`AuditLabels`]) by `who` on `what` (`pool "md"`, `job 42`).
    pub fn new(action: &'static str, who: &'a Who, what: impl fmt::Display) -> Event<'a> {
        Event {
            action,
            who,
            what: what.to_string(),
            job: None,
            node: None,
        }
    }

    /// The job the event is about, as a field of its own (`job=4242`).
    pub fn job(mut self, job: &str) -> Self {
        self.job = Some(clean(job));
        self
    }

    /// The node a caller claims to be, as a field of its own (`node="n017"`, quoted: it
    /// is the caller's text).
    pub fn node(mut self, node: &str) -> Self {
        self.node = Some(node.to_owned());
        self
    }

    /// Done: `old` → `new`, each absent when the thing did not exist before or does not
    /// after.
    pub fn done(&self, old: Option<&str>, new: Option<&str>) {
        let change = match (old, new) {
            (None, None) => String::new(),
            (old, new) => format!(
                ": {} → {}",
                old.map_or("(none)".into(), clean),
                new.map_or("(none)".into(), clean)
            ),
        };
        self.log(Outcome::Done, &change);
    }

    /// Refused (the caller may not) or failed (the request was wrong), because `why`.
    pub fn not_done(&self, outcome: Outcome, why: &str) {
        // A refusal's reason often names the item first (`pool "x": estimator: …`), as
        // the line already does.
        let why = why
            .strip_prefix(self.what.as_str())
            .and_then(|rest| rest.strip_prefix(": "))
            .unwrap_or(why);
        self.log(outcome, &format!(": {}", clean(why)));
    }

    fn log(&self, outcome: Outcome, tail: &str) {
        EVENTS
            .get_or_create(&AuditLabels {
                action: self.action.to_owned(),
                outcome: outcome.name().to_owned(),
            })
            .inc();
        let who = self.who;
        let user = who.uid.and_then(user_name);
        let from = who.remote.map(|a| a.to_string());
        let (action, outcome_name) = (self.action, outcome.name());
        let what = clean(&self.what);
        macro_rules! line {
            ($level:expr) => {
                tracing::event!(
                    target: "audit",
                    $level,
                    action,
                    outcome = outcome_name,
                    uid = who.uid,
                    user = user.as_deref(),
                    pid = who.pid,
                    from = from.as_deref(),
                    job = self.job.as_ref().map(tracing::field::display),
                    node = self.node.as_ref().map(tracing::field::debug),
                    "{action} {outcome_name} by {who}: {what}{tail}"
                )
            };
        }
        match outcome {
            Outcome::Done => line!(tracing::Level::INFO),
            _ => line!(tracing::Level::WARN),
        }
    }
}

/// `text` with its control characters escaped, so that a name a caller chose cannot
/// start a line of its own in the log.
fn clean(text: &str) -> String {
    text.chars()
        .map(|c| match c.is_control() {
            true => c.escape_debug().to_string(),
            false => c.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_s_newline_cannot_start_a_line_of_the_log() {
        assert_eq!(clean("job\n1 done"), "job\\n1 done");
    }

    #[test]
    fn who_names_the_peer_or_the_signal() {
        let addr: SocketAddr = "10.0.0.1:5000".parse().unwrap();
        assert_eq!(Who::remote(Some(addr)).to_string(), "10.0.0.1:5000");
        assert_eq!(Who::signal("SIGHUP").to_string(), "SIGHUP");
        assert_eq!(
            Who::server("ceph-mds:/x.asok").to_string(),
            "ceph-mds:/x.asok"
        );
        assert!(
            Who::unix(0, Some(7))
                .to_string()
                .starts_with("uid 0 (root) pid 7")
        );
    }
}

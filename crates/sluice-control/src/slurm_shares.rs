//! Shares from Slurm's association tree: `sacctmgr -nP show assoc
//! format=account,user,share,parentname`, read when a controller starts and on SIGHUP
//! (with `slurm_shares = true` in its configuration), turned into the shares of the
//! account and user levels of pools' trees.
//!
//! Slurm's tree can nest accounts; a sluice tree has one account level. Each account is
//! given the part of the machine Slurm's tree gives the jobs charged to it directly:
//! the product, down its path from the root, of each association's share over the
//! shares of it and its siblings (sub-accounts and users alike), times, for the account
//! itself, the part its users hold among its children. Where accounts are not nested
//! this is each account's share over the sum of all, which is what the shares mean.
//! Users' shares are kept per account (`user=physics/alice`). A share of `parent`
//! (the association uses its parent's) counts as 1.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::time::Duration;

use sluice_policy::tree::{Attr, Shares};
use thiserror::Error;

/// The command and arguments that list the associations.
pub const SACCTMGR_ARGS: [&str; 4] = [
    "-nP",
    "show",
    "assoc",
    "format=account,user,share,parentname",
];

/// Why Slurm's shares could not be read.
#[derive(Debug, Error)]
pub enum SlurmSharesError {
    /// `sacctmgr` could not be run, or did not finish in time.
    #[error("sacctmgr: {0}")]
    Run(String),
    /// `sacctmgr` failed.
    #[error("sacctmgr exited with {status}: {stderr}")]
    Failed {
        /// Its exit status.
        status: String,
        /// Its first line of error output.
        stderr: String,
    },
    /// A line of its output is not `account|user|share|parent`.
    #[error("sacctmgr output line {line}: {why}: {text:?}")]
    Parse {
        /// 1-based line.
        line: usize,
        /// What is wrong.
        why: &'static str,
        /// The line.
        text: String,
    },
}

/// One association.
struct Assoc<'a> {
    account: &'a str,
    user: &'a str,
    share: f64,
    parent: &'a str,
}

/// Reads `sacctmgr -nP show assoc format=account,user,share,parentname` output.
pub fn parse(text: &str) -> Result<Shares, SlurmSharesError> {
    let mut assocs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |why| SlurmSharesError::Parse {
            line: i + 1,
            why,
            text: line.to_owned(),
        };
        let fields: Vec<&str> = line.split('|').collect();
        let [account, user, share, parent] = fields[..] else {
            return Err(bad("expected 4 fields separated by |"));
        };
        if account.is_empty() {
            return Err(bad("no account"));
        }
        let share = match share {
            "" | "parent" => 1.0,
            s => s
                .parse::<f64>()
                .ok()
                .filter(|s| s.is_finite() && *s >= 0.0)
                .ok_or_else(|| bad("the share is not a number ≥ 0"))?,
        };
        assocs.push(Assoc {
            account,
            user,
            share,
            parent,
        });
    }
    Ok(flatten(&assocs))
}

/// The shares of the account and user levels from the associations.
fn flatten(assocs: &[Assoc<'_>]) -> Shares {
    // Per account: its own share and parent, and the sum of its children's shares
    // (sub-accounts and users), and of its users'.
    let mut own: BTreeMap<&str, (f64, &str)> = BTreeMap::new();
    let mut children: BTreeMap<&str, f64> = BTreeMap::new();
    let mut users: BTreeMap<&str, f64> = BTreeMap::new();
    let mut shares = Shares::new();
    for a in assocs {
        if a.user.is_empty() {
            own.insert(a.account, (a.share, a.parent));
            if !a.parent.is_empty() {
                *children.entry(a.parent).or_default() += a.share;
            }
        } else {
            *children.entry(a.account).or_default() += a.share;
            *users.entry(a.account).or_default() += a.share;
            // A user's share of 0 would take it out of the tree; sluice keeps a job
            // runnable, so the least share is a sliver.
            let share = a.share.max(f64::MIN_POSITIVE);
            let _ = shares.set(Attr::User, a.user, Some(a.account), Some(share));
        }
    }
    // An account's part of the machine, down its path (memoised; cycles are cut).
    let mut part: BTreeMap<&str, f64> = BTreeMap::new();
    fn part_of<'a>(
        account: &'a str,
        own: &BTreeMap<&'a str, (f64, &'a str)>,
        children: &BTreeMap<&'a str, f64>,
        part: &mut BTreeMap<&'a str, f64>,
        depth: usize,
    ) -> f64 {
        if let Some(&p) = part.get(account) {
            return p;
        }
        let p = match own.get(account) {
            Some(&(share, parent)) if !parent.is_empty() && depth < 64 => {
                let siblings = children.get(parent).copied().unwrap_or(0.0);
                let above = part_of(parent, own, children, part, depth + 1);
                if siblings > 0.0 {
                    above * share / siblings
                } else {
                    0.0
                }
            }
            // The root, or an account whose parent is not listed: the whole machine.
            _ => 1.0,
        };
        part.insert(account, p);
        p
    }
    for &account in own.keys() {
        let whole = part_of(account, &own, &children, &mut part, 0);
        let held = match (users.get(account), children.get(account)) {
            (Some(&u), Some(&all)) if all > 0.0 => u / all,
            _ => 1.0,
        };
        let share = whole * held;
        if share > 0.0 && share.is_finite() {
            let _ = shares.set(Attr::Account, account, None, Some(share));
        }
    }
    shares
}

/// Runs `sacctmgr` (the one on the PATH unless `program` says otherwise) and reads its
/// output, within `deadline`.
pub async fn read(program: &str, deadline: Duration) -> Result<Shares, SlurmSharesError> {
    let child = tokio::process::Command::new(program)
        .args(SACCTMGR_ARGS)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(deadline, child)
        .await
        .map_err(|_| SlurmSharesError::Run(format!("no answer within {deadline:?}")))?
        .map_err(|e| SlurmSharesError::Run(e.to_string()))?;
    if !output.status.success() {
        return Err(SlurmSharesError::Failed {
            status: output.status.to_string(),
            stderr: String::from_utf8_lossy(&output.stderr)
                .lines()
                .next()
                .unwrap_or_default()
                .to_owned(),
        });
    }
    parse(&String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sacctmgr -nP show assoc format=account,user,share,parentname` on a cluster
    /// with two accounts under root and three users.
    const FLAT: &str = "\
root|||
root|root|1|
physics||7|root
physics|alice|1|
physics|bob|1|
chem||3|root
chem|carol|parent|
";

    #[test]
    fn flat_accounts_weigh_their_share_over_all() {
        let shares = parse(FLAT).expect("parses");
        let account = |a| shares.get(Attr::Account, a, "");
        // Root's own user is a sibling of the two accounts (share 1 of 7 + 3 + 1), as in
        // Slurm's tree; between themselves the accounts stand 7 to 3.
        assert!((account("physics") - 7.0 / 11.0).abs() < 1e-12);
        assert!((account("chem") - 3.0 / 11.0).abs() < 1e-12);
        assert!((account("physics") / account("chem") - 7.0 / 3.0).abs() < 1e-12);
        assert_eq!(shares.get(Attr::User, "alice", "physics"), 1.0);
        assert_eq!(shares.get(Attr::User, "carol", "chem"), 1.0);
    }

    #[test]
    fn nested_accounts_are_flattened_down_their_path() {
        // physics (7) holds theory (1) and exp (3), and alice directly (share 1).
        let text = "\
root|||
physics||7|root
chem||3|root
theory||1|physics
exp||3|physics
physics|alice|1|
theory|bob|1|
exp|carol|2|
";
        let shares = parse(text).expect("parses");
        let account = |a| shares.get(Attr::Account, a, "");
        // physics' children weigh 1 + 3 + 1: alice's jobs get 0.7 × 1/5.
        assert!((account("physics") - 0.14).abs() < 1e-12);
        assert!((account("theory") - 0.14).abs() < 1e-12);
        assert!((account("exp") - 0.42).abs() < 1e-12);
        assert!((account("chem") - 0.3).abs() < 1e-12);
        assert_eq!(shares.get(Attr::User, "carol", "exp"), 2.0);
    }

    #[test]
    fn a_bad_line_is_named() {
        let err = parse("root|||\nphysics|x|lots|\n")
            .map(|_| ())
            .map_err(|e| e.to_string());
        assert_eq!(
            err,
            Err(
                "sacctmgr output line 2: the share is not a number ≥ 0: \"physics|x|lots|\""
                    .to_owned()
            )
        );
        assert!(parse("a|b|c\n").is_err());
    }
}

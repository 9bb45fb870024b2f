//! The tree divider's promises, over random trees: the whole capacity handed out, no job
//! given more than it asks while another is short, shares kept under saturation, and
//! what a subtree leaves going to its siblings first.

use proptest::prelude::*;
use sluice_policy::tree::{Attr, JobAttrs, Shares, TreeShape};
use sluice_policy::{Observation, Round};

/// A job of one of three accounts and four users, asking for nothing, a little or more
/// than any pool, on 1 to 8 nodes.
fn job() -> impl Strategy<Value = (usize, usize, f64, u32)> {
    (
        0..3usize,
        0..4usize,
        prop_oneof![Just(0.0), 0.0..1_000.0, Just(1e9)],
        1..=8u32,
    )
}

fn build(jobs: &[(usize, usize, f64, u32)]) -> (Vec<Observation>, Vec<JobAttrs>) {
    let obs = jobs
        .iter()
        .enumerate()
        .map(|(i, &(_, _, demand, nodes))| Observation {
            nodes: Some(nodes),
            ..Observation::new(format!("j{i:03}"), 0.0, demand.min(1e6), demand)
        })
        .collect();
    let attrs = jobs
        .iter()
        .map(|&(account, user, _, _)| JobAttrs {
            account: format!("acct{account}"),
            // Users are per account here, as Slurm's associations are.
            user: format!("u{account}{user}"),
            ..JobAttrs::default()
        })
        .collect();
    (obs, attrs)
}

/// A tree's shape and its shares.
struct Tree {
    shape: TreeShape,
    shares: Shares,
}

fn tree(shape: &str, account_shares: &[f64]) -> Tree {
    let mut shares = Shares::new();
    for (i, &s) in account_shares.iter().enumerate() {
        shares
            .set(Attr::Account, &format!("acct{i}"), None, Some(s))
            .expect("positive");
    }
    Tree {
        shape: shape.parse().expect("valid"),
        shares,
    }
}

fn divide(tree: &Tree, capacity: f64, obs: &[Observation], attrs: &[JobAttrs]) -> Vec<f64> {
    let round = Round::new(capacity, 1.0, obs).expect("valid");
    let refs: Vec<&JobAttrs> = attrs.iter().collect();
    tree.shape.divide(&tree.shares, &round, &refs).rates
}

/// Σ over the jobs `pick` selects.
fn total(rates: &[f64], attrs: &[JobAttrs], pick: impl Fn(&JobAttrs) -> bool) -> f64 {
    rates
        .iter()
        .zip(attrs)
        .filter(|(_, a)| pick(a))
        .map(|(r, _)| r)
        .sum()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn work_conserving_and_never_beyond_demand_while_another_is_short(
        jobs in proptest::collection::vec(job(), 1..40),
        capacity in 1.0..100_000.0f64,
        account_shares in proptest::collection::vec(0.1..10.0f64, 3),
        shape in prop_oneof![
            Just("account,user,job"),
            Just("account:equal,user:nodes,job:share"),
            Just("user,job:equal"),
            Just("job"),
        ],
    ) {
        let (obs, attrs) = build(&jobs);
        let tree = tree(shape, &account_shares);
        let rates = divide(&tree, capacity, &obs, &attrs);
        let sum: f64 = rates.iter().sum();
        prop_assert!((sum - capacity).abs() <= 1e-9 * capacity, "{sum} of {capacity}");
        let tol = 1e-9 * capacity;
        let short = obs.iter().zip(&rates).any(|(o, &r)| r < o.arrivals - tol);
        if short {
            for (o, &r) in obs.iter().zip(&rates) {
                prop_assert!(r <= o.arrivals + tol, "{} got {r}, asked {}", o.id, o.arrivals);
            }
        }
        prop_assert!(rates.iter().all(|&r| r >= 0.0 && r.is_finite()));
    }

    #[test]
    fn saturated_accounts_users_and_jobs_get_their_shares(
        jobs in proptest::collection::vec(job(), 1..40),
        capacity in 1.0..100_000.0f64,
        account_shares in proptest::collection::vec(0.1..10.0f64, 3),
    ) {
        // Everyone asks for more than the pool.
        let jobs: Vec<_> = jobs.into_iter().map(|(a, u, _, n)| (a, u, 1e9, n)).collect();
        let (obs, attrs) = build(&jobs);
        let tree = tree("account,user,job", &account_shares);
        let rates = divide(&tree, capacity, &obs, &attrs);
        let present: Vec<usize> = (0..3).filter(|a| jobs.iter().any(|j| j.0 == *a)).collect();
        let weight: f64 = present.iter().map(|&a| account_shares[a]).sum();
        for &a in &present {
            let account = format!("acct{a}");
            let got = total(&rates, &attrs, |x| x.account == account);
            let due = capacity * account_shares[a] / weight;
            prop_assert!((got - due).abs() <= 1e-6 * capacity, "{account}: {got} vs {due}");
            // Its users equally, whatever their job counts.
            let users: std::collections::BTreeSet<&str> = attrs
                .iter()
                .filter(|x| x.account == account)
                .map(|x| x.user.as_str())
                .collect();
            for user in &users {
                let got = total(&rates, &attrs, |x| x.user == *user);
                let each = due / users.len() as f64;
                prop_assert!((got - each).abs() <= 1e-6 * capacity, "{user}: {got} vs {each}");
                // Its jobs by node count.
                let mine: Vec<usize> = (0..jobs.len()).filter(|&i| attrs[i].user == *user).collect();
                let nodes: u32 = mine.iter().map(|&i| jobs[i].3).sum();
                for &i in &mine {
                    let due = each * f64::from(jobs[i].3) / f64::from(nodes);
                    prop_assert!((rates[i] - due).abs() <= 1e-6 * capacity);
                }
            }
        }
    }

    #[test]
    fn an_account_that_asks_for_nothing_leaves_it_all_to_the_others(
        jobs in proptest::collection::vec(job(), 1..40),
        capacity in 1.0..100_000.0f64,
        account_shares in proptest::collection::vec(0.1..10.0f64, 3),
    ) {
        // acct0 idle, everyone else saturated.
        let jobs: Vec<_> = jobs
            .into_iter()
            .map(|(a, u, _, n)| (a, u, if a == 0 { 0.0 } else { 1e9 }, n))
            .collect();
        prop_assume!(jobs.iter().any(|j| j.0 != 0));
        let (obs, attrs) = build(&jobs);
        let tree = tree("account,user,job", &account_shares);
        let rates = divide(&tree, capacity, &obs, &attrs);
        let idle = total(&rates, &attrs, |x| x.account == "acct0");
        prop_assert!(idle <= 1e-9 * capacity, "the idle account got {idle}");
    }
}

#[test]
fn forty_one_node_jobs_of_one_user_take_one_users_share() {
    let mut jobs: Vec<_> = (0..40).map(|_| (0, 0, 1e9, 1)).collect();
    jobs.push((0, 1, 1e9, 1));
    let (obs, attrs) = build(&jobs);
    let tree = tree("account,user,job", &[1.0]);
    let rates = divide(&tree, 1000.0, &obs, &attrs);
    let many = total(&rates, &attrs, |x| x.user == "u00");
    let one = total(&rates, &attrs, |x| x.user == "u01");
    assert!(
        (many - 500.0).abs() < 1e-9 && (one - 500.0).abs() < 1e-9,
        "{many} {one}"
    );
    assert!((rates[0] - 12.5).abs() < 1e-9);
}

#[test]
fn a_short_job_lends_to_its_siblings_then_its_user_to_other_users_then_up() {
    // Two accounts 70/30; in the 70 one, users x (jobs asking 10 and a lot) and y (a
    // lot); the 30 one asks for 50 of its 300.
    let jobs = vec![
        (0, 0, 10.0, 1),
        (0, 0, 1e9, 1),
        (0, 1, 1e9, 1),
        (1, 0, 50.0, 1),
    ];
    let (obs, attrs) = build(&jobs);
    let tree = tree("account,user,job", &[7.0, 3.0]);
    let rates = divide(&tree, 1000.0, &obs, &attrs);
    // acct1 takes its 50, acct0 950: x and y 475 each, x's second job 465.
    assert_eq!(rates, vec![10.0, 465.0, 475.0, 50.0]);
}

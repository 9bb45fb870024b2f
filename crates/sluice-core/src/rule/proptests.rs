//! Properties of the rule language: printing then parsing is the identity, the printed
//! form is a fixed point, and no input makes the parser panic.

use std::fmt;

use proptest::prelude::*;

use super::*;
use crate::op::{Class, Op};

/// Removes repeated values, keeping the first: the parser refuses repeats.
fn unique<T: PartialEq>(values: Vec<T>) -> Vec<T> {
    let mut kept = Vec::with_capacity(values.len());
    for value in values {
        if !kept.contains(&value) {
            kept.push(value);
        }
    }
    kept
}

fn list<T: PartialEq + fmt::Debug>(
    item: impl Strategy<Value = T>,
) -> impl Strategy<Value = Vec<T>> {
    prop::collection::vec(item, 1..4).prop_map(unique)
}

/// A quantity that exercises every unit: any value, or a small one times a unit factor.
fn quantity() -> impl Strategy<Value = u64> {
    let factors = [
        1u64,
        1_000,
        1_000_000,
        1_000_000_000,
        1 << 10,
        1 << 20,
        1 << 30,
        1 << 40,
    ];
    prop_oneof![
        any::<u64>(),
        (0u64..5000, prop::sample::select(factors.to_vec())).prop_map(|(n, f)| n * f)
    ]
}

fn cond_strategies() -> Vec<BoxedStrategy<Cond>> {
    let word = "[A-Za-z0-9_.+:@-]{1,8}";
    vec![
        prop::sample::subsequence(Op::ALL, 1..4)
            .prop_shuffle()
            .prop_map(Cond::Op)
            .boxed(),
        prop::sample::subsequence(Class::ALL.to_vec(), 1..4)
            .prop_shuffle()
            .prop_map(Cond::Class)
            .boxed(),
        list(word).prop_map(Cond::Job).boxed(),
        list(prop_oneof![
            any::<u32>().prop_map(UserSpec::Uid),
            "[A-Za-z_][A-Za-z0-9_.-]{0,7}".prop_map(UserSpec::Name)
        ])
        .prop_map(Cond::User)
        .boxed(),
        list("[A-Za-z0-9_.+-]{1,8}").prop_map(Cond::Exe).boxed(),
        list(
            prop::collection::vec("[a-z0-9é]{1,4}", 0..3)
                .prop_map(|parts| format!("/{}", parts.join("/"))),
        )
        .prop_map(Cond::Mount)
        .boxed(),
        (prop::sample::select(Cmp::ALL.to_vec()), quantity())
            .prop_map(|(cmp, n)| Cond::Size(cmp, n))
            .boxed(),
    ]
}

/// Any valid rule: at most one condition per key, in any order.
fn any_rule() -> impl Strategy<Value = Rule> {
    let conds = cond_strategies()
        .into_iter()
        .map(|strategy| prop::option::weighted(0.4, strategy))
        .collect::<Vec<_>>()
        .prop_map(|conds| conds.into_iter().flatten().collect::<Vec<_>>())
        .prop_shuffle();
    let unit = prop_oneof![Just(Unit::Ops), Just(Unit::Bytes)];
    (
        prop::option::of("[A-Za-z0-9_.-]{1,8}"),
        conds,
        quantity(),
        unit,
        prop::option::of(1u64..),
    )
        .prop_map(|(name, conds, per_sec, unit, burst)| Rule {
            name,
            conds,
            rate: Rate { per_sec, unit },
            burst,
        })
        .prop_filter("a bytes rate needs a data operation", |rule| {
            rule.check_rate_unit().is_ok()
        })
}

/// Text that looks like rules: mostly valid tokens in odd spellings (units, paths, spacing),
/// some invalid ones and some noise, so that both successes and errors are frequent.
fn rule_like_text() -> impl Strategy<Value = String> {
    let pick =
        |tokens: &[&'static str]| prop::sample::select(tokens.to_vec()).prop_map(str::to_owned);
    let name = prop::option::weighted(0.3, pick(&["md:", "big-writes:", "x/y:", ":"]));
    let cond = prop_oneof![
        8 => pick(&[
            "op=getattr,open", "op=read", "op=write,mmap", "class=data", "class=metadata,xattr",
            "user=alice", "user=0042", "job=12_3", "exe=ior", "mount=//a/./b/../c/", "mount=/..",
            "mount=/é/", "size>=1.5KiB", "size<4k", "size=0", "size<=1048576",
        ]),
        1 => pick(&[
            "op=stat", "op=open,open", "user=4294967296", "exe=/bin/ls", "mount=rel", "size<=",
            "op>open", "=", ",",
        ]),
        1 => "[a-z=<>,./0-9:kMGiBs-]{1,12}",
    ];
    let rate = prop::option::weighted(
        0.9,
        pick(&[
            "rate=5000/s",
            "rate=2.5k/s",
            "rate=1048576B/s",
            "rate=0.5MiB/s",
            "rate=0/s",
            "rate=1000000B/s",
            "rate=-1/s",
            "rate=1e3/s",
        ]),
    );
    let burst = prop::option::weighted(
        0.3,
        pick(&["burst=4MiB", "burst=100", "burst=0", "burst=4096"]),
    );
    let spaces = prop::collection::vec(pick(&[" ", "  ", "\t", "\n "]), 8);
    (name, prop::collection::vec(cond, 0..5), rate, burst, spaces).prop_map(
        |(name, conds, rate, burst, spaces)| {
            let tokens = name.into_iter().chain(conds).chain(rate).chain(burst);
            tokens
                .zip(spaces.iter().cycle())
                .map(|(token, space)| format!("{token}{space}"))
                .collect()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn parse_of_print_is_the_identity(rule in any_rule()) {
        let printed = rule.to_string();
        prop_assert_eq!(parse_rule(&printed), Ok(rule), "printed as {}", printed);
    }

    #[test]
    fn print_of_parse_is_a_fixed_point(text in rule_like_text()) {
        if let Ok(rule) = parse_rule(&text) {
            let printed = rule.to_string();
            let again = parse_rule(&printed);
            prop_assert_eq!(again.as_ref(), Ok(&rule), "{:?} printed as {:?}", text, printed);
            prop_assert_eq!(again.map(|r| r.to_string()), Ok(printed));
        }
    }

    #[test]
    fn the_parser_never_panics_on_any_text(text in any::<String>()) {
        let _ = parse_rule(&text);
    }

    #[test]
    fn the_parser_never_panics_on_rule_like_text(text in rule_like_text()) {
        if let Err(err) = parse_rule(&text) {
            // Every error points inside the input (or just past its end) at what it names.
            prop_assert!(err.offset <= text.len());
            prop_assert!(text[err.offset..].starts_with(&err.token));
        }
    }

    #[test]
    fn rules_files_render_and_parse_back(rules in prop::collection::vec(any_rule(), 0..5)) {
        // Names are unique within a file.
        let mut seen = Vec::new();
        let rules: Vec<Rule> = rules
            .into_iter()
            .map(|mut rule| {
                if rule.name.as_ref().is_some_and(|name| seen.contains(name)) {
                    rule.name = None;
                }
                seen.extend(rule.name.clone());
                rule
            })
            .collect();
        let text = RulesFile::render(&rules);
        prop_assert_eq!(RulesFile::parse(&text).map_err(|e| e.to_string()), Ok(rules), "{}", text);
    }
}

//! Examples of the rule language: what it accepts, how it prints, how it matches, and
//! every error, checked for its position and its words. Regression tests are named after
//! the defect they pin down.

use super::*;
use crate::op::{Class, Op};

fn rule(input: &str) -> Rule {
    match parse_rule(input) {
        Ok(rule) => rule,
        Err(err) => panic!("{input:?}: {err}"),
    }
}

fn normal(input: &str) -> String {
    rule(input).to_string()
}

/// Asserts that `input` fails at `offset` on `token`, expecting something that starts
/// with `expected`.
#[track_caller]
fn assert_error(input: &str, offset: usize, token: &str, expected: &str) {
    let err = parse_rule(input).expect_err(input);
    assert_eq!(
        (err.offset, err.token.as_str()),
        (offset, token),
        "{input:?}: {err}"
    );
    assert!(
        err.expected.starts_with(expected),
        "{input:?}: expected {:?}, got {:?}",
        expected,
        err.expected
    );
}

const KEYS: &str = "a key (op, class, job, user, exe, mount, size) or rate=";

// ---- accepted rules and their normalised form ----

#[test]
fn normal_form_collapses_spacing_units_and_paths() {
    assert_eq!(
        normal("  md:   op=getattr,open \t user=alice  rate=5000/s "),
        "md: op=getattr,open user=alice rate=5k/s"
    );
    assert_eq!(
        normal("mount=/scratch/,//home/./x/.. rate=1048576B/s"),
        "mount=/scratch,/home rate=1MiB/s"
    );
    assert_eq!(
        normal("op=write size>=1048576 rate=2.5k/s burst=5000"),
        "op=write size>=1MiB rate=2500/s burst=5k"
    );
    assert_eq!(
        normal("rate=100MiB/s burst=4194304"),
        "rate=100MiB/s burst=4MiB"
    );
}

#[test]
fn conditions_keep_the_order_they_are_written_in() {
    assert_eq!(
        normal("user=alice op=getattr rate=1/s"),
        "user=alice op=getattr rate=1/s"
    );
    assert_eq!(
        normal("op=open,getattr rate=1/s"),
        "op=open,getattr rate=1/s"
    );
}

#[test]
fn a_rule_with_only_a_rate_is_a_catch_all() {
    let all = rule("rate=10k/s");
    assert!(all.conds.is_empty());
    assert!(all.matches_identity(&Identity::default()));
    assert!(
        Op::ALL
            .iter()
            .filter(|&&op| op != Op::Mmap)
            .all(|&op| all.matches_op(op))
    );
    assert_eq!(normal("everything: rate=10k/s"), "everything: rate=10k/s");
}

#[test]
fn rate_zero_is_valid_and_bursts_one() {
    let paused = rule("job=42 rate=0/s");
    assert_eq!(paused.rate, Rate::ops(0));
    assert_eq!(paused.burst_or_default(), 1);
}

#[test]
fn every_comparison_reads_and_prints() {
    for (text, cmp) in [
        ("<", Cmp::Lt),
        ("<=", Cmp::Le),
        (">", Cmp::Gt),
        (">=", Cmp::Ge),
        ("=", Cmp::Eq),
    ] {
        let line = format!("size{text}4KiB rate=1/s");
        assert_eq!(rule(&line).size_cond(), Some((cmp, 4096)), "{line}");
        assert_eq!(normal(&line), line);
    }
}

#[test]
fn users_are_names_or_uids() {
    let users = rule("user=alice,1000 rate=1/s");
    assert_eq!(
        users.conds,
        [Cond::User(vec![
            UserSpec::Name("alice".into()),
            UserSpec::Uid(1000)
        ])]
    );
}

#[test]
fn byte_rates_on_data_or_unrestricted_rules_are_accepted() {
    rule("op=write rate=100MiB/s");
    rule("class=data rate=1GB/s");
    rule("user=alice rate=1GiB/s");
    rule("op=getattr,read rate=1MiB/s");
    rule("op=mmap rate=1MiB/s");
}

// ---- matching ----

fn alice() -> Identity {
    Identity {
        job: "4242".into(),
        uid: 1000,
        user: Some("alice".into()),
        exe: "ior".into(),
    }
}

#[test]
fn identity_conditions_all_hold() {
    let id = alice();
    assert!(rule("job=1,4242 user=alice exe=ior rate=1/s").matches_identity(&id));
    assert!(rule("user=1000 rate=1/s").matches_identity(&id));
    assert!(!rule("job=1 user=alice rate=1/s").matches_identity(&id));
    assert!(!rule("exe=mdtest rate=1/s").matches_identity(&id));
    assert!(!rule("user=bob,1001 rate=1/s").matches_identity(&id));
    // Conditions on other scopes do not matter here.
    assert!(rule("op=read mount=/x size>1 rate=1/s").matches_identity(&id));
}

#[test]
fn op_and_class_conditions_all_hold() {
    let md = rule("op=getattr,open rate=1/s");
    assert!(md.matches_op(Op::Getattr) && md.matches_op(Op::Open) && !md.matches_op(Op::Read));
    let data = rule("class=data,xattr rate=1/s");
    assert!(
        data.matches_op(Op::Write)
            && data.matches_op(Op::Getxattr)
            && !data.matches_op(Op::Getattr)
    );
    let both = rule("op=read,getattr class=data rate=1/s");
    assert!(
        both.matches_op(Op::Read) && !both.matches_op(Op::Getattr) && !both.matches_op(Op::Write)
    );
    assert!(rule("user=alice rate=1/s").matches_op(Op::Unlink));
}

#[test]
fn mmap_is_held_only_by_a_rule_that_names_it() {
    assert!(!rule("rate=1/s").matches_op(Op::Mmap));
    assert!(!rule("class=data rate=1/s").matches_op(Op::Mmap));
    assert!(rule("op=mmap rate=1/s").matches_op(Op::Mmap));
    assert!(rule("op=mmap,read class=data rate=1/s").matches_op(Op::Mmap));
}

#[test]
fn request_conditions_are_exposed_to_the_stage() {
    let big = rule("mount=/scratch/,/work op=write size>=1MiB rate=100MiB/s");
    assert_eq!(
        big.mount_paths(),
        Some(&["/scratch".to_owned(), "/work".to_owned()][..])
    );
    assert_eq!(big.size_cond(), Some((Cmp::Ge, 1 << 20)));
    let plain = rule("rate=1/s");
    assert_eq!((plain.mount_paths(), plain.size_cond()), (None, None));
}

#[test]
fn burst_defaults_to_ten_milliseconds_of_the_rate() {
    assert_eq!(rule("rate=5k/s").burst_or_default(), 50);
    assert_eq!(rule("rate=100MiB/s").burst_or_default(), 1 << 20);
    assert_eq!(rule("rate=50/s").burst_or_default(), 1);
    assert_eq!(rule("rate=5k/s burst=7").burst_or_default(), 7);
}

// ---- errors: one test per kind, with offset and words ----

#[test]
fn error_unknown_key() {
    assert_error("op=getattr rat=5k/s", 11, "rat=5k/s", KEYS);
    assert_eq!(
        parse_rule("op=getattr rat=5k/s").unwrap_err().to_string(),
        format!("at column 12 ('rat=5k/s'): expected {KEYS}")
    );
    assert_error("OP=open rate=1/s", 0, "OP=open", KEYS);
}

#[test]
fn error_unknown_op_lists_the_operations() {
    assert_error(
        "op=getattr,stat rate=5k/s",
        11,
        "stat",
        "an operation (open, close, getattr, ",
    );
    let err = parse_rule("op=stat rate=1/s").unwrap_err();
    assert!(
        Op::ALL.iter().all(|op| err.expected.contains(op.name())),
        "{err}"
    );
}

#[test]
fn error_unknown_class() {
    assert_error(
        "class=meta rate=1/s",
        6,
        "meta",
        "a class (data, metadata, xattr, directory)",
    );
}

#[test]
fn error_unknown_unit() {
    assert_error(
        "op=read rate=5x/s",
        13,
        "5x/s",
        "a rate unit: /s, k/s, M/s, G/s for operations; B/s, KB/s",
    );
    assert_error("rate=5K/s", 5, "5K/s", "a rate unit");
}

#[test]
fn error_negative_rate() {
    assert_error(
        "rate=-5/s",
        5,
        "-5/s",
        "a rate of zero or more (rates cannot be negative)",
    );
}

#[test]
fn error_non_numeric_rate() {
    assert_error(
        "rate=fast",
        5,
        "fast",
        "a rate: a number, an optional unit and /s",
    );
    assert_error("rate=/s", 5, "/s", "a rate: a number");
    assert_error("rate=", 5, "", "a rate: a number");
}

#[test]
fn error_rate_that_is_not_whole() {
    assert_error("rate=2.5/s", 5, "2.5/s", "a whole number");
}

#[test]
fn error_rate_without_per_second() {
    assert_error("rate=5k", 5, "5k", "a rate per second, ending in /s");
}

#[test]
fn error_empty_rule() {
    assert_error(
        "",
        0,
        "",
        "a rule such as 'op=getattr rate=5k/s' (this one is empty)",
    );
    assert_error(" \t ", 0, "", "a rule such as");
    assert_eq!(
        parse_rule("").unwrap_err().to_string(),
        "at column 1: expected a rule such as 'op=getattr rate=5k/s' (this one is empty)"
    );
}

#[test]
fn error_missing_rate() {
    assert_error(
        "op=getattr user=alice  ",
        21,
        "",
        "rate=RATE at the end of the rule",
    );
    assert_error("md:", 3, "", "rate=RATE");
    assert_eq!(
        parse_rule("op=open").unwrap_err().to_string(),
        "at column 8: expected rate=RATE at the end of the rule: every rule needs one (e.g. rate=5k/s)"
    );
}

#[test]
fn error_duplicate_key() {
    assert_error(
        "op=open op=read rate=1/s",
        8,
        "op=read",
        "each key once (op= is already given at column 1)",
    );
    assert_error(
        "size>1 size<9 rate=1/s",
        7,
        "size<9",
        "each key once (size=",
    );
    assert_error(
        "rate=1/s rate=2/s",
        9,
        "rate=2/s",
        "each key once (rate= is already given at column 1)",
    );
    assert_error(
        "rate=1/s burst=1 burst=2",
        17,
        "burst=2",
        "each key once (burst= is already given at column 10)",
    );
}

#[test]
fn error_duplicate_or_empty_value() {
    assert_error(
        "op=open,open rate=1/s",
        8,
        "open",
        "each value once ('open' is already listed)",
    );
    assert_error(
        "mount=/a/,/a rate=1/s",
        10,
        "/a",
        "each value once ('/a' is already listed)",
    );
    assert_error("op= rate=1/s", 3, "", "an operation");
    assert_error("op=open, rate=1/s", 8, "", "an operation");
    assert_error("user=,bob rate=1/s", 5, "", "a login name");
}

#[test]
fn error_comparison_on_a_list_key() {
    assert_error(
        "op>=open rate=1/s",
        2,
        ">=",
        "'=' (only size can use <, <=, >, >=)",
    );
    assert_error("rate<5/s", 4, "<", "'='");
    assert_error("rate=1/s burst>=5", 14, ">=", "'='");
}

#[test]
fn error_out_of_order() {
    assert_error(
        "rate=1/s op=open",
        9,
        "op=open",
        "burst= or the end of the rule (conditions come before rate=)",
    );
    assert_error("burst=5 rate=1/s", 0, "burst=5", "a key (op,");
    assert!(
        parse_rule("burst=5 rate=1/s")
            .unwrap_err()
            .expected
            .ends_with("(burst= comes after rate=)")
    );
    assert_error("rate=1/s burst=2 x", 17, "x", "the end of the rule");
    assert_error("op=open md: rate=1/s", 8, "md:", KEYS);
}

#[test]
fn error_names() {
    assert_error(
        "m/d: rate=1/s",
        0,
        "m/d:",
        "a rule name of letters, digits, '_', '.' or '-', followed by ':'",
    );
    assert_error(": rate=1/s", 0, ":", "a rule name");
    assert_error(
        "md op=open rate=1/s",
        0,
        "md",
        "a key (op, class, job, user, exe, mount, size) or rate= (a rule's name ends with ':'",
    );
}

#[test]
fn error_values_of_each_key() {
    assert_error("job=a,,b rate=1/s", 6, "", "a job identifier");
    assert_error("user=al/ice rate=1/s", 5, "al/ice", "a login name");
    assert_error(
        "user=4294967296 rate=1/s",
        5,
        "4294967296",
        "a uid below 2^32",
    );
    assert_error(
        "exe=/usr/bin/ior rate=1/s",
        4,
        "/usr/bin/ior",
        "a program name without '/'",
    );
    assert_error("mount=scratch rate=1/s", 6, "scratch", "an absolute path");
    assert_error("size>=big rate=1/s", 6, "big", "a size in bytes");
    assert_error("size>=-1 rate=1/s", 6, "-1", "a size of zero or more");
    assert_error("size>=0.5B rate=1/s", 6, "0.5B", "a whole number of bytes");
}

#[test]
fn error_bursts() {
    assert_error("rate=1k/s burst=0", 16, "0", "a burst of operations");
    assert_error("rate=1k/s burst=4MiB", 16, "4MiB", "a burst of operations");
    assert!(
        parse_rule("rate=1k/s burst=4MiB")
            .unwrap_err()
            .expected
            .ends_with("the rate counts operations, not bytes")
    );
    assert_error("rate=1MiB/s burst=lots", 18, "lots", "a burst of bytes");
}

#[test]
fn error_bytes_rate_on_metadata_only() {
    assert_error(
        "op=getattr rate=1MiB/s",
        11,
        "rate=1MiB/s",
        "a rate in operations per second (e.g. 5k/s)",
    );
    assert_error(
        "class=metadata,xattr rate=1MiB/s",
        21,
        "rate=1MiB/s",
        "a rate in operations",
    );
    // mmap is data, but class=data alone does not hold it, so it does not save this rule.
    rule("class=data rate=1MiB/s");
}

#[test]
fn errors_show_columns_in_characters_for_carets() {
    let input = "mount=/é op=x rate=1/s";
    let err = parse_rule(input).unwrap_err();
    assert_eq!((err.offset, err.column_in(input)), (13, 13));
}

// ---- the field table ----

#[test]
fn every_list_key_refuses_an_empty_value() {
    for field in FIELDS {
        let line = format!("{}= rate=1/s", field.key);
        let err = parse_rule(&line).unwrap_err();
        assert_eq!(err.offset, field.key.len() + 1, "{line}: {err}");
    }
}

#[test]
fn every_key_is_documented_in_docs_rules_md() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/rules.md");
    let doc = std::fs::read_to_string(path).expect("docs/rules.md exists");
    let (begin, end) = (
        "<!-- keys:begin (generated from FIELDS; a test checks it) -->\n",
        "<!-- keys:end -->",
    );
    let start = doc
        .find(begin)
        .expect("docs/rules.md has the keys:begin marker")
        + begin.len();
    let stop = doc[start..]
        .find(end)
        .expect("docs/rules.md has the keys:end marker")
        + start;
    assert_eq!(
        &doc[start..stop],
        keys_markdown(),
        "docs/rules.md's key table is stale: replace it with the output of keys_markdown()"
    );
}

#[test]
fn classes_named_in_docs_are_the_classes() {
    let field = Field::find("class").expect("class is a key");
    assert!(
        Class::ALL
            .iter()
            .all(|class| field.doc.contains(class.name()))
    );
}

// ---- regressions ----

#[test]
fn regression_size_le_is_not_read_as_lt_with_a_value_starting_with_eq() {
    assert_eq!(rule("size<=4k rate=1/s").size_cond(), Some((Cmp::Le, 4000)));
}

#[test]
fn regression_dotdot_above_root_stays_at_root() {
    assert_eq!(
        rule("mount=/../a rate=1/s").mount_paths(),
        Some(&["/a".to_owned()][..])
    );
}

#[test]
fn regression_k_in_sizes_is_a_thousand_like_everywhere_else() {
    assert_eq!(rule("size>4k rate=1/s").size_cond(), Some((Cmp::Gt, 4000)));
}

#[test]
fn regression_uid_above_u32_is_an_error_not_a_login_name() {
    assert!(parse_rule("user=99999999999 rate=1/s").is_err());
}

#[test]
fn regression_rate_with_many_fraction_digits_is_not_called_too_large() {
    assert_eq!(
        rule(&format!("rate=1.{}k/s", "0".repeat(50))).rate,
        Rate::ops(1000)
    );
    let err = parse_rule(&format!("rate=1.{}1k/s", "0".repeat(50))).unwrap_err();
    assert_eq!(
        err.expected,
        "a number with at most 24 digits after the point"
    );
}

#[test]
fn regression_render_writes_ops_bursts_beyond_toml_integers_as_strings() {
    let huge = Rule {
        name: None,
        conds: Vec::new(),
        rate: Rate::ops(0),
        burst: Some(1 << 63),
    };
    let text = RulesFile::render(std::slice::from_ref(&huge));
    assert_eq!(
        RulesFile::parse(&text).map_err(|e| e.to_string()),
        Ok(vec![huge]),
        "{text}"
    );
}

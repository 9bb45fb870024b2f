use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::time::Duration;

use sluice_core::rule::Rate;
use sluice_policy::ParamValue;

use super::{EXAMPLE, example};
use crate::config::{ConfigError, ControlConfig, DEFAULT_STALE_AFTER};

fn error(text: &str) -> String {
    ControlConfig::parse(text).unwrap_err().to_string()
}

/// A file with one pool whose fields are `fields` (each a `key = value` line).
fn pool_error(fields: &str) -> String {
    error(&format!("[[pool]]\nname = \"x\"\n{fields}\n"))
}

#[test]
fn reads_every_part() {
    let config = example();
    assert_eq!(config.interval, Duration::from_secs(1));
    assert_eq!(config.stale_after, DEFAULT_STALE_AFTER);
    assert_eq!(config.admin.group.as_deref(), Some("sluiceadm"));
    assert_eq!(
        config.admin.tls_key,
        Some(PathBuf::from("/etc/sluice/key.pem"))
    );
    assert_eq!(
        config.admin.client_ca,
        Some(PathBuf::from("/etc/sluice/ca.pem"))
    );
    let md = &config.pools[0];
    assert_eq!(md.filter, "class=metadata mount=/scratch");
    assert_eq!(md.capacity, Rate::ops(10_000));
    assert_eq!(
        md.params,
        BTreeMap::from([("epsilon".into(), ParamValue::Number(0.25))])
    );
    assert_eq!(md.min_share, 0.01);
    assert!(!md.is_bytes() && config.pools[1].is_bytes());
    assert_eq!(
        md.rule().to_string(),
        "scratch-md: class=metadata mount=/scratch rate=10k/s"
    );
    assert_eq!(config.rules[0].name.as_deref(), Some("cap-alice"));
    assert_eq!(config.jobs[0].limit, Some(Rate::ops(5_000)));
    assert_eq!(config.jobs[1].weight, Some(3.0));
    assert_eq!(ControlConfig::parse("").unwrap(), ControlConfig::default());
}

#[test]
fn writes_what_it_reads() {
    let mut config = example();
    config.interval = Duration::from_millis(2_500);
    config.stale_after = Duration::from_secs(90);
    config.pools[0].min_share = 0.1 + 0.2;
    config.pools[1].filter.clear();
    config.pools[1].estimator = Some(sluice_policy::Estimator::Usage);
    config.admin.token_file = Some("/etc/sluice/a \"quoted\" token".into());
    let text = config.to_toml();
    assert_eq!(ControlConfig::parse(&text).unwrap(), config, "{text}");
    assert!(
        text.contains("params = { work_conserving = false }\n"),
        "{text}"
    );
    assert_eq!(
        ControlConfig::parse(&ControlConfig::default().to_toml()).unwrap(),
        ControlConfig::default()
    );
}

#[test]
fn pool_errors_say_which_pool_which_field_and_why() {
    assert_eq!(
        pool_error("match = \"exe=a clas=metadata\"\ncapacity = \"1k/s\"\nalgorithm = \"psfa\""),
        "config:3: pool[1] \"x\": match: at column 7 ('clas=metadata'): expected a key \
         (op, class, job, user, exe, mount, size)"
    );
    assert_eq!(
        pool_error("capacity = \"1k/s\"\nalgorithm = \"fifo\""),
        "config:4: pool[1] \"x\": algorithm: unknown algorithm \"fifo\" (one of: static, \
         uniform, uniform-share, priority, priority-share, psharing, psfa, psfa-held, adaptbf, \
         adaptbf-bounded, adaptbf-need, set10, set10-silence, set10-ftio, reservations, drf)"
    );
    let cases = [
        (
            "match = \"op=open rate=5k/s\"",
            "match: at column 9 ('rate=5k/s'): expected conditions only: a pool's rate is its capacity",
        ),
        (
            "match = \"op=open burst=5\"",
            "match: at column 9 ('burst=5'): expected conditions only: a pool has no burst",
        ),
        (
            "match = \"md: op=open\"",
            "match: at column 1 ('md:'): expected a key (op,",
        ),
        (
            "capacity = \"10x/s\"",
            "capacity: at column 1 ('10x/s'): expected a rate unit",
        ),
        (
            "capacity = \"0/s\"",
            "capacity: \"0/s\" must be more than zero",
        ),
        (
            "match = \"class=metadata\"\ncapacity = \"1MiB/s\"",
            "capacity: at column 1 ('1MiB/s'): expected a rate in operations per second",
        ),
        (
            "params = { epsilon = 2 }",
            "params.epsilon: must be a number between 0 and 1",
        ),
        (
            "params = { epsilon = \"x\" }",
            "params: epsilon = \"x\": expected a number or true/false",
        ),
        (
            "params = { rate = 1 }",
            "params.rate: not a parameter of psfa (it takes: epsilon, interval_s)",
        ),
        (
            "params = { interval_s = 1 }",
            "params: interval_s is the configuration's interval",
        ),
        ("min_share = 0.6", "min_share: 0.6 is outside [0, 0.5]"),
        ("min_share = nan", "min_share: NaN is outside [0, 0.5]"),
        (
            "estimator = \"demand\"",
            "estimator: unknown estimator \"demand\" (one of: usage, arrivals, wait-inflated)",
        ),
        (
            "algorithm = \"priority\"\nparams = { rate = 5 }\nestimator = \"usage\"",
            "estimator: priority reads no load, so no estimator applies",
        ),
    ];
    for (fields, expected) in cases {
        let mut text = format!("{fields}\n");
        for (key, value) in [("capacity", "\"1k/s\""), ("algorithm", "\"psfa\"")] {
            if !fields.contains(&format!("{key} =")) {
                text.push_str(&format!("{key} = {value}\n"));
            }
        }
        let message = pool_error(&text);
        let (_, problem) = message.split_once(": ").unwrap();
        assert!(
            problem.starts_with(&format!("pool[1] \"x\": {expected}")),
            "{fields}: {message}"
        );
    }
    let two = "[[pool]]\nname = \"x\"\ncapacity = \"1k/s\"\nalgorithm = \"psfa\"\n";
    assert_eq!(
        error(&format!("{two}{two}")),
        "config:6: pool[2] \"x\": name: pool[1] has this name"
    );
    assert!(
        error("[[pool]]\nname = \"a b\"\ncapacity = \"1k/s\"\nalgorithm = \"psfa\"\n")
            .starts_with("config:2: pool[1] \"a b\": name: \"a b\" is not a pool name")
    );
}

#[test]
fn other_errors_are_placed_too() {
    let cases = [
        (
            "interval = \"5 parsecs\"",
            "config:1: interval: \"5 parsecs\" is not a duration (e.g. 200ms, 1s)",
        ),
        (
            "stale_after = \"500ms\"",
            "config:1: stale_after: \"500ms\" is out of range (from 1s to 24h)",
        ),
        (
            "[admin]\ntls_cert = \"c.pem\"",
            "config:1: admin: tls_key: missing (tls_cert is set)",
        ),
        (
            "[admin]\nclient_ca = \"ca.pem\"",
            "config:1: admin: client_ca: needs tls_cert and tls_key (client certificates \
             are checked in TLS)",
        ),
        (
            "[[rule]]\nrule = \"op=stat rate=1k/s\"",
            "config:2: rule[1]: rule: at column 4 ('stat'): expected an operation",
        ),
        (
            "[[rule]]\nrule = \"a: rate=1/s\"\n[[rule]]\nrule = \"a: rate=2/s\"",
            "config:4: rule[2]: rule: rule[1] is named \"a\" too",
        ),
        (
            "[[job]]\njob = \"7\"\npool = \"md\"\nweight = 1",
            "config:3: job[1] \"7\": pool: no pool is named \"md\" (there are no pools)",
        ),
        (
            "[[job]]\njob = \"7 8\"\nweight = 1",
            "config:2: job[1] \"7 8\": job: \"7 8\" is not a job identifier",
        ),
        (
            "[[job]]\njob = \"7\"\nweight = 0",
            "config:3: job[1] \"7\": weight: must be a finite number > 0",
        ),
        (
            "[[job]]\njob = \"7\"\nlimit = \"5x/s\"",
            "config:3: job[1] \"7\": limit: at column 1 ('5x/s'): expected a rate unit",
        ),
        (
            "[[job]]\njob = \"7\"",
            "config:1: job[1] \"7\": expected a limit, a weight or a period (or several)",
        ),
        (
            "[[job]]\njob = \"7\"\nweight = 1\n[[job]]\njob = \"7\"\nweight = 2",
            "config:4: job[2] \"7\": job[1] sets this job already",
        ),
    ];
    for (text, expected) in cases {
        let message = error(text);
        assert!(message.starts_with(expected), "{text}: {message}");
        assert!(!message.contains('\n'), "{message}");
    }
    let mismatch = EXAMPLE.replace("limit = \"5k/s\"", "limit = \"5MiB/s\"");
    assert_eq!(
        error(&mismatch),
        "config:32: job[1] \"4242\": limit: 5MiB/s counts bytes, but pool \"scratch-md\" \
         counts ops (its capacity is 10k/s)"
    );
}

#[test]
fn toml_errors_are_one_line_with_line_and_column() {
    assert_eq!(
        error("interval = \"1s\"\n[[pool]]\nname = \"x\"\ncapacty = \"1k/s\"\n"),
        "config:4:1: unknown field `capacty`, expected one of `name`, `match`, `capacity`, \
         `algorithm`, `params`, `min_share`, `estimator`, `auto`, `tree`, `costs`, `costs_from`"
    );
    assert!(error("[[pool]]\nname = \"x\"\n").starts_with("config:1:1: missing field `capacity`"));
    assert!(error("intervall = \"1s\"\n").starts_with("config:1:1: unknown field `intervall`"));
    assert_eq!(
        error("interval = \"1s\"\n[[pool]\n"),
        "config:2:7: invalid table header: expected `.`, `]]`"
    );
}

#[test]
fn load_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.toml");
    let missing = ControlConfig::load(&path).unwrap_err();
    assert!(matches!(missing, ConfigError::Read { .. }), "{missing}");
    fs::write(&path, "interval = \"5 parsecs\"\n").unwrap();
    let message = ControlConfig::load(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}:1: interval: ", path.display())),
        "{message}"
    );
}

#[test]
fn save_replaces_the_file_whole_and_keeps_its_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("control.toml");
    let config = example();
    config.save(&path).unwrap();
    let mode = |path: &PathBuf| fs::metadata(path).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(ControlConfig::load(&path).unwrap(), config);

    fs::set_permissions(&path, fs::Permissions::from_mode(0o640)).unwrap();
    let smaller = ControlConfig::default();
    smaller.save(&path).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), smaller.to_toml());
    assert_eq!(mode(&path), 0o640);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["control.toml"], "no temporary file is left behind");
}

#[test]
fn a_failed_save_leaves_everything_as_it_was() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("control.toml");
    fs::create_dir(&target).unwrap();
    fs::write(target.join("inside"), "kept").unwrap();
    let message = example().save(&target).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}: cannot save: ", target.display())),
        "{message}"
    );
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["control.toml"]);
    assert_eq!(fs::read_to_string(target.join("inside")).unwrap(), "kept");
}

/// `capacity = "auto"`: read with its defaults, written back, and refused with one line
/// where it is incomplete or contradicts itself.
#[test]
fn automatic_pools_are_read_written_and_checked() {
    let text = "[[pool]]\nname = \"md\"\nmatch = \"class=metadata\"\ncapacity = \"auto\"\n\
                algorithm = \"psfa\"\nauto = { target_p99 = \"5ms\", start = \"2k/s\" }\n";
    let config = ControlConfig::parse(text).unwrap();
    let pool = &config.pools[0];
    assert_eq!(pool.capacity, Rate::ops(2_000));
    let auto = pool.auto.as_ref().unwrap();
    assert_eq!(auto.target_p99, Duration::from_millis(5));
    assert_eq!(
        (auto.min, auto.max, auto.step, auto.backoff),
        (
            Rate::ops(200),
            Rate::ops(200_000),
            Rate::ops(200),
            crate::config::AutoSpec::DEFAULT_BACKOFF
        )
    );
    let written = config.to_toml();
    assert!(written.contains("capacity = \"auto\"\n"), "{written}");
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    // A metadata call's p99 is often under a millisecond.
    let fine = ControlConfig::parse(&text.replace("\"5ms\"", "\"800us\"")).unwrap();
    let written = fine.to_toml();
    assert!(written.contains("target_p99 = \"800us\""), "{written}");
    assert_eq!(ControlConfig::parse(&written).unwrap(), fine, "{written}");

    let auto_error = |auto: &str| {
        pool_error(&format!(
            "capacity = \"auto\"\nalgorithm = \"psfa\"\nauto = {{ {auto} }}"
        ))
    };
    assert_eq!(
        pool_error("capacity = \"auto\"\nalgorithm = \"psfa\""),
        "config:3: pool[1] \"x\": capacity: \"auto\" needs its settings: \
         auto = { target_p99 = \"5ms\", start = \"1k/s\" }"
    );
    assert_eq!(
        pool_error(
            "capacity = \"1k/s\"\nalgorithm = \"psfa\"\nauto = { target_p99 = \"5ms\", start = \"1k/s\" }"
        ),
        "config:5: pool[1] \"x\": auto: only for a pool whose capacity is \"auto\""
    );
    for (auto, why) in [
        (
            "target_p99 = \"0ms\", start = \"1k/s\"",
            "target_p99: \"0ms\": a whole number of microseconds from 1us to 1h",
        ),
        ("target_p99 = \"5 ms\", start = \"1k/s\"", "target_p99:"),
        (
            "target_p99 = \"5ms\", start = \"1k/s\", max = \"1MiB/s\"",
            "max = \"1MiB/s\": a rate above zero counted as start",
        ),
        (
            "target_p99 = \"5ms\", start = \"1k/s\", min = \"2k/s\", max = \"1k/s\"",
            "max (1k/s) is below min (2k/s)",
        ),
        (
            "target_p99 = \"5ms\", start = \"1k/s\", backoff = 1.5",
            "backoff = 1.5: must be in (0, 1)",
        ),
        (
            "target_p99 = \"5ms\", start = \"1k/s\", watch = \"op=getattr rate=5/s\"",
            "watch = \"op=getattr rate=5/s\": conditions only, no rate=",
        ),
        (
            "target_p99 = \"5ms\", start = \"1k/s\", watch = \"op=stat\"",
            "watch = \"op=stat\": at column 4 ('stat')",
        ),
    ] {
        let e = auto_error(auto);
        assert!(
            e.starts_with("config:5: pool[1] \"x\": auto: ") && e.contains(why),
            "{auto}: {e}"
        );
    }
}

/// An automatic pool's `watch`: the calls whose latency steers it, read in normal form,
/// written back, carried to the local controllers, and refused when no call of the pool
/// could meet it.
#[test]
fn an_automatic_pools_watch_is_read_written_and_checked() {
    let pool = |watch: &str| {
        format!(
            "[[pool]]\nname = \"md\"\nmatch = \"class=metadata,directory\"\n\
             capacity = \"auto\"\nalgorithm = \"psfa\"\n\
             auto = {{ target_p99 = \"5ms\", start = \"1k/s\", watch = \"{watch}\" }}\n"
        )
    };
    let config = ControlConfig::parse(&pool("op=open,getattr  user=alice")).unwrap();
    let auto = config.pools[0].auto.as_ref().unwrap();
    assert_eq!(auto.watch, "op=open,getattr user=alice");
    let written = config.to_toml();
    assert!(
        written.contains(", watch = \"op=open,getattr user=alice\" }"),
        "{written}"
    );
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    assert!(
        !ControlConfig::parse(&pool("op=getattr").replace(", watch = \"op=getattr\"", ""))
            .unwrap()
            .to_toml()
            .contains("watch")
    );
    assert_eq!(
        error(&pool("class=data")),
        "config:6: pool[1] \"md\": auto: watch = \"class=data\": no operation of the pool \
         (class=metadata,directory) meets it"
    );
}

/// An automatic pool read from its server: the source and its mean `target` read,
/// written back, and refused with one line when mixed with the stages' settings.
#[test]
fn an_automatic_pools_source_is_read_written_and_checked() {
    let pool = |auto: &str| {
        format!(
            "[[pool]]\nname = \"md\"\nmatch = \"class=metadata\"\n\
             capacity = \"auto\"\nalgorithm = \"psfa\"\nauto = {{ {auto} }}\n"
        )
    };
    let text =
        pool("source = \"ceph-mds:/run/ceph/ceph-mds.a.asok\", target = \"1ms\", start = \"2k/s\"");
    let config = ControlConfig::parse(&text).unwrap();
    let auto = config.pools[0].auto.as_ref().unwrap();
    assert_eq!(
        auto.source,
        Some(crate::source::SourceSpec::CephMds(
            "/run/ceph/ceph-mds.a.asok".into()
        ))
    );
    assert_eq!(auto.target_p99, Duration::from_millis(1));
    let written = config.to_toml();
    assert!(
        written.contains("source = \"ceph-mds:/run/ceph/ceph-mds.a.asok\", target = \"1ms\""),
        "{written}"
    );
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    for (auto, why) in [
        (
            "source = \"ceph-mds:/x.asok\", start = \"1k/s\"",
            "source needs target",
        ),
        (
            "source = \"ceph-mds:/x.asok\", target_p99 = \"1ms\", start = \"1k/s\"",
            "target = \"…\", not target_p99",
        ),
        (
            "target = \"1ms\", start = \"1k/s\"",
            "without one, target_p99",
        ),
        (
            "source = \"ceph-mds:x.asok\", target = \"1ms\", start = \"1k/s\"",
            "source: \"ceph-mds:x.asok\": expected ceph-mds:ADMIN_SOCKET",
        ),
        (
            "source = \"ceph-mds:/x.asok\", target = \"1ms\", start = \"1k/s\", watch = \"op=open\"",
            "a pool read from its server's source has none",
        ),
        ("start = \"1k/s\"", "needs target_p99"),
    ] {
        let e = error(&pool(auto));
        assert!(
            e.starts_with("config:6: pool[1] \"md\": auto: ") && e.contains(why),
            "{auto}: {e}"
        );
    }
}

/// A job's known I/O period: read, written back, and refused at zero.
#[test]
fn a_job_period_is_read_and_written() {
    let config = ControlConfig::parse("[[job]]\njob = \"7\"\nperiod = \"1.5s\"\n").unwrap();
    assert_eq!(config.jobs[0].period, Some(Duration::from_millis(1_500)));
    let written = config.to_toml();
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    assert_eq!(
        error("[[job]]\njob = \"7\"\nperiod = \"0s\"\n"),
        "config:3: job[1] \"7\": period: must be more than zero"
    );
}

/// `report_retention`: days or a duration, in range, written back as read.
#[test]
fn report_retention_reads_days_and_is_checked() {
    let c = ControlConfig::parse("report_retention = \"30d\"\n").unwrap();
    assert_eq!(c.report_retention, Duration::from_secs(30 * 86400));
    assert_eq!(ControlConfig::parse(&c.to_toml()).unwrap(), c);
    let c = ControlConfig::parse("report_retention = \"90m\"\n").unwrap();
    assert_eq!(c.report_retention, Duration::from_secs(5400));
    assert_eq!(ControlConfig::parse(&c.to_toml()).unwrap(), c);
    for (text, error) in [
        (
            "report_retention = \"0s\"",
            "config:1: report_retention: \"0s\" is out of range (from 1s to 3650d)",
        ),
        (
            "report_retention = \"a week\"",
            "config:1: report_retention: \"a week\" is not a duration (e.g. 200ms, 1s)",
        ),
        (
            "report_retention = \"xd\"",
            "config:1: report_retention: \"xd\" is not a duration (e.g. 7d, 12h)",
        ),
    ] {
        let e = ControlConfig::parse(text).unwrap_err().to_string();
        assert_eq!(e, error);
    }
}

#[test]
fn a_tree_pool_and_its_shares_are_read_and_written_back() {
    let text = "slurm_shares = true\n\n[[pool]]\nname = \"bw\"\ncapacity = \"1GiB/s\"\n\
        tree = \"account,user:equal,job\"\n\n[shares.account]\nphysics = 7\nchem = 3.5\n\n\
        [shares.user]\n\"physics/alice\" = 2\n";
    let config = ControlConfig::parse(text).unwrap();
    let pool = config.pool("bw").unwrap();
    assert_eq!(pool.algorithm, "drf");
    assert_eq!(
        pool.tree.as_ref().map(ToString::to_string).as_deref(),
        Some("account:share,user:equal,job:nodes")
    );
    assert!(config.slurm_shares);
    use sluice_policy::tree::Attr;
    assert_eq!(config.shares.get(Attr::Account, "physics", ""), 7.0);
    assert_eq!(config.shares.get(Attr::User, "alice", "physics"), 2.0);
    assert_eq!(config.shares.get(Attr::User, "alice", "chem"), 1.0);
    assert_eq!(ControlConfig::parse(&config.to_toml()).unwrap(), config);
    let bad = ControlConfig::parse("[shares.account]\nphysics = 0\n").unwrap_err();
    assert_eq!(
        bad.to_string(),
        "config:1: shares: share \"account=physics\": shares.account.physics: must be a finite number > 0"
    );
    let psfa_tree =
        "[[pool]]\nname = \"bw\"\ncapacity = \"1GiB/s\"\nalgorithm = \"psfa\"\ntree = \"job\"\n";
    assert!(ControlConfig::parse(psfa_tree).is_err());
}

/// A pool's `costs`: read, written back, and refused for a pool of bytes or with a name
/// or a number that is not one.
#[test]
fn a_pools_costs_are_read_written_and_checked() {
    let pool = |capacity: &str, costs: &str| {
        format!(
            "[[pool]]\nname = \"md\"\nmatch = \"class=metadata,directory\"\n\
             capacity = \"{capacity}\"\nalgorithm = \"psfa\"\ncosts = {costs}\n"
        )
    };
    let config =
        ControlConfig::parse(&pool("4k/s", "{ mknod = 4, unlink = 4, getattr = 1 }")).unwrap();
    let costs = config.pools[0].costs.as_ref().unwrap();
    assert_eq!(costs.of(sluice_core::op::Op::Mknod), 4);
    assert_eq!(costs.of(sluice_core::op::Op::Open), 1);
    let written = config.to_toml();
    assert!(
        written.contains("costs = { getattr = 1, mknod = 4, unlink = 4 }"),
        "{written}"
    );
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    assert!(
        !ControlConfig::parse(&pool("4k/s", "{}"))
            .unwrap()
            .to_toml()
            .contains("costs")
    );
    assert_eq!(
        error(&pool("1GiB/s", "{ read = 4 }").replace("class=metadata,directory", "class=data")),
        "config:6: pool[1] \"md\": costs: a pool of bytes charges what each call moves; \
         costs weigh the calls of a pool of calls"
    );
    assert!(error(&pool("4k/s", "{ stat = 2 }")).contains("'stat' is neither an operation"));
    assert!(error(&pool("4k/s", "{ mknod = 2.5 }")).contains("a whole number of units"));
    assert!(error(&pool("4k/s", "{ mknod = 0 }")).contains("from 1 to 1000"));
}

/// A pool whose costs are learned from its server (`costs_from`): read, written back,
/// beside fixed costs, and refused for a pool of bytes, a pool without metadata
/// operations, or a source that is not one.
#[test]
fn a_pools_learned_costs_source_is_read_written_and_checked() {
    let pool = |filter: &str, capacity: &str, rest: &str| {
        format!(
            "[[pool]]\nname = \"md\"\nmatch = \"{filter}\"\ncapacity = \"{capacity}\"\n\
             algorithm = \"psfa\"\n{rest}\n"
        )
    };
    let text = pool(
        "class=metadata,directory",
        "4k/s",
        "costs = { open = 3 }\ncosts_from = \"ceph-mds:/run/ceph/ceph-mds.a.asok\"",
    );
    let config = ControlConfig::parse(&text).unwrap();
    assert_eq!(
        config.pools[0].costs_from,
        Some(crate::source::SourceSpec::CephMds(
            "/run/ceph/ceph-mds.a.asok".into()
        ))
    );
    assert_eq!(
        config.pools[0].costs.as_ref().unwrap().to_string(),
        "open=3"
    );
    let written = config.to_toml();
    assert!(
        written.contains("costs_from = \"ceph-mds:/run/ceph/ceph-mds.a.asok\""),
        "{written}"
    );
    assert_eq!(ControlConfig::parse(&written).unwrap(), config, "{written}");
    assert_eq!(
        error(&pool(
            "class=data",
            "1GiB/s",
            "costs_from = \"ceph-mds:/x.asok\""
        )),
        "config:6: pool[1] \"md\": costs_from: a pool of bytes charges what each call moves; \
         learned costs weigh the calls of a pool of calls"
    );
    assert_eq!(
        error(&pool(
            "class=data",
            "1k/s",
            "costs_from = \"ceph-mds:/x.asok\""
        )),
        "config:6: pool[1] \"md\": costs_from: the pool holds no metadata operation \
         (match = \"class=data\"): a server's latencies would weigh none of its calls"
    );
    assert_eq!(
        error(&pool("class=metadata", "1k/s", "costs_from = \"learned\"")),
        "config:6: pool[1] \"md\": costs_from: \"learned\": expected ceph-mds:ADMIN_SOCKET \
         or lustre-mdt:STATS_FILE, with an absolute path"
    );
    // A source in costs is a slip for costs_from.
    assert!(
        error(&pool(
            "class=metadata",
            "1k/s",
            "costs = \"ceph-mds:/x.asok\""
        ))
        .contains("costs_from"),
    );
}

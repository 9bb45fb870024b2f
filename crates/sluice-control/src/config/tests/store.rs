use std::fs;
use std::path::Path;
use std::time::Duration;

use super::{EXAMPLE, example};
use crate::config::{AdminConfig, ConfigError, ConfigStore, ControlConfig, Reloaded, StartedFrom};

/// The store of a controller given `file` (when it is given) in `dir/state`.
fn store(dir: &Path, file: Option<&Path>) -> ConfigStore {
    ConfigStore::new(file.map(Path::to_owned), dir.join("state")).unwrap()
}

/// `config` with `rule` started, as the admin API does it, and saved.
fn change(store: &ConfigStore, config: &ControlConfig, rule: &str) -> ControlConfig {
    let mut next = config.clone();
    next.rule_start(rule).unwrap();
    store.save(&next).unwrap();
    next
}

#[test]
fn without_a_file_the_saved_configuration_is_restored() {
    let dir = tempfile::tempdir().unwrap();
    let first = store(dir.path(), None).start(None).unwrap();
    assert_eq!(first.from, StartedFrom::Nothing);
    assert_eq!(first.config, ControlConfig::default());
    let changed = change(
        &store(dir.path(), None),
        &first.config,
        "cap: op=open rate=1/s",
    );
    let again = store(dir.path(), None).start(None).unwrap();
    assert_eq!(
        again.from,
        StartedFrom::Saved {
            file_unchanged: false
        }
    );
    assert_eq!(again.config, changed);
}

#[test]
fn the_saved_configuration_wins_while_the_file_is_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("control.toml");
    fs::write(&file, EXAMPLE).unwrap();
    let first = store(dir.path(), Some(&file)).start(None).unwrap();
    assert_eq!(first.from, StartedFrom::File);
    assert_eq!(first.config, example());
    let changed = change(
        &store(dir.path(), Some(&file)),
        &first.config,
        "cap: op=open rate=1/s",
    );
    let again = store(dir.path(), Some(&file)).start(None).unwrap();
    assert_eq!(
        again.from,
        StartedFrom::Saved {
            file_unchanged: true
        }
    );
    assert_eq!(again.config, changed);
    assert_eq!(
        fs::read_to_string(&file).unwrap(),
        EXAMPLE,
        "the file was written"
    );
}

#[test]
fn a_changed_file_replaces_the_saved_configuration_which_is_kept_aside() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("control.toml");
    fs::write(&file, EXAMPLE).unwrap();
    let s = store(dir.path(), Some(&file));
    let first = s.start(None).unwrap();
    change(&s, &first.config, "cap: op=open rate=1/s");
    let edited = EXAMPLE.replace("interval = \"1s\"", "interval = \"2s\"");
    fs::write(&file, &edited).unwrap();
    let again = store(dir.path(), Some(&file)).start(None).unwrap();
    assert_eq!(
        again.from,
        StartedFrom::FileChanged {
            dropped: vec!["interval".into(), "rule cap".into()]
        }
    );
    assert_eq!(again.config, ControlConfig::parse(&edited).unwrap());
    let replaced = fs::read_to_string(s.replaced_path()).unwrap();
    assert!(replaced.contains("cap: op=open rate=1/s"), "{replaced}");
    // From now on the edited file is the one last read.
    let third = store(dir.path(), Some(&file)).start(None).unwrap();
    assert_eq!(
        third.from,
        StartedFrom::Saved {
            file_unchanged: true
        }
    );
}

#[test]
fn a_sighup_reads_the_file_but_changes_nothing_while_its_text_is_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("control.toml");
    fs::write(&file, EXAMPLE).unwrap();
    let s = store(dir.path(), Some(&file));
    let first = s.start(None).unwrap();
    let changed = change(&s, &first.config, "cap: op=open rate=1/s");
    assert!(matches!(s.reload(&changed).unwrap(), Reloaded::Unchanged));
    let edited = format!("{EXAMPLE}\n[[rule]]\nrule = \"by-hand: op=mkdir rate=1/s\"\n");
    fs::write(&file, &edited).unwrap();
    let Reloaded::Changed {
        config,
        text,
        dropped,
    } = s.reload(&changed).unwrap()
    else {
        panic!("the edited file was not read");
    };
    assert_eq!(dropped, ["rule cap"]);
    assert_eq!(*config, ControlConfig::parse(&edited).unwrap());
    s.keep_file(&changed, &config, &text).unwrap();
    assert!(matches!(s.reload(&config).unwrap(), Reloaded::Unchanged));
    assert_eq!(s.start(None).unwrap().config, *config);
    assert!(matches!(
        store(dir.path(), None).reload(&config).unwrap(),
        Reloaded::NoFile
    ));
}

#[test]
fn the_admin_table_is_the_files_and_never_saved() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("control.toml");
    fs::write(&file, EXAMPLE).unwrap();
    let s = store(dir.path(), Some(&file));
    let started = s.start(None).unwrap();
    assert_eq!(started.config.admin, example().admin);
    let saved = fs::read_to_string(s.in_force_path()).unwrap();
    assert!(!saved.contains("[admin]"), "{saved}");
    // Restored without the file, the saved configuration has no admin table.
    let alone = store(dir.path(), None).start(None).unwrap();
    assert_eq!(alone.config.admin, AdminConfig::default());
    assert_eq!(alone.config.pools, example().pools);
}

#[test]
fn the_interval_given_at_start_is_in_force_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), None);
    let quick = Duration::from_millis(250);
    assert_eq!(s.start(Some(quick)).unwrap().config.interval, quick);
    assert_eq!(s.start(None).unwrap().config.interval, quick);
}

#[test]
fn a_damaged_saved_configuration_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), None);
    fs::write(s.in_force_path(), "[[pool]]\nname = \n").unwrap();
    let e = s.start(None).unwrap_err();
    assert!(matches!(e, ConfigError::Toml { .. }), "{e}");
    assert!(
        e.to_string()
            .starts_with(&s.in_force_path().display().to_string()),
        "{e}"
    );
}

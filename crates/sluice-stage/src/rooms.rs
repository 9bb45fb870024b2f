//! The stage's rooms import in one direction: each module only from the modules above it
//! in docs/architecture.md's table "The stage's rooms and their imports". Read from the
//! sources, so that an import that closes a circle fails here rather than in a review,
//! and a new module fails until the table places it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The rooms in the order of the table: the lowest room first.
fn rooms(doc: &str) -> Vec<String> {
    let at = doc
        .find("### The stage's rooms and their imports")
        .expect("docs/architecture.md has the stage's table");
    doc[at..]
        .lines()
        .skip_while(|l| !l.starts_with("| module"))
        .skip(2)
        .take_while(|l| l.starts_with("| `"))
        .filter_map(|l| l[3..].split('`').next().map(str::to_owned))
        .collect()
}

/// The `.rs` files of a room: `NAME.rs`, or every file under `NAME/`.
fn files(src: &Path, room: &str) -> Vec<PathBuf> {
    let file = src.join(format!("{room}.rs"));
    if file.exists() {
        return vec![file];
    }
    let mut found = Vec::new();
    let mut dirs = vec![src.join(room)];
    while let Some(dir) = dirs.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                found.push(path);
            }
        }
    }
    found
}

/// The rooms a room's code names as `crate::ROOM` or in `crate::{ROOM, …}`, comments
/// left out (doc links may name any room).
fn imports(src: &Path, room: &str) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    for file in files(src, room) {
        let text = std::fs::read_to_string(&file).expect("a source file");
        let code: String = text
            .lines()
            .map(|l| l.split("//").next().unwrap_or_default())
            .collect::<Vec<_>>()
            .join("\n");
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            match rest.strip_prefix('{') {
                Some(group) => named.extend(group_heads(group)),
                None => {
                    named.insert(ident(rest));
                }
            }
        }
    }
    named.remove(room);
    named
}

/// The leading identifier of `text`.
fn ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect()
}

/// The first name of each item of a `use` group, `text` starting after its `{`.
fn group_heads(text: &str) -> Vec<String> {
    let mut heads = vec![ident(text)];
    let mut depth = 0;
    for (at, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(ident(&text[at + 1..])),
            _ => {}
        }
    }
    heads.retain(|h| !h.is_empty());
    heads
}

#[test]
fn each_room_imports_only_from_the_rooms_above_it_in_the_table() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(crate_dir.join("../../docs/architecture.md"))
        .expect("docs/architecture.md");
    let order = rooms(&doc);
    let src = crate_dir.join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    // Every module of the library has its row; `docs` and this one are tests.
    for module in lib.lines().filter_map(|l| l.strip_prefix("mod ")) {
        let module = module.trim_end_matches(';');
        assert!(
            order.iter().any(|r| r == module) || ["docs", "rooms"].contains(&module),
            "module `{module}` has no row in docs/architecture.md's table of the stage's rooms"
        );
    }
    for (at, room) in order.iter().enumerate() {
        for name in imports(&src, room) {
            assert!(
                order[..at].contains(&name),
                "`{room}` imports `crate::{name}`, which is not above it in \
                 docs/architecture.md's table ({order:?})"
            );
        }
    }
}

//! `docs/operations.md`, generated from the hook table. The test fails when the checked-in
//! copy is stale; `SLUICE_BLESS=1 cargo test -p sluice-stage` rewrites it.

use std::fmt::Write as _;

use sluice_core::op::{Class, Op};

use crate::hooks::{SYMBOLS, Symbol, VARIADIC};

fn target_text(kind: &str) -> &'static str {
    match kind {
        "Path" => "path",
        "At" => "dirfd + path",
        "Fd" => "fd",
        "File" => "FILE*",
        "Dir" => "DIR*",
        "Copy" => "fd → fd",
        _ => "—",
    }
}

/// When a bytes rule charges a call of this size expression.
fn charge_text(size: &str) -> &'static str {
    match size.split('(').next().unwrap_or("") {
        "Known" => "before",
        "UpTo" => "up to the burst before, the rest after",
        "AfterCall" => "after",
        _ => "—",
    }
}

/// Every symbol in table order, each C-variadic one just before the v-variant whose hook
/// it calls (and counted as that one is).
fn all_symbols() -> Vec<Symbol> {
    let mut all = Vec::new();
    for sym in SYMBOLS {
        for (name, _) in VARIADIC.iter().filter(|(_, via)| *via == sym.name) {
            all.push(Symbol { name, ..*sym });
        }
        all.push(*sym);
    }
    all
}

fn render() -> String {
    let mut s = String::from(
        "# Operations\n\n\
         Generated from the stage's table of symbols (`crates/sluice-stage/src/symbols.rs`) by\n\
         `SLUICE_BLESS=1 cargo test -p sluice-stage`; do not edit by hand.\n\n\
         Every intercepted libc symbol, the operation (`op=`) it is counted and held as, its\n\
         class (`class=`), and how its target is found. Bookkeeping symbols keep the stage's\n\
         descriptor table and current directory right; they are never counted or held.\n\n\
         A bytes rule (`rate=…B/s`) charges a data call its byte count *before* it runs when\n\
         the count is known then, *up to the burst before* and the rest once it returns when\n\
         only an upper bound is known, and *after* it returns when nothing is known before\n\
         (formatted stdio, `getline`); a call charged after it runs delays the next call.\n\
         The C-variadic symbols (`printf`, `fscanf`, …) are defined in the stage's C shim\n\
         and counted as the v-variant whose hook they call. `sendfile` and\n\
         `copy_file_range` are judged by both ends: a managed source is counted and held as\n\
         a `read`, a managed destination as a `write`.\n\n",
    );
    let _ = writeln!(
        s,
        "## Operations by class\n\n| class | operations |\n|---|---|"
    );
    for c in Class::ALL {
        let ops: Vec<_> = Op::ALL
            .iter()
            .filter(|o| o.class() == c)
            .map(|o| format!("`{o}`"))
            .collect();
        let _ = writeln!(s, "| `{c}` | {} |", ops.join(", "));
    }
    let all = all_symbols();
    let _ = writeln!(
        s,
        "\n## Symbols ({})\n\n| symbol | op | class | target | bytes charged |\n|---|---|---|---|---|",
        all.len()
    );
    for sym in &all {
        let (op, class) = match sym.op {
            // Both ends are judged: the source is read, the destination written.
            Some(op) if sym.target == "Copy" => (
                format!("`{}` (source) + `{op}` (destination)", Op::Read),
                format!("`{}`", op.class()),
            ),
            Some(op) => (format!("`{op}`"), format!("`{}`", op.class())),
            None => ("bookkeeping".to_owned(), "—".to_owned()),
        };
        let _ = writeln!(
            s,
            "| `{}` | {op} | {class} | {} | {} |",
            sym.name,
            target_text(sym.target),
            charge_text(sym.size)
        );
    }
    s
}

#[test]
fn operations_doc_is_current() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/operations.md");
    let want = render();
    if std::env::var_os("SLUICE_BLESS").is_some() {
        std::fs::write(path, &want).unwrap();
    }
    let have = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        have == want,
        "docs/operations.md is stale: run SLUICE_BLESS=1 cargo test -p sluice-stage"
    );
}

#[test]
fn every_operation_has_a_symbol() {
    for op in Op::ALL {
        assert!(
            SYMBOLS.iter().any(|s| s.op == Some(*op)),
            "{op} has no symbol"
        );
    }
}

/// The shim's `VARIADIC(name, via, …)` lines define exactly the table's variadic list,
/// and each calls the hook of a symbol of the table.
#[test]
fn shim_defines_the_variadic_list() {
    let shim = include_str!("shim.c");
    let defined: Vec<(&str, &str)> = shim
        .lines()
        .filter_map(|l| l.strip_prefix("VARIADIC("))
        .map(|rest| {
            let mut parts = rest.split(',').map(str::trim);
            (parts.next().unwrap(), parts.next().unwrap())
        })
        .collect();
    assert_eq!(
        defined, VARIADIC,
        "shim.c and the table's variadic list differ"
    );
    for (name, via) in VARIADIC {
        assert!(
            SYMBOLS.iter().any(|s| s.name == *via),
            "{name} calls {via}, which the table does not hook"
        );
        assert!(
            SYMBOLS.iter().all(|s| s.name != *name),
            "{name} is both variadic and a row"
        );
    }
}

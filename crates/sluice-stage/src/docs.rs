//! `docs/operations.md`, generated from the hook table. The test fails when the checked-in
//! copy is stale; `SLUICE_BLESS=1 cargo test -p sluice-stage` rewrites it.

use std::fmt::Write as _;

use sluice_core::op::{Class, Op};

use crate::hooks::SYMBOLS;

fn target_text(kind: &str) -> &'static str {
    match kind {
        "Path" => "path",
        "At" => "dirfd + path",
        "Fd" => "fd",
        "File" => "FILE*",
        "Dir" => "DIR*",
        _ => "—",
    }
}

fn render() -> String {
    let mut s = String::from(
        "# Operations\n\n\
         Generated from the stage's hook table (`crates/sluice-stage/src/hooks/table.rs`) by\n\
         `SLUICE_BLESS=1 cargo test -p sluice-stage`; do not edit by hand.\n\n\
         Every intercepted libc symbol, the operation (`op=`) it is counted and held as, its\n\
         class (`class=`), and how its target is found. Bookkeeping symbols keep the stage's\n\
         descriptor table and current directory right; they are never counted or held.\n\n",
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
    let _ = writeln!(
        s,
        "\n## Symbols ({})\n\n| symbol | op | class | target |\n|---|---|---|---|",
        SYMBOLS.len()
    );
    for sym in SYMBOLS {
        let (op, class) = match sym.op {
            Some(op) => (format!("`{op}`"), format!("`{}`", op.class())),
            None => ("bookkeeping".to_owned(), "—".to_owned()),
        };
        let _ = writeln!(
            s,
            "| `{}` | {op} | {class} | {} |",
            sym.name,
            target_text(sym.target)
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

//! Builds the stage's C shim (`src/shim.c`): the C-variadic entry points stable Rust
//! cannot define, the initial-exec thread-local block, the descriptor table, and the reads
//! of glibc's public `FILE` layout.
//!
//! rustc links a cdylib with a version script that exports only Rust's own `#[no_mangle]`
//! items, so the variadic entry points defined in C would stay local: a second version
//! script, written here from the shim's `VARIADIC(...)` lines, exports them too.

use std::fmt::Write as _;
use std::path::PathBuf;

/// Bytes of the thread-local block the shim reserves for the stage (`guard::Local`, which
/// checks at compile time that it fits).
const TLS_BYTES: usize = 4096;
/// Where glibc's `FILE` keeps its descriptor (`_fileno`) on 64-bit targets: the shim
/// checks it at compile time, `stream::fd` reads it without a call.
const FILE_FILENO_OFFSET: usize = 112;
/// Descriptors the descriptor table holds (`fdtable::TABLE_LEN`; the shim defines it).
const FD_TABLE_LEN: usize = 1 << 20;

fn main() {
    let shim = "src/shim.c";
    println!("cargo:rerun-if-changed={shim}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-env=SLUICE_TLS_BYTES={TLS_BYTES}");
    println!("cargo:rustc-env=SLUICE_FD_TABLE_LEN={FD_TABLE_LEN}");
    println!("cargo:rustc-env=SLUICE_FILE_FILENO_OFFSET={FILE_FILENO_OFFSET}");
    cc::Build::new()
        .file(shim)
        .define("SLUICE_TLS_BYTES", TLS_BYTES.to_string().as_str())
        .define("SLUICE_FD_TABLE_LEN", FD_TABLE_LEN.to_string().as_str())
        .define(
            "SLUICE_FILE_FILENO_OFFSET",
            FILE_FILENO_OFFSET.to_string().as_str(),
        )
        // The shim defines printf & co itself: the compiler must not treat them as the
        // builtins it knows, nor rewrite its calls through fortified variants.
        .flag("-fno-builtin")
        .flag("-fvisibility=hidden")
        .flag("-U_FORTIFY_SOURCE")
        .flag("-std=gnu11")
        .warnings(true)
        .extra_warnings(true)
        .warnings_into_errors(true)
        .compile("sluice_shim");

    let text = std::fs::read_to_string(shim).expect("src/shim.c");
    let mut map = String::from("{\n  global:\n");
    for name in variadic_names(&text) {
        let _ = writeln!(map, "    {name};");
    }
    map.push_str("};\n");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR")).join("shim.map");
    std::fs::write(&out, map).expect("cannot write the shim's version script");
    println!(
        "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
        out.display()
    );
}

/// The names the shim's `VARIADIC(name, …)` and `ARGLIST(name, …)` lines define.
fn variadic_names(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|l| {
            l.strip_prefix("VARIADIC(")
                .or_else(|| l.strip_prefix("ARGLIST("))
        })
        .filter_map(|rest| rest.split(',').next())
        .map(str::trim)
        .collect()
}

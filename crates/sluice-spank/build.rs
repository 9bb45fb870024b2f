//! Sets the Slurm version the plugin declares (`plugin_version`): Slurm loads a plugin only
//! when its major and minor version match its own. Taken from `SLUICE_SLURM_VERSION`
//! (e.g. `23.11`), else from the installed `slurm/slurm_version.h`, else 22.05 (Debian 12).

fn main() {
    println!("cargo:rerun-if-env-changed=SLUICE_SLURM_VERSION");
    let header = "/usr/include/slurm/slurm_version.h";
    println!("cargo:rerun-if-changed={header}");
    let number = match std::env::var("SLUICE_SLURM_VERSION") {
        Ok(v) => from_dotted(&v).unwrap_or_else(|| {
            panic!("SLUICE_SLURM_VERSION={v:?}: expected MAJOR.MINOR[.MICRO], e.g. 23.11")
        }),
        Err(_) => std::fs::read_to_string(header)
            .ok()
            .and_then(|h| from_header(&h))
            .unwrap_or(22 << 16 | 5 << 8),
    };
    println!("cargo:rustc-env=SLUICE_SLURM_VERSION_NUMBER={number}");
}

/// `23.11.4` as Slurm's version number, `0x170b04`.
fn from_dotted(v: &str) -> Option<u32> {
    let mut parts = v.trim().split('.').map(|p| p.parse::<u32>().ok());
    let (major, minor) = (parts.next()??, parts.next()??);
    let micro = parts.next().flatten().unwrap_or(0);
    Some(major << 16 | minor << 8 | micro)
}

/// The value of `#define SLURM_VERSION_NUMBER 0x…` in slurm_version.h.
fn from_header(text: &str) -> Option<u32> {
    let hex = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("#define SLURM_VERSION_NUMBER"))?
        .trim()
        .strip_prefix("0x")?;
    u32::from_str_radix(hex, 16).ok()
}

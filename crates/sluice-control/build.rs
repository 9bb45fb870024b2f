//! Compiles the control-plane protocol with protox, so that building needs no system
//! `protoc`.

use std::path::PathBuf;

/// What the report types derive besides prost's own.
const SERDE: &str = "#[derive(serde::Serialize, serde::Deserialize)] #[serde(default)]";

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR")?);
    let root = manifest.join("../../proto");
    let proto = root.join("sluice/v1/control.proto");
    println!("cargo:rerun-if-changed={}", root.display());
    println!("cargo:rerun-if-changed={}", proto.display());

    let fds = protox::compile([&proto], [&root])?;
    // The descriptor set has no paths to watch; the lines above do that job.
    tonic_prost_build::configure()
        .emit_rerun_if_changed(false)
        .build_client(true)
        .build_server(true)
        // The generated `connect` constructor would clash with Control's `Connect` rpc,
        // and clients go through `transport::connect` anyway.
        .build_transport(false)
        // Ordered maps: reports and views list jobs and pools in a stable order.
        .btree_map(".")
        // Job reports are kept in the state directory as the JSON `sluice report --json`
        // prints: one type from the wire to the disk.
        .type_attribute(".sluice.v1.JobSummary", SERDE)
        .type_attribute(".sluice.v1.NodeTotals", SERDE)
        .type_attribute(".sluice.v1.PoolTotals", SERDE)
        .type_attribute(".sluice.v1.OutsideStage", SERDE)
        .compile_fds(fds)?;
    Ok(())
}

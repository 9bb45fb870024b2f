//! `sluice top`: the cluster in a terminal, refreshed every interval.

use anyhow::{Context, Result};
use sluice_control::config::parse_duration;
use sluice_core::error::Chain;
use sluice_workload::top::{self, Snapshot};

use crate::Usage;
use crate::client::ServerArgs;

/// A live view of the cluster: jobs with their demand, rate, allocation, wait and nodes;
/// pools with their capacity and use. Refreshed every interval of the controller (or
/// --refresh). Keys: d, r, a, w, j sort by demand, rate, allocation, wait or job; /
/// filters by a part of the job, user or pool; q quits. With --json, prints one snapshot
/// and exits.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// How often to refresh, e.g. 500ms or 2s (default: the controller's interval,
    /// at least 200ms).
    #[arg(long, value_name = "DUR")]
    refresh: Option<String>,
}

impl TopArgs {
    /// Runs until q (or Esc, or Ctrl-C).
    pub fn run(&self) -> Result<i32> {
        let refresh = self
            .refresh
            .as_ref()
            .map(|t| parse_duration(t).map_err(|e| Usage(format!("--refresh: {e}"))))
            .transpose()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let target = self.server.target()?;
        let mut admin = runtime.block_on(target.admin())?;
        if self.server.json {
            let s = runtime.block_on(target.within(Snapshot::fetch(&mut admin)))?;
            println!("{}", serde_json::to_string_pretty(&s.json())?);
            return Ok(0);
        }
        // A controller that stops answering leaves the last view up, with the error.
        let fetch = || {
            runtime
                .block_on(target.within(Snapshot::fetch(&mut admin)))
                .map_err(|e| Chain(&e).to_string())
        };
        top::show(fetch, refresh)?;
        Ok(0)
    }
}

//! `sluice report JOB`: what sluice did to a job that ended.

use anyhow::Result;
use sluice_control::proto::NameRequest;
use sluice_control::render::report::report_table;
use sluice_control::report::now_s;

use crate::client::ServerArgs;

/// Show what sluice did to a job that ended: per pool and per node, the calls its threads
/// were admitted, the bytes charged, the seconds they were held waiting, and its
/// allocation over time (least, median, most).
///
/// A job's report is made when it ends on a node and completed as its other nodes end;
/// the controller keeps it for `report_retention` (default 7d). A user may read the
/// reports of their own jobs (a job they named with `sluice run --job ID` by that ID);
/// an administrator any job's. Without slurmdbd, Slurm shows the one-line summary in
/// `scontrol show job`'s AdminComment; with it, `sacct -o AdminComment` too.
///
/// Example: sluice report 4242 --json
#[derive(clap::Args, Debug)]
#[command(verbatim_doc_comment)]
pub struct ReportArgs {
    /// The job id (as `sluice jobs` lists it, or a job of your own by the ID you named).
    job: String,
    #[command(flatten)]
    server: ServerArgs,
}

impl ReportArgs {
    /// Prints the report.
    pub fn run(&self) -> Result<i32> {
        let name = self.job.clone();
        let report = self
            .server
            .ask(async |c| c.summary(NameRequest { name }).await)?;
        if self.server.json {
            let value = serde_json::to_value(&report).expect("a report serializes");
            println!("{}", serde_json::to_string_pretty(&value).expect("JSON"));
        } else {
            print!("{}", report_table(&report, now_s()));
        }
        Ok(0)
    }
}

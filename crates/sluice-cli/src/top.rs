//! `sluice top`: the cluster in a terminal, refreshed every interval.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table};
use ratatui::{DefaultTerminal, Frame};
use serde_json::json;
use sluice_control::admin::{jobs_json, pools_json, status_json};
use sluice_control::config::parse_duration;
use sluice_control::proto::{Empty, JobsReply, PoolListReply, StatusReply};

use crate::Usage;
use crate::client::{Admin, ServerArgs, refused};

/// A live view of the cluster: jobs sorted by demand with their rate, allocation, wait
/// and nodes; pools with their capacity and use. Refreshed every interval of the
/// controller (or --refresh); q quits. With --json, prints one snapshot and exits.
#[derive(clap::Args, Debug)]
pub struct TopArgs {
    #[command(flatten)]
    server: ServerArgs,
    /// How often to refresh, e.g. 500ms or 2s (default: the controller's interval,
    /// at least 200ms).
    #[arg(long, value_name = "DUR")]
    refresh: Option<String>,
}

/// What one refresh fetched.
struct Snapshot {
    status: StatusReply,
    jobs: JobsReply,
    pools: PoolListReply,
}

/// Never redraw faster than this, whatever the interval: a terminal over ssh.
const FASTEST: Duration = Duration::from_millis(200);

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
        let mut admin = runtime.block_on(self.server.admin())?;
        if self.server.json {
            let s = runtime.block_on(fetch(&self.server, &mut admin))?;
            let value = json!({
                "status": status_json(&s.status),
                "jobs": jobs_json(&s.jobs)["jobs"],
                "pools": pools_json(&s.pools)["pools"],
            });
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(0);
        }
        let mut terminal = ratatui::init();
        let result = watch(&mut terminal, &runtime, &self.server, &mut admin, refresh);
        ratatui::restore();
        result.map(|()| 0)
    }
}

/// One refresh, within the deadline.
async fn fetch(server: &ServerArgs, admin: &mut Admin) -> Result<Snapshot> {
    server.within(&server.endpoint()?, fetch_all(admin)).await
}

async fn fetch_all(admin: &mut Admin) -> Result<Snapshot> {
    let status = admin.status(Empty {}).await.map_err(refused)?.into_inner();
    let jobs = admin.jobs(Empty {}).await.map_err(refused)?.into_inner();
    let pools = admin
        .pool_list(Empty {})
        .await
        .map_err(refused)?
        .into_inner();
    Ok(Snapshot {
        status,
        jobs,
        pools,
    })
}

fn watch(
    terminal: &mut DefaultTerminal,
    runtime: &tokio::runtime::Runtime,
    server: &ServerArgs,
    admin: &mut Admin,
    refresh: Option<Duration>,
) -> Result<()> {
    let mut last: Option<Snapshot> = None;
    loop {
        // A controller that stops answering leaves the last view up, with the error.
        let fetched = runtime.block_on(fetch(server, admin));
        let error = fetched.as_ref().err().map(|e| format!("{e:#}"));
        if let Ok(s) = fetched {
            last = Some(s);
        }
        terminal.draw(|f| draw(f, last.as_ref(), error.as_deref()))?;
        let every = refresh
            .or_else(|| {
                last.as_ref()
                    .map(|s| Duration::from_secs_f64(s.status.interval_s))
            })
            .unwrap_or(Duration::from_secs(1))
            .max(FASTEST);
        let until = Instant::now() + every;
        while let Some(left) = until.checked_duration_since(Instant::now()) {
            if !event::poll(left)? {
                break;
            }
            if let Event::Key(k) = event::read()?
                && k.kind == KeyEventKind::Press
            {
                let ctrl_c =
                    k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                if matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c {
                    return Ok(());
                }
            }
        }
    }
}

fn draw(f: &mut Frame, s: Option<&Snapshot>, error: Option<&str>) {
    let pools = s.map_or(0, |s| s.pools.pools.len()) as u16;
    let [head, jobs_area, pools_area] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(5),
        Constraint::Length(pools + 3),
    ])
    .areas(f.area());
    let header = match (s, error) {
        (_, Some(e)) => format!("controller not answering: {e}"),
        (Some(s), None) => {
            let st = &s.status;
            format!(
                "{} controller{}: {} local(s), {} job(s), {} pool(s), {} rule(s); \
                 interval {}s, cycle {}, cycle time median {:.0} µs",
                st.role,
                if st.single_node { " (single node)" } else { "" },
                st.locals,
                st.jobs,
                st.pools,
                st.rules,
                st.interval_s,
                st.cycle,
                st.cycle_us_median
            )
        }
        (None, None) => "connecting…".to_owned(),
    };
    f.render_widget(
        Paragraph::new(Line::from(header)).block(Block::bordered().title(" sluice top — q quits ")),
        head,
    );
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let Some(s) = s else { return };
    f.render_widget(
        jobs_table(&s.jobs).header(Row::new(JOB_COLUMNS).style(bold)),
        jobs_area,
    );
    let pool_rows = s.pools.pools.iter().map(|p| {
        Row::new(vec![
            p.name.clone(),
            p.algorithm.clone(),
            p.capacity.clone(),
            format!("{:.0}", p.allocated),
            format!("{:.0}", p.used),
            p.jobs.to_string(),
            p.filter.clone(),
        ])
    });
    let widths = [12, 12, 12, 12, 12, 6, 30].map(Constraint::Min);
    f.render_widget(
        Table::new(pool_rows, widths)
            .header(
                Row::new([
                    "POOL",
                    "ALGORITHM",
                    "CAPACITY",
                    "ALLOCATED",
                    "USED",
                    "JOBS",
                    "MATCH",
                ])
                .style(bold),
            )
            .block(Block::bordered().title(" pools ")),
        pools_area,
    );
}

const JOB_COLUMNS: [&str; 8] = [
    "JOB",
    "USER",
    "POOL",
    "DEMAND",
    "RATE",
    "ALLOCATION",
    "WAIT",
    "NODES",
];

/// One row per job and pool, the most demanding first.
fn jobs_table(jobs: &JobsReply) -> Table<'static> {
    let mut rows: Vec<_> = jobs
        .jobs
        .iter()
        .flat_map(|j| j.pools.iter().map(move |(pool, share)| (j, pool, share)))
        .collect();
    rows.sort_by(|a, b| {
        b.2.demand
            .total_cmp(&a.2.demand)
            .then(a.0.job.cmp(&b.0.job))
    });
    let rows = rows.into_iter().map(|(j, pool, share)| {
        Row::new(vec![
            j.job.clone(),
            j.user.clone(),
            pool.clone(),
            format!("{:.0}", share.demand),
            format!("{:.0}", share.rate),
            format!("{:.0}", share.allocation),
            format!("{:.2}", share.wait),
            j.nodes.join(","),
        ])
    });
    let widths = [16, 10, 12, 12, 12, 12, 8, 20].map(Constraint::Min);
    Table::new(rows, widths).block(Block::bordered().title(" jobs, by demand (units/s) "))
}

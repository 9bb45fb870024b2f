//! `sluice top`'s terminal view: the jobs and pools of a controller, sorted and filtered
//! at the keyboard, redrawn from each snapshot fetched.

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Row, Table, Wrap};
use ratatui::{DefaultTerminal, Frame};
use serde_json::{Value, json};
use sluice_control::admin::{jobs_json, pools_json, status_json};
use sluice_control::admin_client::{Admin, AskError};
use sluice_control::proto::{Empty, JobInfo, JobsReply, PoolListReply, PoolShare, StatusReply};
use sluice_control::render::admin::{capacity_text, pool_units, rate_in, status_lines};
use sluice_core::hostlist;

/// What one refresh fetched.
pub struct Snapshot {
    /// The controller's status.
    pub status: StatusReply,
    /// Its jobs.
    pub jobs: JobsReply,
    /// Its pools.
    pub pools: PoolListReply,
}

impl Snapshot {
    /// One refresh: the controller's status, jobs and pools.
    pub async fn fetch(admin: &mut Admin) -> Result<Snapshot, AskError> {
        let status = admin.status(Empty {}).await?.into_inner();
        let jobs = admin.jobs(Empty {}).await?.into_inner();
        let pools = admin.pool_list(Empty {}).await?.into_inner();
        Ok(Snapshot {
            status,
            jobs,
            pools,
        })
    }

    /// The snapshot as `sluice top --json` prints it.
    pub fn json(&self) -> Value {
        json!({
            "status": status_json(&self.status),
            "jobs": jobs_json(&self.jobs)["jobs"],
            "pools": pools_json(&self.pools)["pools"],
        })
    }
}

/// Never redraw faster than this, whatever the interval: a terminal over ssh.
const FASTEST: Duration = Duration::from_millis(200);

/// Takes the terminal and shows what `fetch` returns (or why it failed, over the last
/// view), fetching again every `refresh` (default: the controller's interval), until q,
/// Esc or Ctrl-C; the terminal is restored whatever happens.
pub fn show(
    fetch: impl FnMut() -> Result<Snapshot, String>,
    refresh: Option<Duration>,
) -> std::io::Result<()> {
    let mut terminal = ratatui::init();
    let result = watch(&mut terminal, fetch, refresh);
    ratatui::restore();
    result
}

fn watch(
    terminal: &mut DefaultTerminal,
    mut fetch: impl FnMut() -> Result<Snapshot, String>,
    refresh: Option<Duration>,
) -> std::io::Result<()> {
    let mut last: Option<Snapshot> = None;
    let mut error = None;
    let mut view = View::default();
    let mut next_fetch = Instant::now();
    loop {
        if Instant::now() >= next_fetch {
            // A controller that stops answering leaves the last view up, with the error.
            match fetch() {
                Ok(s) => {
                    last = Some(s);
                    error = None;
                }
                Err(e) => error = Some(e),
            }
            let every = refresh
                .or_else(|| {
                    last.as_ref()
                        .map(|s| Duration::from_secs_f64(s.status.interval_s))
                })
                .unwrap_or(Duration::from_secs(1))
                .max(FASTEST);
            next_fetch = Instant::now() + every;
        }
        terminal.draw(|f| draw(f, last.as_ref(), error.as_deref(), &view))?;
        // A key redraws at once, from the snapshot held.
        let left = next_fetch.saturating_duration_since(Instant::now());
        if event::poll(left)?
            && let Event::Key(k) = event::read()?
            && k.kind == KeyEventKind::Press
            && view.key(k.code, k.modifiers) == Next::Quit
        {
            return Ok(());
        }
    }
}

/// What the jobs are sorted by; the most first, but for the job's own id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum SortBy {
    #[default]
    Demand,
    Rate,
    Allocation,
    Wait,
    Job,
}

impl SortBy {
    /// The key that selects it, and its name in the help line.
    fn of_key(c: char) -> Option<SortBy> {
        SORT_KEYS
            .iter()
            .find(|(k, _, _)| *k == c)
            .map(|(_, by, _)| *by)
    }

    fn name(self) -> &'static str {
        SORT_KEYS
            .iter()
            .find(|(_, by, _)| *by == self)
            .map_or("", |(_, _, name)| name)
    }
}

const SORT_KEYS: [(char, SortBy, &str); 5] = [
    ('d', SortBy::Demand, "demand"),
    ('r', SortBy::Rate, "rate"),
    ('a', SortBy::Allocation, "allocation"),
    ('w', SortBy::Wait, "wait"),
    ('j', SortBy::Job, "job"),
];

/// What the person at the terminal chose: the order, the filter, and whether they are
/// typing one.
#[derive(Debug, Default)]
struct View {
    sort: SortBy,
    /// Jobs shown are those whose id, user or pool contains it (any case).
    filter: String,
    /// The filter being typed after `/`, until Enter (kept) or Esc (dropped).
    typing: Option<String>,
}

/// After a key: go on, or quit.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    Go,
    Quit,
}

impl View {
    fn key(&mut self, code: KeyCode, modifiers: KeyModifiers) -> Next {
        if code == KeyCode::Char('c') && modifiers.contains(KeyModifiers::CONTROL) {
            return Next::Quit;
        }
        if let Some(typed) = &mut self.typing {
            match code {
                KeyCode::Enter => self.filter = self.typing.take().unwrap_or_default(),
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    typed.pop();
                }
                KeyCode::Char(c) => typed.push(c),
                _ => {}
            }
            return Next::Go;
        }
        match code {
            KeyCode::Char('q') => return Next::Quit,
            // Esc first clears a filter, as in less and htop.
            KeyCode::Esc if !self.filter.is_empty() => self.filter.clear(),
            KeyCode::Esc => return Next::Quit,
            KeyCode::Char('/') => self.typing = Some(String::new()),
            KeyCode::Char(c) => {
                if let Some(by) = SortBy::of_key(c) {
                    self.sort = by;
                }
            }
            _ => {}
        }
        Next::Go
    }

    /// Whether a row of `job` in `pool` passes the filter.
    fn shows(&self, job: &JobInfo, pool: &str) -> bool {
        let filter = self.typing.as_ref().unwrap_or(&self.filter).to_lowercase();
        [&job.job, &job.user, pool]
            .iter()
            .any(|field| field.to_lowercase().contains(&filter))
    }

    /// The help line: every key, with what is in force.
    fn help(&self) -> String {
        let keys: String = SORT_KEYS.iter().map(|(k, _, _)| *k).collect();
        match &self.typing {
            Some(typed) => format!(" filter: {typed}_   Enter keeps, Esc drops"),
            None => {
                let filter = match self.filter.as_str() {
                    "" => "/ filter".to_owned(),
                    f => format!("/ filter \"{f}\" (Esc clears)"),
                };
                format!(" q quits   sort [{keys}]: {}   {filter}", self.sort.name())
            }
        }
    }
}

fn draw(f: &mut Frame, s: Option<&Snapshot>, error: Option<&str>, view: &View) {
    let pools = s.map_or(0, |s| s.pools.pools.len()) as u16;
    let [head, jobs_area, pools_area, help] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Min(5),
        Constraint::Length(pools + 3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let header: Vec<Line> = match (s, error) {
        (_, Some(e)) => vec![Line::from(format!("controller not answering: {e}"))],
        (Some(s), None) => status_lines(&s.status, SystemTime::now())
            .into_iter()
            .map(Line::from)
            .collect(),
        (None, None) => vec![Line::from("connecting…")],
    };
    f.render_widget(
        Paragraph::new(header)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().title(" sluice top ")),
        head,
    );
    let reverse = Style::default().add_modifier(Modifier::REVERSED);
    f.render_widget(Paragraph::new(view.help()).style(reverse), help);
    let Some(s) = s else { return };
    let units = pool_units(&s.pools);
    f.render_widget(jobs_table(&s.jobs, &units, view), jobs_area);
    let pool_rows = s.pools.pools.iter().map(|p| {
        let rate = |v| rate_in(&units, &p.name, v);
        Row::new(vec![
            p.name.clone(),
            p.algorithm.clone(),
            capacity_text(p),
            rate(p.allocated),
            rate(p.used),
            p.jobs.to_string(),
            p.filter.clone(),
        ])
    });
    f.render_widget(
        table(pool_rows, POOL_COLUMNS).block(Block::bordered().title(" pools ")),
        pools_area,
    );
}

/// The jobs' columns, heading and width: the figures fixed, wide enough for their heading
/// and for any rate the views print (`1023MiB/s`), so that 80 columns cut nothing but
/// long node lists; wider terminals give the names and nodes the room.
const JOB_COLUMNS: [(&str, Constraint); 8] = [
    ("JOB", Constraint::Min(12)),
    ("USER", Constraint::Min(8)),
    ("POOL", Constraint::Min(8)),
    ("DEMAND", Constraint::Length(9)),
    ("RATE", Constraint::Length(9)),
    ("ALLOCATION", Constraint::Length(10)),
    ("WAIT", Constraint::Length(5)),
    ("NODES", Constraint::Fill(1)),
];

/// The pools' columns, as the jobs'.
const POOL_COLUMNS: [(&str, Constraint); 7] = [
    ("POOL", Constraint::Min(8)),
    ("ALGORITHM", Constraint::Length(12)),
    ("CAPACITY", Constraint::Length(11)),
    ("ALLOCATED", Constraint::Length(9)),
    ("USED", Constraint::Length(9)),
    ("JOBS", Constraint::Length(5)),
    ("MATCH", Constraint::Fill(1)),
];

/// A table of `rows` under `columns`' headings, in their widths.
fn table<'a, const N: usize>(
    rows: impl IntoIterator<Item = Row<'a>>,
    columns: [(&'static str, Constraint); N],
) -> Table<'a> {
    let bold = Style::default().add_modifier(Modifier::BOLD);
    Table::new(rows, columns.map(|(_, width)| width))
        .header(Row::new(columns.map(|(heading, _)| heading)).style(bold))
}

/// One row per job and pool that passes the filter, in the order chosen.
fn jobs_table(
    jobs: &JobsReply,
    units: &BTreeMap<String, sluice_core::rule::Unit>,
    view: &View,
) -> Table<'static> {
    let mut rows: Vec<_> = jobs
        .jobs
        .iter()
        .flat_map(|j| j.pools.iter().map(move |(pool, share)| (j, pool, share)))
        .filter(|(j, pool, _)| view.shows(j, pool))
        .collect();
    let all: usize = jobs.jobs.iter().map(|j| j.pools.len()).sum();
    let figure = |share: &PoolShare| match view.sort {
        SortBy::Demand => share.demand,
        SortBy::Rate => share.rate,
        SortBy::Allocation => share.allocation,
        SortBy::Wait => share.wait,
        SortBy::Job => 0.0,
    };
    rows.sort_by(|a, b| {
        figure(b.2)
            .total_cmp(&figure(a.2))
            .then(a.0.job.cmp(&b.0.job))
            .then(a.1.cmp(b.1))
    });
    let title = if rows.len() < all {
        format!(
            " jobs: {} of {all} rows, by {} ",
            rows.len(),
            view.sort.name()
        )
    } else {
        format!(" jobs, by {} ", view.sort.name())
    };
    let rows = rows.into_iter().map(|(j, pool, share)| {
        let rate = |v| rate_in(units, pool, v);
        Row::new(vec![
            j.job.clone(),
            j.user.clone(),
            pool.clone(),
            rate(share.demand),
            rate(share.rate),
            rate(share.allocation),
            format!("{:.2}", share.wait),
            hostlist::compress(&j.nodes),
        ])
    });
    table(rows, JOB_COLUMNS).block(Block::bordered().title(title))
}

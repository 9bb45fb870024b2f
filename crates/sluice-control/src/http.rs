//! The JSON API under `/api/v1`, the same operations as the Admin service:
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `GET /api/v1/status` | | the status |
//! | `GET /api/v1/jobs` | | `{"jobs":[…]}` as `sluice jobs --json` |
//! | `PUT /api/v1/jobs/{job}` | `{"pool","limit","weight","clear_limit","clear_weight"}` | 204 |
//! | `GET /api/v1/pools` | | `{"pools":[…]}` |
//! | `PUT /api/v1/pools/{name}` | `{"match","capacity","algorithm","params":["K=V"],"estimator"}` | 204 |
//! | `DELETE /api/v1/pools/{name}` | | 204 |
//! | `GET /api/v1/rules` | | `{"rules":["NAME: …"]}` |
//! | `POST /api/v1/rules` | `{"rule":"NAME: FILTER rate=R"}` | 204 |
//! | `PATCH /api/v1/rules/{name}` | `{"change":"rate=R [burst=N]"}` | 204 |
//! | `DELETE /api/v1/rules/{name}` | | 204 |
//!
//! | `GET /api/v1/events` | | server-sent events: a `snapshot` of status, jobs, pools and rules every interval (at least every second) |
//! | `GET /api/v1/history[?jobs=N]` | | the last hour, one point per cycle: each pool's capacity, allocated and used, and the rate and allocation of its `N` (default 8) busiest jobs (see [`history`]) |
//! | `GET /` | | the live dashboard (one self-contained page over `/api/v1/events`) |
//!
//! and `GET /metrics` (OpenMetrics, see [`crate::metrics`]).
//!
//! Changes need `Authorization: Bearer TOKEN` when a token file is configured, and come
//! from loopback otherwise. Every refusal is a 4xx with `{"error":"one line"}`, and
//! changes nothing.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::rejection::JsonRejection;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, put};
use axum::{Json, Router};
use serde::Deserialize;
use serde_json::{Value, json};
use sluice_core::hostlist;
use tokio_stream::wrappers::IntervalStream;
use tokio_stream::{Stream, StreamExt};

use crate::admin::{AdminService, Change, Hooks, jobs_json, pools_json, status_json};
use crate::audit::{self, Outcome, Who};
use crate::cluster::{History, Series};
use crate::proto::{JobSetRequest, PoolSetRequest, RuleChangeRequest};

/// An error answer: a status and one line.
pub struct ApiError(StatusCode, String);

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (self.0, Json(json!({ "error": self.1 }))).into_response()
    }
}

impl From<tonic::Status> for ApiError {
    fn from(s: tonic::Status) -> Self {
        let code = match s.code() {
            tonic::Code::NotFound => StatusCode::NOT_FOUND,
            tonic::Code::PermissionDenied => StatusCode::FORBIDDEN,
            tonic::Code::Unauthenticated => StatusCode::UNAUTHORIZED,
            tonic::Code::InvalidArgument => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError(code, s.message().to_owned())
    }
}

impl From<JsonRejection> for ApiError {
    fn from(r: JsonRejection) -> Self {
        let text = r
            .body_text()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        ApiError(StatusCode::BAD_REQUEST, text)
    }
}

type Api<H> = Arc<AdminService<H>>;
type Answer = Result<Response, ApiError>;

/// The API's routes over an Admin service.
pub fn api_router<H: Hooks>(admin: Arc<AdminService<H>>) -> Router {
    Router::new()
        .route("/", get(dashboard))
        .route("/api/v1/events", get(events::<H>))
        .route("/api/v1/history", get(history::<H>))
        .route("/api/v1/status", get(status::<H>))
        .route("/api/v1/jobs", get(jobs::<H>))
        .route("/api/v1/jobs/{job}", put(job_set::<H>))
        .route("/api/v1/pools", get(pools::<H>))
        .route(
            "/api/v1/pools/{name}",
            put(pool_set::<H>).delete(pool_rm::<H>),
        )
        .route("/api/v1/rules", get(rules::<H>).post(rule_start::<H>))
        .route(
            "/api/v1/rules/{name}",
            axum::routing::patch(rule_change::<H>).delete(rule_stop::<H>),
        )
        .fallback(|| async {
            ApiError(
                StatusCode::NOT_FOUND,
                "no such endpoint (see /api/v1/status)".into(),
            )
        })
        .with_state(admin)
}

/// `GET /metrics`: what `scrape` encodes, as OpenMetrics text.
pub fn metrics_router(scrape: impl Fn() -> String + Clone + Send + Sync + 'static) -> Router {
    Router::new().route(
        "/metrics",
        get(move || async move {
            (
                [(
                    axum::http::header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                )],
                scrape(),
            )
        }),
    )
}

/// Serves `routes` on `addr` until the process ends.
pub async fn serve(addr: SocketAddr, routes: Router) -> std::io::Result<()> {
    serve_on(bind(addr).await?, routes).await
}

/// The listener of the HTTP API at `addr`, bound now: a daemon asked to serve it fails to
/// start rather than run without it.
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
    tracing::info!(%addr, "HTTP ready");
    Ok(listener)
}

/// Serves `routes` on `listener` (from [`bind`]) until the process ends.
pub async fn serve_on(listener: tokio::net::TcpListener, routes: Router) -> std::io::Result<()> {
    axum::serve(
        listener,
        routes.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .await?;
    Ok(())
}

/// Refuses a change from a caller without the token (or, without a token file, from
/// off this machine).
fn authorize<H: Hooks>(
    api: &Api<H>,
    headers: &HeaderMap,
    peer: SocketAddr,
) -> Result<(), tonic::Status> {
    match &api.auth().token {
        Some(token) => {
            let given = headers
                .get(axum::http::header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "));
            match given {
                Some(g) if crate::transport::tokens_match(g, token) => Ok(()),
                Some(_) => Err(tonic::Status::permission_denied("wrong bearer token")),
                None => Err(tonic::Status::unauthenticated(
                    "changes need Authorization: Bearer TOKEN",
                )),
            }
        }
        None if peer.ip().is_loopback() => Ok(()),
        None => Err(tonic::Status::permission_denied(
            "changes over the network need a bearer token (admin.token_file)",
        )),
    }
}

/// Applies the change a request's body gives, for a caller `authorize` lets; audited
/// either way. A caller refused is told so before any word on its body.
fn submit<H: Hooks>(
    api: &Api<H>,
    headers: &HeaderMap,
    peer: SocketAddr,
    change: Result<Change, JsonRejection>,
) -> Answer {
    let who = Who::remote(Some(peer));
    let allowed = authorize(api, headers, peer);
    let change = match (change, allowed) {
        (Ok(change), allowed) => (change, allowed),
        (Err(_), Err(refused)) => {
            audit::Event::new("change", &who, "a request with an unreadable body")
                .not_done(Outcome::Refused, refused.message());
            return Err(refused.into());
        }
        (Err(rejected), Ok(())) => return Err(rejected.into()),
    };
    api.submit(change.0, &who, change.1)?;
    done()
}

fn done() -> Answer {
    Ok(StatusCode::NO_CONTENT.into_response())
}

fn json_answer(v: Value) -> Answer {
    Ok(Json(v).into_response())
}

/// The live dashboard: one page with everything it needs inline (no CDN, nothing
/// fetched but `/api/v1/events`), so it works on a cluster without internet.
async fn dashboard() -> axum::response::Html<&'static str> {
    axum::response::Html(include_str!("dashboard.html"))
}

/// How often `/api/v1/events` sends a snapshot: every interval, but at least every
/// second (the dashboard's promise) and at most every 100 ms.
fn event_period(interval_s: f64) -> std::time::Duration {
    std::time::Duration::from_secs_f64(interval_s.clamp(0.1, 1.0))
}

/// `GET /api/v1/events`: server-sent events, one `snapshot` per period:
/// `{"t": seconds since the epoch, "status", "jobs", "pools", "rules"}`, each job with its
/// nodes also as one Slurm host list (`"hostlist": "n[1-4]"`).
async fn events<H: Hooks>(
    State(api): State<Api<H>>,
) -> Sse<impl Stream<Item = Result<Event, std::convert::Infallible>>> {
    let period = event_period(api.status().interval_s);
    let ticks = IntervalStream::new(tokio::time::interval(period));
    let stream = ticks.map(move |_| {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let mut jobs = jobs_json(&api.jobs())["jobs"].take();
        for job in jobs.as_array_mut().into_iter().flatten() {
            let nodes = job["nodes"]
                .as_array()
                .map(|n| n.iter().filter_map(Value::as_str));
            job["hostlist"] = nodes.map(hostlist::compress).unwrap_or_default().into();
        }
        let snapshot = json!({
            "t": t,
            "status": status_json(&api.status()),
            "jobs": jobs,
            "pools": pools_json(&api.pools())["pools"],
            "rules": api.rules().rules,
        });
        Ok(Event::default()
            .event("snapshot")
            .data(snapshot.to_string()))
    });
    Sse::new(stream).keep_alive(KeepAlive::default())
}

/// `GET /api/v1/history` asks for the busiest `jobs` of each pool.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HistoryQuery {
    jobs: Option<usize>,
}

/// Jobs per pool `/api/v1/history` sends unless asked: as many lines as a plot can tell
/// apart.
const HISTORY_JOBS: usize = 8;

/// `GET /api/v1/history`:
/// `{"interval_s", "pools": {NAME: {"end", "capacity": [..], "allocated": [..], "used": [..],
/// "jobs": {JOB: {"end", "rate": [..], "allocation": [..]}}}}}`. Each list holds one
/// figure per cycle, oldest first, `null` where the cycle was missed; the last is at
/// `end` (seconds since the epoch), each earlier one an interval before. A pool's jobs
/// are its `jobs` busiest by their last rate.
async fn history<H: Hooks>(
    State(api): State<Api<H>>,
    query: Result<Query<HistoryQuery>, axum::extract::rejection::QueryRejection>,
) -> Answer {
    let Query(q) = query.map_err(|e| ApiError(StatusCode::BAD_REQUEST, e.body_text()))?;
    let jobs = q.jobs.unwrap_or(HISTORY_JOBS);
    json_answer(api.history(|h| history_json(h, jobs)))
}

fn history_json(h: &History, busiest: usize) -> Value {
    let interval_s = h.interval_s();
    let end = |end: u64| end as f64 * interval_s;
    let mut pools = serde_json::Map::new();
    for (name, series) in h.pools() {
        let mut jobs: Vec<(&String, &Series<2>)> =
            h.jobs(name).map(|j| j.iter().collect()).unwrap_or_default();
        let last_rate = |s: &Series<2>| s.last().map_or(f32::NEG_INFINITY, |p| p[0]);
        jobs.sort_by(|a, b| last_rate(b.1).total_cmp(&last_rate(a.1)).then(a.0.cmp(b.0)));
        let jobs: serde_json::Map<String, Value> = jobs
            .into_iter()
            .take(busiest)
            .map(|(job, s)| {
                let v = json!({"end": end(s.end()), "rate": column(s, 0),
                    "allocation": column(s, 1)});
                (job.clone(), v)
            })
            .collect();
        let pool = json!({"end": end(series.end()), "capacity": column(series, 0),
            "allocated": column(series, 1), "used": column(series, 2), "jobs": jobs});
        pools.insert(name.clone(), pool);
    }
    json!({"interval_s": interval_s, "pools": pools})
}

/// Figure `i` of every point of `s`, `null` for a missed cycle, to two decimals: what
/// an `f32` holds beyond them is noise to a reader.
fn column<const N: usize>(s: &Series<N>, i: usize) -> Vec<Value> {
    let round = |v: f32| Value::from((f64::from(v) * 100.0).round() / 100.0);
    s.points().map(|p| round(p[i])).collect()
}

async fn status<H: Hooks>(State(api): State<Api<H>>) -> Answer {
    json_answer(status_json(&api.status()))
}

async fn jobs<H: Hooks>(State(api): State<Api<H>>) -> Answer {
    json_answer(jobs_json(&api.jobs()))
}

async fn pools<H: Hooks>(State(api): State<Api<H>>) -> Answer {
    json_answer(pools_json(&api.pools()))
}

async fn rules<H: Hooks>(State(api): State<Api<H>>) -> Answer {
    json_answer(json!({ "rules": api.rules().rules }))
}

/// `PUT /api/v1/jobs/{job}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct JobBody {
    #[serde(default)]
    pool: String,
    #[serde(default)]
    limit: String,
    weight: Option<f64>,
    #[serde(default)]
    clear_limit: bool,
    #[serde(default)]
    clear_weight: bool,
}

async fn job_set<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(job): Path<String>,
    body: Result<Json<JobBody>, JsonRejection>,
) -> Answer {
    let change = body.map(|Json(b)| {
        Change::JobSet(JobSetRequest {
            job,
            pool: b.pool,
            limit: b.limit,
            weight: b.weight,
            clear_limit: b.clear_limit,
            clear_weight: b.clear_weight,
        })
    });
    submit(&api, &headers, peer, change)
}

/// `PUT /api/v1/pools/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PoolBody {
    #[serde(rename = "match", default)]
    filter: String,
    capacity: String,
    algorithm: String,
    #[serde(default)]
    params: Vec<String>,
    #[serde(default)]
    estimator: String,
    #[serde(default)]
    tree: String,
}

async fn pool_set<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Result<Json<PoolBody>, JsonRejection>,
) -> Answer {
    let change = body.map(|Json(b)| {
        Change::PoolSet(PoolSetRequest {
            name,
            filter: b.filter,
            capacity: b.capacity,
            algorithm: b.algorithm,
            params: b.params,
            estimator: b.estimator,
            tree: b.tree,
        })
    });
    submit(&api, &headers, peer, change)
}

async fn pool_rm<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Answer {
    submit(&api, &headers, peer, Ok(Change::PoolRm(name)))
}

/// `POST /api/v1/rules`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleBody {
    rule: String,
}

async fn rule_start<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    body: Result<Json<RuleBody>, JsonRejection>,
) -> Answer {
    let change = body.map(|Json(b)| Change::RuleStart(b.rule));
    submit(&api, &headers, peer, change)
}

/// `PATCH /api/v1/rules/{name}`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleChangeBody {
    change: String,
}

async fn rule_change<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(name): Path<String>,
    body: Result<Json<RuleChangeBody>, JsonRejection>,
) -> Answer {
    let change = body.map(|Json(b)| {
        Change::RuleChange(RuleChangeRequest {
            name,
            change: b.change,
        })
    });
    submit(&api, &headers, peer, change)
}

async fn rule_stop<H: Hooks>(
    State(api): State<Api<H>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Path(name): Path<String>,
) -> Answer {
    submit(&api, &headers, peer, Ok(Change::RuleStop(name)))
}

//! The local controller's stream to its global: connect, say hello, send a full report,
//! apply what comes down; on any failure keep the last rates (fail-static) and reconnect
//! with backoff.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use tokio_stream::wrappers::ReceiverStream;
use tonic::Streaming;

use sluice_core::error::Chain;

use super::{LocalError, Policy, Shared};
use crate::link_auth::{Refusals, refusal};
use crate::proto::control_client::ControlClient;
use crate::proto::{GlobalMessage, Hello, LocalMessage, global_message, local_message};
use crate::transport::{CallError, ConnectOptions, DEFAULT_DEADLINE, Endpoint, connect, within};

/// First and longest wait between two connection attempts: a restarted global has every
/// local back within about a second.
const BACKOFF: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(1));

/// Keeps the local connected to `global` for as long as the process runs.
pub async fn run_uplink(local: Shared, global: Endpoint, options: ConnectOptions) {
    let open = |outbound| open_session(&global, &options, outbound);
    uplink(local, &global, open).await
}

/// Opens the session stream to `global`, which `outbound` feeds, within the deadline.
async fn open_session(
    global: &Endpoint,
    options: &ConnectOptions,
    outbound: ReceiverStream<LocalMessage>,
) -> Result<Streaming<GlobalMessage>, CallError> {
    // Opening the stream has a deadline; once open, the connection's keep-alive pings
    // notice a global that stops answering.
    within(global, DEFAULT_DEADLINE, async {
        let channel = connect(global, options).await?;
        let mut client = ControlClient::with_interceptor(channel, options.bearer()?);
        Ok(client.session(outbound).await?.into_inner())
    })
    .await
}

/// Keeps the local connected to the global that `open` reaches (named `global` in the
/// log): the transport is the caller's, so that a test runs this over memory.
pub(crate) async fn uplink<F, Fut>(local: Shared, global: &(dyn Display + Sync), open: F)
where
    F: Fn(ReceiverStream<LocalMessage>) -> Fut,
    Fut: Future<Output = Result<Streaming<GlobalMessage>, CallError>>,
{
    let mut wait = BACKOFF.0;
    let mut refusals = Refusals::default();
    loop {
        let began = tokio::time::Instant::now();
        match session(&local, global, &open, &mut refusals).await {
            Ok(()) => tracing::warn!(%global, "global controller closed the stream"),
            Err(e) => match refusal(&e) {
                Some(why) => refusals.refused(global, why),
                None => tracing::warn!(%global, "global controller unreachable: {}", Chain(&e)),
            },
        }
        if let Ok(mut l) = local.lock() {
            l.uplink = None;
        }
        // A little jitter, so that a thousand locals do not come back in one instant.
        let jitter = Duration::from_micros(u64::from(std::process::id() % 97) * 1000);
        tokio::time::sleep(wait + jitter).await;
        // A session that lasted was a connection: the next attempt starts quick again.
        wait = if began.elapsed() > BACKOFF.1 * 2 {
            BACKOFF.0
        } else {
            (wait * 2).min(BACKOFF.1)
        };
    }
}

async fn session<F, Fut>(
    local: &Shared,
    global: &(dyn Display + Sync),
    open: &F,
    refusals: &mut Refusals,
) -> Result<(), LocalError>
where
    F: Fn(ReceiverStream<LocalMessage>) -> Fut,
    Fut: Future<Output = Result<Streaming<GlobalMessage>, CallError>>,
{
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    let node = local.lock().map_err(|_| LocalError::Poisoned)?.node.clone();
    tx.send(LocalMessage {
        body: Some(local_message::Body::Hello(Hello { node, version: 1 })),
    })
    .await
    .map_err(|_| LocalError::Closed)?;
    let mut inbound = open(ReceiverStream::new(rx)).await?;
    {
        let mut l = local.lock().map_err(|_| LocalError::Poisoned)?;
        l.uplink = Some(tx);
        l.full_next = true;
    }
    tracing::info!(%global, "connected to the global controller");
    refusals.clear();
    while let Some(message) = inbound.message().await.map_err(LocalError::Stream)? {
        apply(local, message)?;
    }
    Ok(())
}

fn apply(local: &Shared, message: GlobalMessage) -> Result<(), LocalError> {
    let mut l = local.lock().map_err(|_| LocalError::Poisoned)?;
    match message.body {
        Some(global_message::Body::Policy(p)) => {
            let policy = Policy::from_proto(&p)?;
            if p.interval_s.is_finite() && p.interval_s > 0.0 {
                l.set_interval(Duration::from_secs_f64(p.interval_s));
            }
            l.apply_policy(policy);
        }
        Some(global_message::Body::Rates(r)) => {
            let rates: Vec<_> = r.jobs.into_iter().map(|j| (j.job, j.pools)).collect();
            l.apply_rates(rates.iter().map(|(j, p)| (j, p)));
            l.set_relays(
                r.relays
                    .into_iter()
                    .map(super::relay::Chain::from)
                    .collect(),
            );
            l.last_rates_cycle = r.cycle;
        }
        None => return Err(LocalError::EmptyMessage),
    }
    Ok(())
}

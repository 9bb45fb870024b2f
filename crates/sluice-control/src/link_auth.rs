//! Who may be a local controller of a global: the credentials the global requires on a
//! Control session (the cluster's token, a client certificate signed by its client CA),
//! its audit line of each refusal, and a local's reading of a refusal, said once with what to do.
//!
//! A global with neither credential configured admits every caller, and says so at start.

use std::net::SocketAddr;
use std::time::Duration;

use tokio_rustls::rustls::{self, AlertDescription};
use tonic::{Code, Request, Status, Streaming};

use crate::audit::{Event, Outcome, Who};
use crate::proto::{LocalMessage, local_message};
use crate::transport::{CallError, check_bearer};

/// How long a refused caller's Hello is waited for, only to name it in the log.
const CLAIM_WAIT: Duration = Duration::from_secs(1);
/// The most of a claimed node name that the log shows.
const CLAIM_SHOWN: usize = 64;

/// What a global requires of every local controller.
#[derive(Clone, Debug, Default)]
pub struct Admission {
    token: Option<String>,
    client_certificate: bool,
}

/// Why a caller was refused, and what its administrator should do.
#[derive(Debug)]
pub struct Refused {
    why: String,
    advice: &'static str,
}

impl Admission {
    /// Requires `token` (the global's `admin.token_file`) when given, and a client
    /// certificate when `client_certificate` (the TLS layer has checked it against
    /// `admin.client_ca`; only its presence is left to check).
    pub fn new(token: Option<String>, client_certificate: bool) -> Self {
        Admission {
            token,
            client_certificate,
        }
    }

    /// Logs, once at start, that every caller is admitted when nothing is required; the
    /// warning, for `sluice status`.
    pub fn warn_if_open(&self, addr: SocketAddr) -> Option<String> {
        if self.token.is_some() || self.client_certificate {
            return None;
        }
        let warning = format!(
            "locals are not authenticated (no admin.token_file, no admin.client_ca): any \
             host that reaches {addr} can act as a local controller and steer allocations; \
             see docs/deploy.md"
        );
        tracing::warn!("{warning}");
        Some(warning)
    }

    /// Admits `request` only with every credential required.
    pub fn check<T>(&self, request: &Request<T>) -> Result<(), Refused> {
        if self.client_certificate && request.peer_certs().is_none_or(|certs| certs.is_empty()) {
            return Err(Refused {
                why: "no client certificate".to_owned(),
                advice: "this global requires one signed by its admin.client_ca: start the \
                         local with --cert and --key",
            });
        }
        if let Some(token) = &self.token {
            check_bearer(request, token).map_err(|status| Refused {
                why: status.message().to_owned(),
                advice: "this global requires its admin.token_file's token: start the local \
                         with --token-file holding it",
            })?;
        }
        Ok(())
    }
}

/// Logs the refusal of a Control session from `peer` (who, the node it claims in its
/// Hello, why) and returns the status that tells the caller what to do.
pub async fn refuse(
    peer: Option<SocketAddr>,
    mut inbound: Streaming<LocalMessage>,
    refused: Refused,
) -> Status {
    let claimed = match tokio::time::timeout(CLAIM_WAIT, inbound.message()).await {
        Ok(Ok(Some(LocalMessage {
            body: Some(local_message::Body::Hello(hello)),
        }))) => hello.node.chars().take(CLAIM_SHOWN).collect(),
        _ => String::new(),
    };
    // The claimed name is the caller's text: quoted and escaped, so that it cannot
    // forge a line of the log.
    Event::new(
        "link",
        &Who::remote(peer),
        format_args!("local controller {claimed:?}"),
    )
    .node(&claimed)
    .not_done(Outcome::Refused, &refused.why);
    Status::unauthenticated(format!("{}: {}", refused.why, refused.advice))
}

/// A local's reading of a failed session: `Some` with one line saying why and what to do
/// when the global refused this node's credentials or this node refused the global's
/// certificate, `None` for any other failure (unreachable, gone).
pub fn refusal(e: &(dyn std::error::Error + 'static)) -> Option<String> {
    sluice_core::error::causes(e).find_map(|cause| {
        let status = cause
            .downcast_ref::<Status>()
            .or_else(|| cause.downcast_ref::<CallError>()?.status())
            .or_else(|| cause.downcast_ref::<crate::local::LocalError>()?.status());
        if let Some(status) = status {
            let refused = matches!(
                status.code(),
                Code::Unauthenticated | Code::PermissionDenied
            );
            if refused {
                return Some(status.message().to_owned());
            }
            // A status the transport made stands for its failure, which may be a TLS
            // alert: the typed errors keep the status, not its causes, in their chain.
            return std::error::Error::source(status)
                .and_then(|inner| sluice_core::error::causes(inner).find_map(tls_refusal));
        }
        tls_refusal(cause)
    })
}

/// The alerts a server sends when it will not take a client's certificate.
const CERTIFICATE_ALERTS: [AlertDescription; 9] = [
    AlertDescription::BadCertificate,
    AlertDescription::UnknownCA,
    AlertDescription::CertificateRequired,
    AlertDescription::CertificateUnknown,
    AlertDescription::CertificateExpired,
    AlertDescription::CertificateRevoked,
    AlertDescription::UnsupportedCertificate,
    AlertDescription::DecryptError,
    AlertDescription::AccessDenied,
];

/// What a TLS failure behind `cause` means for the local's administrator, if it is about
/// certificates.
fn tls_refusal(cause: &(dyn std::error::Error + 'static)) -> Option<String> {
    // rustls's errors travel inside I/O errors, whose `source` skips them.
    let inner = match cause.downcast_ref::<std::io::Error>() {
        Some(io) => io.get_ref()?,
        None => cause,
    };
    // An alert reaches the local through HTTP/2, which keeps an I/O error's text and not
    // the error: it is known by rustls's own words for it.
    let text = inner.to_string();
    let alert = match inner.downcast_ref::<rustls::Error>() {
        Some(rustls::Error::InvalidCertificate(why)) => {
            return Some(format!(
                "the global's certificate is not accepted ({why:?}): --ca must hold the CA \
                 that signed the global's admin.tls_cert, whose names must include the host \
                 of --global"
            ));
        }
        Some(rustls::Error::AlertReceived(alert)) => {
            CERTIFICATE_ALERTS.contains(alert).then_some(*alert)
        }
        _ => CERTIFICATE_ALERTS
            .into_iter()
            .find(|alert| rustls::Error::AlertReceived(*alert).to_string() == text),
    }?;
    Some(format!(
        "the global refused this node's certificate ({alert:?}): --cert must be signed by the \
         CA in the global's admin.client_ca"
    ))
}

/// A local's log of refusals: each new one once, as an error; the same again, at every
/// retry until a session is established, only at debug level.
#[derive(Debug, Default)]
pub struct Refusals {
    last: Option<String>,
}

impl Refusals {
    /// `global` refused this node (or this node its certificate) for `why`.
    pub fn refused(&mut self, global: &(dyn std::fmt::Display + Sync), why: String) {
        if self.last.as_ref() == Some(&why) {
            tracing::debug!(%global, "still refused: {why}");
            return;
        }
        tracing::error!(
            %global,
            "no session with the global controller: {why}; retrying with backoff, this \
             node's jobs keep their last rates"
        );
        self.last = Some(why);
    }

    /// A session was established: the next refusal is news again.
    pub fn clear(&mut self) {
        self.last = None;
    }
}

//! How a command reaches a controller's admin API: connect with the token and the CA it
//! was given, ask, and have the whole within one deadline, each failure worded for the
//! administrator (a controller that does not answer, a refusal, a token file that will
//! not do).

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use sluice_core::error::{Blame, Fault};
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;

use crate::proto::admin_client::AdminClient;
use crate::transport::{
    BadToken, Bearer, CallError, ConnectOptions, Endpoint, NoAnswer, SecretError, TransportError,
    connect, read_token_file, within,
};

/// An Admin client with its token.
pub type Admin = AdminClient<InterceptedService<Channel, Bearer>>;

/// A controller to ask, and how.
#[derive(Clone, Debug)]
pub struct AdminTarget {
    /// Where it listens.
    pub endpoint: Endpoint,
    /// How long the connection and the call may take together.
    pub deadline: Duration,
    /// The bearer token's file, for changes over TCP.
    pub token_file: Option<PathBuf>,
    /// The CA of an `https://` controller's certificate.
    pub ca: Option<PathBuf>,
}

/// Why asking a controller failed.
#[derive(Debug, thiserror::Error)]
pub enum AskError {
    /// The token file.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// The token in it.
    #[error(transparent)]
    Token(#[from] BadToken),
    /// The controller could not be reached.
    #[error("cannot reach the controller at {endpoint}")]
    Reach {
        /// Where it was looked for.
        endpoint: Endpoint,
        /// Why it was not reached (boxed: it is large, and errors travel by value).
        source: Box<TransportError>,
    },
    /// It did not answer within the deadline.
    #[error("the controller at {0}: is it stopped or overloaded? (--deadline waits longer)")]
    Late(NoAnswer),
    /// It did not answer a change within the deadline: the change may be in force.
    #[error(
        "the controller at {0}: the change may be in force already (a change is put in \
         force before it is saved, and the answer waits for the save, which a busy disk \
         holds up); `sluice rule list`, `pool list` or `jobs` shows what is in force \
         (--deadline waits longer)"
    )]
    LateChange(NoAnswer),
    /// It answered no.
    #[error(transparent)]
    Call(#[from] CallError),
    /// No runtime to ask on.
    #[error("cannot start the async runtime")]
    Runtime(#[source] std::io::Error),
}

impl From<NoAnswer> for AskError {
    fn from(late: NoAnswer) -> AskError {
        AskError::Late(late)
    }
}

impl From<tonic::Status> for AskError {
    fn from(status: tonic::Status) -> AskError {
        AskError::Call(CallError::Status(status))
    }
}

impl Blame for AskError {
    fn fault(&self) -> Fault {
        match self {
            AskError::Secret(e) => e.fault(),
            AskError::Reach { source, .. } => source.fault(),
            AskError::Call(e) => e.fault(),
            AskError::Token(_)
            | AskError::Late(_)
            | AskError::LateChange(_)
            | AskError::Runtime(_) => Fault::System,
        }
    }
}

impl AdminTarget {
    /// Connects to the controller, within the deadline.
    pub async fn admin(&self) -> Result<Admin, AskError> {
        self.within(async {
            let token = match &self.token_file {
                Some(p) => Some(read_token_file(p)?),
                None => None,
            };
            let options = ConnectOptions {
                connect_timeout: self.deadline,
                token,
                ca_file: self.ca.clone(),
                identity: None,
            };
            let channel =
                connect(&self.endpoint, &options)
                    .await
                    .map_err(|source| AskError::Reach {
                        endpoint: self.endpoint.clone(),
                        source: Box::new(source),
                    })?;
            Ok(AdminClient::with_interceptor(channel, options.bearer()?))
        })
        .await
    }

    /// Runs `call` (on a client from [`AdminTarget::admin`]) within the deadline.
    pub async fn within<T>(
        &self,
        call: impl Future<Output = Result<T, AskError>>,
    ) -> Result<T, AskError> {
        within(&self.endpoint, self.deadline, call).await
    }

    /// [`AdminTarget::ask`] for a change: one not answered in time may be in force.
    pub fn change<T>(
        &self,
        ask: impl AsyncFnOnce(&mut Admin) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, AskError> {
        self.ask(ask).map_err(|e| match e {
            AskError::Late(late) => AskError::LateChange(late),
            e => e,
        })
    }

    /// Connects and makes one call, `ask`, all within the deadline, on a runtime of its
    /// own; returns the controller's answer.
    pub fn ask<T>(
        &self,
        ask: impl AsyncFnOnce(&mut Admin) -> Result<tonic::Response<T>, tonic::Status>,
    ) -> Result<T, AskError> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(AskError::Runtime)?
            .block_on(self.within(async {
                let mut admin = self.admin().await?;
                Ok(ask(&mut admin).await?.into_inner())
            }))
    }
}

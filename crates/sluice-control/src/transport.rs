//! Servers and clients of the control plane: where a daemon listens (a UNIX socket, or
//! TCP with optional TLS), how a client reaches it, and how a server learns who called.
//!
//! - [`Endpoint`]: an address as written in configuration or on a command line.
//! - [`connect`] with [`ConnectOptions`], and the [`Bearer`] interceptor that puts the
//!   token on every call of a generated client.
//! - [`within`]: every call of a client to a controller has a deadline
//!   ([`DEFAULT_DEADLINE`] unless configured), and one that passes is a [`NoAnswer`].
//! - [`bind_unix`]: a daemon's socket, made safely; [`peer_cred`]: who is on the other
//!   end of it.
//! - [`check_bearer`] and [`read_token_file`]: the shared secret of TCP deployments.
//!
//! TLS itself (certificates, keys, handshakes) is [`crate::tls`]'s.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::{UnixListener, UnixStream};
use tokio_stream::wrappers::UnixListenerStream;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::transport::server::UdsConnectInfo;
use tonic::transport::{Channel, ClientTlsConfig};
use tonic::{Request, Status};

use sluice_core::error::{Blame, Fault};

use crate::tls::{ClientIdentity, TlsError, client_tls};

/// Why a client could not reach a controller, or a daemon could not listen.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// An `https://` endpoint without a CA file.
    #[error("{0} needs a CA file to check the server's certificate")]
    NeedsCa(Endpoint),
    /// A CA file for a plain endpoint, which would hide that it is plain text.
    #[error("a CA file is only for https:// endpoints, not {0}")]
    CaNotTls(Endpoint),
    /// A client certificate for a plain endpoint.
    #[error("a client certificate is only for https:// endpoints, not {0}")]
    IdentityNotTls(Endpoint),
    /// The TLS files named for the endpoint.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The endpoint is not a URI tonic takes, or its TLS settings are refused.
    #[error("bad endpoint {endpoint}")]
    BadEndpoint {
        /// The endpoint.
        endpoint: Endpoint,
        /// What tonic says.
        source: tonic::transport::Error,
    },
    /// Nobody answered at the endpoint.
    #[error("cannot connect to {endpoint}")]
    Connect {
        /// The endpoint.
        endpoint: Endpoint,
        /// What tonic says.
        source: tonic::transport::Error,
    },
    /// A token file or a token that cannot be used.
    #[error(transparent)]
    Secret(#[from] SecretError),
    /// A daemon's socket cannot be made.
    #[error("{doing}")]
    Socket {
        /// What could not be done, and to which path: "cannot bind /run/sluice/local.sock".
        doing: String,
        /// Why.
        source: std::io::Error,
    },
    /// Another daemon answers on the socket.
    #[error("another daemon is listening on {}", .0.display())]
    InUse(PathBuf),
    /// Something that is not a socket lies where the socket goes.
    #[error("{} exists and is not a socket; refusing to replace it", .0.display())]
    NotASocket(PathBuf),
}

impl Blame for TransportError {
    fn fault(&self) -> Fault {
        match self {
            TransportError::NeedsCa(_)
            | TransportError::CaNotTls(_)
            | TransportError::IdentityNotTls(_)
            | TransportError::BadEndpoint { .. } => Fault::Input,
            TransportError::Tls(e) => e.fault(),
            TransportError::Secret(e) => e.fault(),
            TransportError::Connect { .. }
            | TransportError::Socket { .. }
            | TransportError::InUse(_)
            | TransportError::NotASocket(_) => Fault::System,
        }
    }
}

/// Why a call to a controller failed: it could not be reached, it did not answer in
/// time, or it answered no.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// It could not be reached.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// The token cannot be sent.
    #[error(transparent)]
    Token(#[from] BadToken),
    /// It did not answer within the deadline.
    #[error(transparent)]
    NoAnswer(#[from] NoAnswer),
    /// It answered with an error: its message is the administrator's line.
    #[error("{}", .0.message())]
    Status(tonic::Status),
    /// It closed a stream before its first answer.
    #[error("{endpoint} closed the {what}")]
    Closed {
        /// Whom the caller asked.
        endpoint: String,
        /// The stream: "attachment" …
        what: &'static str,
    },
}

impl From<tonic::Status> for CallError {
    fn from(status: tonic::Status) -> CallError {
        CallError::Status(status)
    }
}

impl CallError {
    /// The controller's own answer, when it gave one.
    pub fn status(&self) -> Option<&tonic::Status> {
        match self {
            CallError::Status(s) => Some(s),
            _ => None,
        }
    }
}

impl Blame for CallError {
    fn fault(&self) -> Fault {
        match self {
            CallError::Transport(e) => e.fault(),
            CallError::Token(_) => Fault::System,
            // What the administrator asked for is invalid, unknown or not theirs to ask.
            CallError::Status(s) => match s.code() {
                tonic::Code::InvalidArgument
                | tonic::Code::NotFound
                | tonic::Code::PermissionDenied
                | tonic::Code::Unauthenticated => Fault::Input,
                _ => Fault::System,
            },
            CallError::NoAnswer(_) | CallError::Closed { .. } => Fault::System,
        }
    }
}

impl Blame for NoAnswer {
    fn fault(&self) -> Fault {
        Fault::System
    }
}

impl Blame for EndpointError {
    fn fault(&self) -> Fault {
        Fault::Input
    }
}

/// Why a token file or a key file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecretError {
    /// It cannot be opened, examined or read.
    #[error("cannot {what} {}", path.display())]
    Io {
        /// What was being done: "open token file", "read key file" …
        what: String,
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Group or others may read or write it.
    #[error("{what} {} is open to group or others (mode {mode:04o}); chmod 600 it", path.display())]
    Open {
        /// "token file" or "key file".
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// The token file holds only white space.
    #[error("token file {} is empty", .0.display())]
    Empty(PathBuf),
    /// The token in a file cannot travel in a header.
    #[error("bad token in {}", path.display())]
    BadTokenIn {
        /// The file.
        path: PathBuf,
        /// What is wrong with the token.
        source: BadToken,
    },
    /// A token cannot travel in a header.
    #[error(transparent)]
    BadToken(#[from] BadToken),
}

impl Blame for SecretError {
    /// The system's: the configuration that names the file is right, the file on this
    /// host is not (its mode, its contents), and `sluice config check` says so with 1.
    fn fault(&self) -> Fault {
        Fault::System
    }
}

/// Why a token cannot be sent in an `authorization` header.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BadToken {
    /// Nothing.
    #[error("the token is empty")]
    Empty,
    /// Spaces, control characters or non-ASCII.
    #[error("the token may hold only visible ASCII characters, without spaces")]
    Characters,
}

/// Where a daemon listens, or where a client finds it.
///
/// Written `unix:PATH` (or just an absolute path), `http://HOST:PORT` or
/// `https://HOST:PORT`; [`fmt::Display`] writes it back in the same form.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// A UNIX socket.
    Unix(PathBuf),
    /// A TCP address, in plain text or over TLS.
    Tcp {
        /// A host name or an IP address (an IPv6 address without its brackets).
        host: String,
        /// The port, never 0.
        port: u16,
        /// Whether the connection uses TLS (`https://`).
        tls: bool,
    },
}

/// Why a text is not an [`Endpoint`]; its message is one line naming the fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad endpoint '{text}': {reason}")]
pub struct EndpointError {
    text: String,
    reason: String,
}

impl FromStr for Endpoint {
    type Err = EndpointError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let fail = |reason: &str| EndpointError {
            text: text.to_owned(),
            reason: reason.to_owned(),
        };
        if let Some(rest) = text.strip_prefix("unix:") {
            // gRPC's own spelling, unix:///abs/path, is accepted too.
            let path = match rest.strip_prefix("//") {
                Some(abs) if abs.starts_with('/') => abs,
                Some(_) => return Err(fail("unix:// must be followed by an absolute path")),
                None => rest,
            };
            if path.is_empty() {
                return Err(fail("no socket path after 'unix:'"));
            }
            return Ok(Endpoint::Unix(PathBuf::from(path)));
        }
        if text.starts_with('/') {
            return Ok(Endpoint::Unix(PathBuf::from(text)));
        }
        let (tls, authority) = if let Some(rest) = text.strip_prefix("http://") {
            (false, rest)
        } else if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else if let Some((scheme, _)) = text.split_once("://") {
            return Err(fail(&format!(
                "unknown scheme '{scheme}' (expected unix:, http:// or https://)"
            )));
        } else {
            return Err(fail(
                "expected unix:PATH, an absolute path, http://HOST:PORT or https://HOST:PORT",
            ));
        };
        let authority = authority.strip_suffix('/').unwrap_or(authority);
        if authority.contains(['/', '?', '#', '@']) {
            return Err(fail("only HOST:PORT may follow the scheme"));
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (host, after) = v6
                .split_once(']')
                .ok_or_else(|| fail("'[' without its closing ']'"))?;
            let port = after
                .strip_prefix(':')
                .ok_or_else(|| fail("no port (write [ADDRESS]:PORT)"))?;
            (host, port)
        } else {
            authority
                .rsplit_once(':')
                .ok_or_else(|| fail("no port (write HOST:PORT)"))?
        };
        if host.is_empty() {
            return Err(fail("no host before the port"));
        }
        if host.contains(':') && !authority.starts_with('[') {
            return Err(fail(
                "an IPv6 address must be written in brackets: [ADDRESS]:PORT",
            ));
        }
        let port = match port.parse::<u16>() {
            Ok(0) => return Err(fail("port 0 cannot be connected to")),
            Ok(port) => port,
            Err(_) => return Err(fail(&format!("bad port '{port}' (expected 1 to 65535)"))),
        };
        Ok(Endpoint::Tcp {
            host: host.to_owned(),
            port,
            tls,
        })
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix:{}", path.display()),
            Endpoint::Tcp { host, port, tls } => {
                let scheme = if *tls { "https" } else { "http" };
                if host.contains(':') {
                    write!(f, "{scheme}://[{host}]:{port}")
                } else {
                    write!(f, "{scheme}://{host}:{port}")
                }
            }
        }
    }
}

/// How a client connects.
#[derive(Clone)]
pub struct ConnectOptions {
    /// How long to wait for the connection (and, over TLS, its handshake).
    pub connect_timeout: Duration,
    /// The shared secret to send as `authorization: Bearer TOKEN`; see [`Bearer`].
    pub token: Option<String>,
    /// PEM file of the CA that signed the server's certificate; required for `https://`
    /// and refused otherwise, so that a CA given by mistake never hides plain text.
    pub ca_file: Option<PathBuf>,
    /// The client certificate to present, for a server that requires one; `https://`
    /// only, like the CA.
    pub identity: Option<ClientIdentity>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            connect_timeout: Duration::from_secs(5),
            token: None,
            ca_file: None,
            identity: None,
        }
    }
}

impl fmt::Debug for ConnectOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("connect_timeout", &self.connect_timeout)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("ca_file", &self.ca_file)
            .field("identity", &self.identity)
            .finish()
    }
}

impl ConnectOptions {
    /// The interceptor that sends [`ConnectOptions::token`] with every call.
    pub fn bearer(&self) -> Result<Bearer, BadToken> {
        Bearer::new(self.token.as_deref())
    }

    /// The TLS settings for `endpoint`, its files read now: `None` for a plain one. A CA
    /// or a client certificate given for a plain endpoint is an error, so that it never
    /// hides plain text; so is an `https://` endpoint without a CA.
    pub fn tls(&self, endpoint: &Endpoint) -> Result<Option<ClientTlsConfig>, TransportError> {
        let tls = matches!(endpoint, Endpoint::Tcp { tls: true, .. });
        match (&self.ca_file, &self.identity) {
            (Some(ca), identity) if tls => Ok(Some(client_tls(ca, identity.as_ref())?)),
            (None, _) if tls => Err(TransportError::NeedsCa(endpoint.clone())),
            (Some(_), _) => Err(TransportError::CaNotTls(endpoint.clone())),
            (None, Some(_)) => Err(TransportError::IdentityNotTls(endpoint.clone())),
            (None, None) => Ok(None),
        }
    }
}

/// Opens a channel to `endpoint`, failing if it cannot be reached within the options'
/// connect timeout.
///
/// The channel reconnects by itself when a later call finds the connection gone. To send
/// the token, wrap it: `AdminClient::with_interceptor(channel, options.bearer()?)`.
pub async fn connect(
    endpoint: &Endpoint,
    options: &ConnectOptions,
) -> Result<Channel, TransportError> {
    let tls = options.tls(endpoint)?;
    match endpoint {
        Endpoint::Unix(path) => {
            let path = path.clone();
            // The URI only fills the HTTP/2 :authority; the connector ignores it.
            tonic::transport::Endpoint::from_static("http://localhost")
                .connect_timeout(options.connect_timeout)
                .connect_with_connector(tower::service_fn(move |_: tonic::transport::Uri| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(UnixStream::connect(path).await?))
                    }
                }))
                .await
                .map_err(|source| TransportError::Connect {
                    endpoint: endpoint.clone(),
                    source,
                })
        }
        Endpoint::Tcp { .. } => {
            let bad = |source| TransportError::BadEndpoint {
                endpoint: endpoint.clone(),
                source,
            };
            let mut target = tonic::transport::Endpoint::from_shared(endpoint.to_string())
                .map_err(bad)?
                .connect_timeout(options.connect_timeout)
                // A cut link shows as silence, not as an error: pings notice it.
                .http2_keep_alive_interval(KEEPALIVE)
                .keep_alive_timeout(KEEPALIVE)
                .keep_alive_while_idle(true);
            if let Some(tls) = tls {
                target = target.tls_config(tls).map_err(bad)?;
            }
            target
                .connect()
                .await
                .map_err(|source| TransportError::Connect {
                    endpoint: endpoint.clone(),
                    source,
                })
        }
    }
}

/// How long a client of a controller waits for its answer unless told otherwise: a
/// launcher, an admin command, a local forwarding to its global.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(2);

/// A controller that did not answer within the caller's deadline (stopped, overloaded, or
/// cut off): the caller goes on without it or fails, and says so in one line.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{endpoint} did not answer within {shown}", shown = crate::config::format_duration(*.deadline))]
pub struct NoAnswer {
    /// Whom the caller asked.
    pub endpoint: String,
    /// How long it waited.
    pub deadline: Duration,
}

/// Runs `call` (a connection and what is asked over it) for at most `deadline`; when it
/// takes longer it is dropped, and the error is a [`NoAnswer`] naming `endpoint`.
pub async fn within<T, E: From<NoAnswer>>(
    endpoint: &Endpoint,
    deadline: Duration,
    call: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    match tokio::time::timeout(deadline, call).await {
        Ok(answer) => answer,
        Err(_) => Err(NoAnswer {
            endpoint: endpoint.to_string(),
            deadline,
        }
        .into()),
    }
}

/// How often a TCP connection is pinged, and how long an unanswered ping may take before
/// the connection counts as lost.
pub const KEEPALIVE: Duration = Duration::from_secs(2);

/// A client interceptor that adds `authorization: Bearer TOKEN` to every call, or nothing
/// when built without a token; for generated clients' `with_interceptor`.
#[derive(Clone, Default)]
pub struct Bearer(Option<MetadataValue<Ascii>>);

impl Bearer {
    /// Checks that the token can travel in a header.
    pub fn new(token: Option<&str>) -> Result<Self, BadToken> {
        let Some(token) = token else {
            return Ok(Bearer(None));
        };
        check_token_text(token)?;
        // Visible ASCII always makes a header value.
        let value = format!("Bearer {token}")
            .parse()
            .map_err(|_| BadToken::Characters)?;
        Ok(Bearer(Some(value)))
    }
}

impl fmt::Debug for Bearer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shown = if self.0.is_some() {
            "<redacted>"
        } else {
            "none"
        };
        f.debug_tuple("Bearer").field(&shown).finish()
    }
}

impl Interceptor for Bearer {
    fn call(&mut self, mut request: Request<()>) -> Result<Request<()>, Status> {
        if let Some(value) = &self.0 {
            request
                .metadata_mut()
                .insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// Admits `request` only if it carries `authorization: Bearer TOKEN` with the expected
/// token; the comparison takes the same time wherever the first difference is. An empty
/// expected token admits nobody.
pub fn check_bearer<T>(request: &Request<T>, expected_token: &str) -> Result<(), Status> {
    let header = request
        .metadata()
        .get("authorization")
        .ok_or_else(|| Status::unauthenticated("missing bearer token"))?;
    let presented = header
        .to_str()
        .ok()
        .and_then(|text| {
            let (scheme, token) = text.split_once(' ')?;
            // RFC 7235: the scheme name is case-insensitive.
            scheme
                .eq_ignore_ascii_case("bearer")
                .then_some(token.trim())
        })
        .ok_or_else(|| Status::unauthenticated("authorization is not a bearer token"))?;
    if tokens_match(presented, expected_token) {
        Ok(())
    } else {
        Err(Status::unauthenticated("invalid bearer token"))
    }
}

/// Whether a presented token is the expected one, compared in constant time (an empty
/// expected token matches nothing): for callers outside gRPC, such as the JSON API.
pub fn tokens_match(presented: &str, expected: &str) -> bool {
    !expected.is_empty() && constant_time_eq(presented.trim().as_bytes(), expected.as_bytes())
}

/// Byte equality without an early exit, so that timing does not reveal how much of a
/// guess was right. Only the length leaks, which a random token of fixed size gives away
/// anyway.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// Reads a token from `path`, trimmed of surrounding white space.
///
/// Refuses a file that group or others may read or write (whoever can write it chooses
/// the token a server accepts), an empty one, and a token that cannot be sent in a header.
pub fn read_token_file(path: &Path) -> Result<String, SecretError> {
    let text = read_secret(path, "token file")?;
    let token = text.trim();
    if token.is_empty() {
        return Err(SecretError::Empty(path.to_owned()));
    }
    check_token_text(token).map_err(|source| SecretError::BadTokenIn {
        path: path.to_owned(),
        source,
    })?;
    Ok(token.to_owned())
}

/// Reads a file of secrets (`what`: "token file", "key file"), refusing one that group or
/// others may read or write: whoever reads it can pass for its owner, and whoever writes
/// it chooses what a server accepts.
pub(crate) fn read_secret(path: &Path, what: &'static str) -> Result<String, SecretError> {
    let io = |verb: &'static str| {
        move |source| SecretError::Io {
            what: format!("{verb} {what}"),
            path: path.to_owned(),
            source,
        }
    };
    let mut file = std::fs::File::open(path).map_err(io("open"))?;
    // The open file's mode, not the path's: the path could be swapped in between.
    let mode = file.metadata().map_err(io("stat"))?.permissions().mode();
    if mode & 0o066 != 0 {
        return Err(SecretError::Open {
            what,
            path: path.to_owned(),
            mode: mode & 0o7777,
        });
    }
    let mut text = String::new();
    file.read_to_string(&mut text).map_err(io("read"))?;
    Ok(text)
}

fn check_token_text(token: &str) -> Result<(), BadToken> {
    if token.is_empty() {
        return Err(BadToken::Empty);
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(BadToken::Characters);
    }
    Ok(())
}

/// Creates the UNIX socket a daemon serves on, with permissions `mode` (e.g. `0o666` for
/// a local controller that every user's launcher reaches, `0o600` for root only).
///
/// Creates the parent directory if missing. An existing socket is replaced only if nobody
/// answers on it (a daemon that died without cleaning up); any other file is left alone.
/// Must be called within a tokio runtime.
pub async fn bind_unix(path: &Path, mode: u32) -> Result<UnixListenerStream, TransportError> {
    let failed = |doing: String| move |source| TransportError::Socket { doing, source };
    let shown = path.display();
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(failed(format!(
            "cannot create directory {}",
            parent.display()
        )))?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match UnixStream::connect(path).await {
            Ok(_) => return Err(TransportError::InUse(path.to_owned())),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                std::fs::remove_file(path)
                    .map_err(failed(format!("cannot remove the stale socket {shown}")))?;
            }
            Err(e) => {
                return Err(failed(format!(
                    "cannot tell whether {shown} is still in use"
                ))(e));
            }
        },
        Ok(_) => return Err(TransportError::NotASocket(path.to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(format!("cannot stat {shown}"))(e)),
    }
    let listener = UnixListener::bind(path).map_err(failed(format!("cannot bind {shown}")))?;
    // Between bind and chmod the socket has the umask's permissions; that window is
    // harmless because servers decide on the peer's credentials, not on who could connect.
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(failed(format!("cannot chmod {mode:o} {shown}")))?;
    Ok(UnixListenerStream::new(listener))
}

/// The credentials of the process on the other end of a UNIX socket, as the kernel
/// gave them when it connected (`SO_PEERCRED`): they cannot be forged by the caller.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Peer {
    /// The caller's effective user id.
    pub uid: u32,
    /// The caller's effective group id.
    pub gid: u32,
    /// The caller's process id, when the kernel tells it.
    pub pid: Option<u32>,
}

/// Who made `request`, when it came over a UNIX socket served from
/// [`bind_unix`]'s stream; `None` over TCP.
pub fn peer_cred<T>(request: &Request<T>) -> Option<Peer> {
    let cred = request.extensions().get::<UdsConnectInfo>()?.peer_cred?;
    Some(Peer {
        uid: cred.uid(),
        gid: cred.gid(),
        pid: cred.pid().and_then(|pid| u32::try_from(pid).ok()),
    })
}

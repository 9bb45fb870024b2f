//! The transport helpers over real sockets: UNIX sockets with peer credentials, TCP with
//! bearer tokens, TLS and client certificates.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use sluice_control::proto::node_client::NodeClient;
use sluice_control::proto::node_server::{Node, NodeServer};
use sluice_control::proto::{AttachEvent, AttachRequest};
use sluice_control::tls::{ClientIdentity, ServerConfig, incoming, server_config};
use sluice_control::transport::{
    ConnectOptions, Endpoint, Peer, bind_unix, check_bearer, connect, peer_cred, read_token_file,
};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, UnixStream};
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::Server;
use tonic::{Request, Response, Status};

type Events = Pin<Box<dyn Stream<Item = Result<AttachEvent, Status>> + Send>>;

/// Answers Attach with one event naming what the server learnt of the caller: its uid
/// over a UNIX socket, "client certificate" over TLS with one, "tcp" otherwise. With a
/// token, refuses callers without it.
struct Echo {
    token: Option<String>,
}

#[tonic::async_trait]
impl Node for Echo {
    type AttachStream = Events;

    async fn attach(
        &self,
        request: Request<AttachRequest>,
    ) -> Result<Response<Self::AttachStream>, Status> {
        if let Some(token) = &self.token {
            check_bearer(&request, token)?;
        }
        let segment = match (peer_cred(&request), request.peer_certs()) {
            (Some(Peer { uid, .. }), _) => uid.to_string(),
            (None, Some(certs)) if !certs.is_empty() => "client certificate".to_owned(),
            (None, _) => "tcp".to_owned(),
        };
        let event = AttachEvent { segment };
        Ok(Response::new(Box::pin(tokio_stream::once(Ok(event)))))
    }
}

async fn serve_unix(path: &Path) -> JoinHandle<()> {
    let incoming = bind_unix(path, 0o600).await.expect("bind");
    tokio::spawn(async move {
        Server::builder()
            .add_service(NodeServer::new(Echo { token: None }))
            .serve_with_incoming(incoming)
            .await
            .expect("serve");
    })
}

/// Calls Attach and returns the first event's segment.
async fn attach(
    endpoint: &Endpoint,
    options: &ConnectOptions,
) -> Result<String, Box<dyn std::error::Error>> {
    let channel = connect(endpoint, options).await?;
    let mut client = NodeClient::with_interceptor(channel, options.bearer()?);
    let mut events = client
        .attach(AttachRequest {
            job: "42".to_owned(),
            ..Default::default()
        })
        .await?
        .into_inner();
    let event = events.next().await.ok_or("no event")??;
    Ok(event.segment)
}

fn unix(path: &Path) -> Endpoint {
    format!("unix:{}", path.display()).parse().unwrap()
}

#[tokio::test]
async fn unix_socket_carries_the_callers_uid() {
    let dir = tempfile::tempdir().unwrap();
    // A parent that does not exist yet: bind_unix makes it.
    let path = dir.path().join("run/sluice/local.sock");
    let server = serve_unix(&path).await;

    let mode = std::fs::metadata(&path).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    let segment = attach(&unix(&path), &ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(segment, unsafe { libc::getuid() }.to_string());
    server.abort();
}

#[tokio::test]
async fn garbage_on_one_connection_does_not_stop_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("local.sock");
    let server = serve_unix(&path).await;

    let mut garbage = UnixStream::connect(&path).await.unwrap();
    garbage
        .write_all(b"\x00\xffGET / HTTP/1.1\r\n\r\n\x16\x03\x01 not grpc at all")
        .await
        .unwrap();
    // A preface cut short and left hanging: the server must not wait on it alone.
    let mut truncated = UnixStream::connect(&path).await.unwrap();
    truncated.write_all(b"PRI * HTTP/2.0\r\n\r").await.unwrap();

    let segment = attach(&unix(&path), &ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(segment, unsafe { libc::getuid() }.to_string());
    drop(garbage);
    drop(truncated);
    let again = attach(&unix(&path), &ConnectOptions::default())
        .await
        .unwrap();
    assert_eq!(again, segment);
    server.abort();
}

#[tokio::test]
async fn bind_unix_refuses_a_live_socket_and_replaces_a_stale_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("local.sock");

    let server = serve_unix(&path).await;
    let err = bind_unix(&path, 0o600).await.unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("another daemon is listening on {}", path.display())
    );
    // The live daemon still answers.
    attach(&unix(&path), &ConnectOptions::default())
        .await
        .unwrap();

    // Stop it without removing its socket, as a crashed daemon would.
    server.abort();
    let _ = server.await;
    assert!(path.exists());
    let server = serve_unix(&path).await;
    attach(&unix(&path), &ConnectOptions::default())
        .await
        .unwrap();
    server.abort();

    let plain = dir.path().join("not-a-socket");
    std::fs::write(&plain, "keep me").unwrap();
    let err = bind_unix(&plain, 0o600).await.unwrap_err();
    assert!(err.to_string().contains("is not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&plain).unwrap(), "keep me");
}

#[tokio::test]
async fn connecting_to_a_missing_socket_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = unix(&dir.path().join("nobody.sock"));
    let err = connect(&endpoint, &ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("nobody.sock"), "{err}");
}

async fn serve_tcp(echo: Echo) -> (Endpoint, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        Server::builder()
            .add_service(NodeServer::new(echo))
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await
            .expect("serve");
    });
    let endpoint = format!("http://127.0.0.1:{port}").parse().unwrap();
    (endpoint, server)
}

fn code_of(err: Box<dyn std::error::Error>) -> tonic::Code {
    err.downcast::<Status>().expect("a gRPC status").code()
}

#[tokio::test]
async fn bearer_token_over_tcp() {
    let token = "s3cret-token";
    let (endpoint, server) = serve_tcp(Echo {
        token: Some(token.to_owned()),
    })
    .await;

    let right = ConnectOptions {
        token: Some(token.to_owned()),
        ..Default::default()
    };
    assert_eq!(attach(&endpoint, &right).await.unwrap(), "tcp");

    let wrong = ConnectOptions {
        token: Some("s3cret-tokem".to_owned()),
        ..Default::default()
    };
    let err = attach(&endpoint, &wrong).await.unwrap_err();
    assert_eq!(code_of(err), tonic::Code::Unauthenticated);

    let err = attach(&endpoint, &ConnectOptions::default())
        .await
        .unwrap_err();
    assert_eq!(code_of(err), tonic::Code::Unauthenticated);

    // A token that cannot be a header value is refused before any call.
    let bad = ConnectOptions {
        token: Some("two words".to_owned()),
        ..Default::default()
    };
    assert!(bad.bearer().is_err());
    server.abort();
}

/// A private CA, a certificate it signed for `localhost` with its key, a client
/// certificate it signed, and one signed by another CA; keys are written mode 0600.
struct Pki {
    dir: tempfile::TempDir,
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
    client: ClientIdentity,
    foreign: ClientIdentity,
}

fn ca(name: &str) -> rcgen::CertifiedIssuer<'static, rcgen::KeyPair> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    rcgen::CertifiedIssuer::self_signed(params, rcgen::KeyPair::generate().unwrap()).unwrap()
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().unwrap();
        let site = ca("site CA");
        let other = ca("another CA");
        let write = |name: &str, text: String, mode: u32| {
            let path = dir.path().join(name);
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
            path
        };
        let leaf = |name: &str, issuer: &rcgen::CertifiedIssuer<'_, rcgen::KeyPair>| {
            let key = rcgen::KeyPair::generate().unwrap();
            let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
                .unwrap()
                .signed_by(&key, issuer)
                .unwrap();
            (
                write(&format!("{name}.pem"), cert.pem(), 0o644),
                write(&format!("{name}.key"), key.serialize_pem(), 0o600),
            )
        };
        let (cert, key) = leaf("server", &site);
        let (client_cert, client_key) = leaf("client", &site);
        let (foreign_cert, foreign_key) = leaf("foreign", &other);
        Pki {
            ca: write("ca.pem", site.pem(), 0o644),
            cert,
            key,
            client: ClientIdentity {
                cert: client_cert,
                key: client_key,
            },
            foreign: ClientIdentity {
                cert: foreign_cert,
                key: foreign_key,
            },
            dir,
        }
    }
}

/// Serves Echo over TLS with `config` on a loopback port, answering as `https://localhost`.
async fn serve_tls(config: Arc<ServerConfig>) -> (Endpoint, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        Server::builder()
            .add_service(NodeServer::new(Echo { token: None }))
            .serve_with_incoming(incoming(listener, config))
            .await
            .expect("serve");
    });
    let endpoint = format!("https://localhost:{port}").parse().unwrap();
    (endpoint, server)
}

#[tokio::test]
async fn tls_over_tcp_with_a_private_ca() {
    let pki = Pki::new();
    let config = server_config(&pki.cert, &pki.key, None).unwrap();
    let (endpoint, server) = serve_tls(config).await;

    let trusted = ConnectOptions {
        ca_file: Some(pki.ca.clone()),
        ..Default::default()
    };
    assert_eq!(attach(&endpoint, &trusted).await.unwrap(), "tcp");

    // Trusting another CA (here the server's own leaf, not a CA) fails the handshake.
    let untrusted = ConnectOptions {
        ca_file: Some(pki.cert.clone()),
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };
    assert!(attach(&endpoint, &untrusted).await.is_err());

    // https without a CA, and a CA or a client certificate with plain http, are all
    // refused up front.
    let err = connect(&endpoint, &ConnectOptions::default())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("needs a CA file"), "{err}");
    let plain: Endpoint = endpoint
        .to_string()
        .replace("https", "http")
        .parse()
        .unwrap();
    let err = connect(&plain, &trusted).await.unwrap_err();
    assert!(err.to_string().contains("only for https"), "{err}");
    let with_cert = ConnectOptions {
        identity: Some(pki.client.clone()),
        ..Default::default()
    };
    let err = connect(&plain, &with_cert).await.unwrap_err();
    assert!(err.to_string().contains("only for https"), "{err}");

    let err = server_config(&pki.key, &pki.key, None).unwrap_err();
    assert!(format!("{err:#}").contains("no PEM CERTIFICATE"), "{err:#}");
    server.abort();
}

/// With a client CA, the server asks for a certificate: one its CA signed is seen by the
/// service, none at all lets the service decide, one from another CA ends the handshake.
#[tokio::test]
async fn client_certificates_are_checked_against_the_client_ca() {
    let pki = Pki::new();
    let config = server_config(&pki.cert, &pki.key, Some(&pki.ca)).unwrap();
    let (endpoint, server) = serve_tls(config).await;
    let options = |identity: Option<&ClientIdentity>| ConnectOptions {
        ca_file: Some(pki.ca.clone()),
        identity: identity.cloned(),
        connect_timeout: Duration::from_secs(2),
        ..Default::default()
    };

    let signed = attach(&endpoint, &options(Some(&pki.client))).await;
    assert_eq!(signed.unwrap(), "client certificate");
    assert_eq!(attach(&endpoint, &options(None)).await.unwrap(), "tcp");
    assert!(
        attach(&endpoint, &options(Some(&pki.foreign)))
            .await
            .is_err()
    );
    // The server still answers the others.
    assert_eq!(attach(&endpoint, &options(None)).await.unwrap(), "tcp");
    server.abort();
}

/// Private keys open to group or others are refused, like token files, on both sides.
#[test]
fn key_files_open_to_others_are_refused() {
    let pki = Pki::new();
    for key in [&pki.key, &pki.client.key] {
        std::fs::set_permissions(key, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    let err = format!(
        "{:#}",
        server_config(&pki.cert, &pki.key, None).unwrap_err()
    );
    assert!(err.contains("open to group or others (mode 0640)"), "{err}");
    let options = ConnectOptions {
        ca_file: Some(pki.ca.clone()),
        identity: Some(pki.client.clone()),
        ..Default::default()
    };
    let endpoint: Endpoint = "https://localhost:1".parse().unwrap();
    let err = format!("{:#}", options.tls(&endpoint).unwrap_err());
    assert!(err.contains("key file"), "{err}");
    assert!(err.contains("chmod 600"), "{err}");
    drop(pki.dir);
}

#[test]
fn token_files() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    let write = |text: &str, mode: u32| {
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    };

    write("  abc123\n", 0o600);
    assert_eq!(read_token_file(&path).unwrap(), "abc123");
    write("abc123\n", 0o400);
    assert_eq!(read_token_file(&path).unwrap(), "abc123");

    write("abc123\n", 0o640);
    let err = read_token_file(&path).unwrap_err().to_string();
    assert!(err.contains("open to group or others (mode 0640)"), "{err}");
    write("abc123\n", 0o604);
    assert!(read_token_file(&path).is_err());

    write(" \n", 0o600);
    let err = read_token_file(&path).unwrap_err().to_string();
    assert!(err.ends_with("is empty"), "{err}");

    let err = read_token_file(&dir.path().join("missing"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot open token file"), "{err}");
}

#[test]
fn endpoints_parse_and_print() {
    let cases = [
        ("unix:/run/sluice/local.sock", "unix:/run/sluice/local.sock"),
        (
            "unix:///run/sluice/local.sock",
            "unix:/run/sluice/local.sock",
        ),
        ("unix:relative.sock", "unix:relative.sock"),
        ("/run/sluice/local.sock", "unix:/run/sluice/local.sock"),
        ("http://global.cluster:7070", "http://global.cluster:7070"),
        ("http://10.0.0.1:7070/", "http://10.0.0.1:7070"),
        ("https://global:443", "https://global:443"),
        ("https://[::1]:7070", "https://[::1]:7070"),
    ];
    for (text, printed) in cases {
        let endpoint: Endpoint = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(endpoint.to_string(), printed);
        assert_eq!(printed.parse::<Endpoint>().unwrap(), endpoint);
    }
    assert_eq!(
        "http://[::1]:1".parse::<Endpoint>().unwrap(),
        Endpoint::Tcp {
            host: "::1".to_owned(),
            port: 1,
            tls: false
        }
    );

    let errors = [
        ("", "expected unix:PATH"),
        ("local.sock", "expected unix:PATH"),
        ("unix:", "no socket path after 'unix:'"),
        (
            "unix://run/x.sock",
            "unix:// must be followed by an absolute path",
        ),
        ("ftp://host:21", "unknown scheme 'ftp'"),
        ("http://host", "no port (write HOST:PORT)"),
        ("http://:7070", "no host before the port"),
        ("http://host:0", "port 0"),
        ("http://host:99999", "bad port '99999'"),
        ("http://host:http", "bad port 'http'"),
        ("http://host:7070/path", "only HOST:PORT"),
        ("http://user@host:7070", "only HOST:PORT"),
        ("http://::1:7070", "in brackets"),
        ("http://[::1:7070", "closing ']'"),
        ("http://[::1]", "no port"),
    ];
    for (text, reason) in errors {
        let err = text.parse::<Endpoint>().unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("bad endpoint '{text}': ")),
            "{err}"
        );
        assert!(err.contains(reason), "{text}: {err}");
        assert!(!err.contains('\n'));
    }
}

//! TLS on the global's port, rustls under tonic: the server's settings (its certificate,
//! and the CA that signs the client certificates of locals), the handshakes of incoming
//! connections, each under a deadline and each refusal logged with the peer's address,
//! and a client's settings (the CA it trusts, the certificate it presents).
//!
//! Given a client CA, the server asks every client for a certificate but lets one without
//! a certificate finish the handshake: admin commands connect without one, and the Control service
//! refuses a local without one with a gRPC status that says what is missing. A
//! certificate that does not chain to the CA ends the handshake there.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use sluice_core::error::{Blame, Fault};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::server::WebPkiClientVerifier;
use tokio_rustls::rustls::{self, RootCertStore};
use tokio_rustls::server::TlsStream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, ClientTlsConfig, Identity};

use crate::transport::{SecretError, read_secret};

pub use tokio_rustls::rustls::ServerConfig;

/// Why a certificate, a key or a CA cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A PEM file cannot be read.
    #[error("cannot read {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A key file that cannot be used.
    #[error(transparent)]
    Key(#[from] SecretError),
    /// A file holds none of what it should, or it is not usable: `what` says which.
    #[error("{}: {what}", path.display())]
    Content {
        /// The file.
        path: PathBuf,
        /// "bad PEM certificate", "not a CA certificate" …
        what: &'static str,
        /// What rustls says, when it said something.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// A file holds no PEM block of the kind named.
    #[error("{} holds no PEM {kind}", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
        /// "CERTIFICATE" or "PRIVATE KEY".
        kind: &'static str,
    },
    /// The key is not the certificate's.
    #[error("{} does not go with {}", key.display(), cert.display())]
    Mismatch {
        /// The key file.
        key: PathBuf,
        /// The certificate file.
        cert: PathBuf,
        /// What rustls says.
        source: rustls::Error,
    },
    /// The TLS library refuses its own defaults (it should not).
    #[error("TLS")]
    Library(#[source] rustls::Error),
}

impl Blame for TlsError {
    /// The system's, as a token file's is ([`SecretError`]): the files on this host are
    /// at fault, not the configuration naming them.
    fn fault(&self) -> Fault {
        Fault::System
    }
}

/// How long a client has to finish its TLS handshake.
pub const HANDSHAKE: Duration = Duration::from_secs(5);
/// How long a refused client's connection is kept, for the alert to reach it.
const LINGER: Duration = Duration::from_secs(1);

/// The certificate and key a client presents (PEM files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientIdentity {
    /// The certificate (chain), signed by the CA the server trusts for clients.
    pub cert: PathBuf,
    /// Its private key; refused when group or others may read it.
    pub key: PathBuf,
}

/// The TLS settings of the global's port, from PEM files: its certificate (chain), its
/// key, and the CA that signed the client certificates locals must present, if any.
pub fn server_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(TlsError::Library)?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = RootCertStore::empty();
            let content = |what| {
                move |e: Box<dyn std::error::Error + Send + Sync>| TlsError::Content {
                    path: ca.to_owned(),
                    what,
                    source: Some(e),
                }
            };
            for cert in certificates(ca)?.1 {
                roots
                    .add(cert)
                    .map_err(|e| content("not a CA certificate")(e.into()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(roots.into(), provider)
                .allow_unauthenticated()
                .build()
                .map_err(|e| content("not a usable CA")(e.into()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder
        .with_single_cert(certificates(cert)?.1, private_key(key)?.1)
        .map_err(|source| TlsError::Mismatch {
            key: key.to_owned(),
            cert: cert.to_owned(),
            source,
        })?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Arc::new(config))
}

/// The TLS connections made to `listener`. Each handshake runs apart from the accept
/// loop, so that a client slow to finish (or never finishing, within [`HANDSHAKE`])
/// holds up nobody else; a handshake that fails is logged with the peer's address and
/// why. Ends when the stream is dropped.
pub fn incoming(
    listener: TcpListener,
    config: Arc<ServerConfig>,
) -> ReceiverStream<std::io::Result<TlsStream<TcpStream>>> {
    let (tx, rx) = mpsc::channel(64);
    let acceptor = tokio_rustls::TlsAcceptor::from(config);
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = tx.closed() => return,
            };
            let (tcp, peer) = match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors, most likely: pause rather than spin.
                    tracing::warn!("cannot accept a connection: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            };
            let (acceptor, tx) = (acceptor.clone(), tx.clone());
            tokio::spawn(async move {
                let handshake = acceptor.accept(tcp).into_fallible();
                match tokio::time::timeout(HANDSHAKE, handshake).await {
                    Ok(Ok(tls)) => {
                        let _ = tx.send(Ok(tls)).await;
                    }
                    Ok(Err((e, tcp))) => {
                        handshake_failed(peer, &e);
                        linger(tcp).await;
                    }
                    Err(_) => tracing::warn!(
                        %peer,
                        "TLS handshake refused: not finished within {HANDSHAKE:?}"
                    ),
                }
            });
        }
    });
    ReceiverStream::new(rx)
}

/// Reads what a refused client still sends, for a moment, before closing: a connection
/// closed with data unread is reset, and the reset can reach the client before the
/// alert that tells it why it was refused.
async fn linger(mut tcp: TcpStream) {
    let mut sink = tokio::io::sink();
    let _ = tokio::time::timeout(LINGER, tokio::io::copy(&mut tcp, &mut sink)).await;
}

/// Logs a failed handshake: a connection closed before it said anything (a port scan, a
/// health check) only at debug level, anything else audited as a refused link.
fn handshake_failed(peer: SocketAddr, e: &std::io::Error) {
    let Some(tls) = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>()) else {
        tracing::debug!(%peer, "TLS handshake not finished: {e}");
        return;
    };
    let hint = match tls {
        rustls::Error::InvalidCertificate(_) => {
            ": its client certificate is not signed by admin.client_ca"
        }
        rustls::Error::InvalidMessage(_) => ": is it speaking plain http:// to this https:// port?",
        rustls::Error::AlertReceived(_) => ": the client does not accept this global's certificate",
        _ => "",
    };
    let who = crate::audit::Who::remote(Some(peer));
    crate::audit::Event::new("link", &who, "TLS handshake")
        .not_done(crate::audit::Outcome::Refused, &format!("{tls}{hint}"));
}

/// A client's TLS settings: it trusts only the CA in the PEM file `ca`, and presents
/// `identity` when given. Reads the files now.
pub fn client_tls(
    ca: &Path,
    identity: Option<&ClientIdentity>,
) -> Result<ClientTlsConfig, TlsError> {
    let (ca, _) = certificates(ca)?;
    let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(ca));
    if let Some(id) = identity {
        let (cert, _) = certificates(&id.cert)?;
        let (key, _) = private_key(&id.key)?;
        config = config.identity(Identity::from_pem(cert, key));
    }
    Ok(config)
}

/// The PEM file `path` and the certificates in it, at least one: checked now, since
/// tonic would otherwise only complain at the first handshake, far from the
/// configuration at fault.
fn certificates(path: &Path) -> Result<(Vec<u8>, Vec<CertificateDer<'static>>), TlsError> {
    let pem = std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Content {
            path: path.to_owned(),
            what: "bad PEM certificate",
            source: Some(e.into()),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Missing {
            path: path.to_owned(),
            kind: "CERTIFICATE",
        });
    }
    Ok((pem, certs))
}

/// The PEM file `path` and the private key in it (PKCS#8, SEC1 or PKCS#1); only its owner
/// may read it.
fn private_key(path: &Path) -> Result<(String, PrivateKeyDer<'static>), TlsError> {
    let pem = read_secret(path, "key file")?;
    // Whatever the PEM reader says, the administrator's fix is the same.
    let key = PrivateKeyDer::from_pem_slice(pem.as_bytes()).map_err(|_| TlsError::Missing {
        path: path.to_owned(),
        kind: "PRIVATE KEY",
    })?;
    Ok((pem, key))
}

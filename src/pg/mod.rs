//! The PostgreSQL wire protocol (`--pg-bind`): psql, Grafana, Metabase, DBeaver and any
//! PostgreSQL driver read the same tables as `/v1/sql`, under the same read-only policy, limits
//! and gate (`service::sql`). The protocol is pgwire's, the row encoding arrow-pg's and the
//! `pg_catalog` tables and functions datafusion-pg-catalog's (the datafusion-postgres project);
//! the statements are handled here (`session`). Optional: a password (`MLENERGY_PG_PASSWORD`,
//! cleartext, so pair it with TLS) and TLS for clients that ask for it (a certificate and key).

mod catalog;
mod session;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion_postgres::pgwire;
use pgwire::api::PgWireServerHandlers;
use pgwire::tokio::tokio_rustls::rustls;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use crate::service::Service;

pub use catalog::SURFACE;
use session::{PgSession, Startup};

/// How the wire protocol is served.
#[derive(Debug, Clone, Default)]
pub struct PgOptions {
    /// Clients must send this password (any user name) when set.
    pub password: Option<String>,
    /// A PEM certificate chain and its PKCS#8 key: TLS for clients that ask for it.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// Connections open at once; one more is closed at once (0: no bound).
    pub max_connections: usize,
}

/// The handlers of every connection: one session service, one startup handler.
struct Handlers {
    session: Arc<PgSession>,
    startup: Arc<Startup>,
}

impl PgWireServerHandlers for Handlers {
    fn simple_query_handler(&self) -> Arc<impl pgwire::api::query::SimpleQueryHandler> {
        self.session.clone()
    }

    fn extended_query_handler(&self) -> Arc<impl pgwire::api::query::ExtendedQueryHandler> {
        self.session.clone()
    }

    fn startup_handler(&self) -> Arc<impl pgwire::api::auth::StartupHandler> {
        self.startup.clone()
    }
}

fn tls_acceptor(cert: &PathBuf, key: &PathBuf) -> Result<pgwire::tokio::TlsAcceptor, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs = CertificateDer::pem_file_iter(cert)
        .and_then(|i| i.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: {e}", key.display()))?;
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .map_err(|e| e.to_string())?;
    Ok(pgwire::tokio::TlsAcceptor::from(Arc::new(config)))
}

/// Listen on `addr` and serve the wire protocol from a task of its own (until the process
/// stops); the bound address is returned. Fails on an address that cannot be bound or TLS files
/// that cannot be read.
pub async fn start(
    service: Arc<Service>,
    addr: SocketAddr,
    options: PgOptions,
) -> Result<SocketAddr, String> {
    let tls = match &options.tls {
        Some((cert, key)) => Some(tls_acceptor(cert, key)?),
        None => None,
    };
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot serve the wire protocol on {addr}: {e}"))?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let handlers = Arc::new(Handlers {
        session: Arc::new(PgSession::new(service)),
        startup: Arc::new(Startup::new(options.password.clone())),
    });
    tokio::spawn(accept(listener, handlers, tls, options.max_connections));
    Ok(bound)
}

async fn accept(
    listener: TcpListener,
    handlers: Arc<Handlers>,
    tls: Option<pgwire::tokio::TlsAcceptor>,
    max_connections: usize,
) {
    let limit = (max_connections > 0).then(|| Arc::new(Semaphore::new(max_connections)));
    loop {
        let (socket, peer) = match listener.accept().await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "postgres wire: accept failed");
                continue;
            }
        };
        // No Nagle: a small answer waits for no delayed ACK.
        let _ = socket.set_nodelay(true);
        let permit = match &limit {
            Some(l) => match l.clone().try_acquire_owned() {
                Ok(p) => Some(p),
                Err(_) => {
                    tracing::warn!(%peer, max = max_connections, "postgres wire: connection refused, too many open");
                    continue;
                }
            },
            None => None,
        };
        let (handlers, tls) = (handlers.clone(), tls.clone());
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(e) = pgwire::tokio::process_socket(socket, tls, handlers).await {
                tracing::debug!(%peer, error = %e, "postgres wire: connection ended");
            }
        });
    }
}

//! Serving the API (over HTTP or HTTPS) and the metrics.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use wasmco_api::{AppState, router};

use super::error::ServeError;

/// The host CA's certificate in the data directory, for clients to trust.
pub const TLS_CA_FILE: &str = "tls/ca.crt";

/// HTTPS for the API: a server certificate for `names` (DNS names or IPs)
/// from the host's own CA, made on first start (its key sealed in the
/// store; its certificate written to `DATA_DIR/tls/ca.crt`).
pub fn tls_config(
    state: &AppState,
    data_dir: &Path,
    names: &[String],
) -> Result<Arc<rustls::ServerConfig>, ServeError> {
    fn tls(cause: impl std::error::Error + Send + Sync + 'static) -> ServeError {
        ServeError::Tls(Box::new(cause))
    }
    let ca = match state.db.host_secret("tls-ca")? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(tls)?,
        None => {
            let ca = wasmco_pki::new_ca("wasmco host CA").map_err(tls)?;
            let bytes = serde_json::to_vec(&ca).map_err(tls)?;
            state.db.put_host_secret("tls-ca", &bytes)?;
            ca
        }
    };
    let ca_file = data_dir.join(TLS_CA_FILE);
    if let Some(dir) = ca_file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(&ca_file, ca.certificate.as_bytes())?;
    let server =
        wasmco_pki::issue(&ca, "wasmco", &[], names, wasmco_pki::Usage::Server).map_err(tls)?;
    wasmco_pki::rustls_server(&server, None).map_err(tls)
}

/// [`serve`] over HTTPS.
pub async fn serve_tls(
    state: AppState,
    listener: tokio::net::TcpListener,
    config: Arc<rustls::ServerConfig>,
) -> Result<(), ServeError> {
    let handle = axum_server::Handle::new();
    let shutdown = handle.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        shutdown.graceful_shutdown(Some(std::time::Duration::from_secs(5)));
    });
    let listener = listener.into_std()?;
    axum_server::from_tcp_rustls(
        listener,
        axum_server::tls_rustls::RustlsConfig::from_config(config),
    )?
    .handle(handle)
    .serve(router(state).into_make_service())
    .await?;
    Ok(())
}

/// Binds the API's address (port 0 picks a free one).
pub async fn bind(addr: SocketAddr) -> Result<tokio::net::TcpListener, ServeError> {
    tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Bind { addr, source })
}

/// Serves `/metrics` alone, unauthenticated, on `listener` (an address
/// only the scraper reaches) until the process gets Ctrl-C.
pub async fn serve_metrics(
    state: AppState,
    listener: tokio::net::TcpListener,
) -> Result<(), ServeError> {
    axum::serve(listener, wasmco_api::metrics_router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

/// Serves the API on `listener` until the process gets Ctrl-C.
pub async fn serve(state: AppState, listener: tokio::net::TcpListener) -> Result<(), ServeError> {
    axum::serve(listener, router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}

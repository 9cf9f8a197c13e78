//! A cluster's PKI: `…/clusters/{c}/ca`, `admin-kubeconfig`,
//! `bootstrap-bundle` and `csr`. The authorities are one sealed secret of
//! the cluster; only certificates and freshly issued material leave.

use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use wasmco_core::Kind;
use wasmco_orchestrator::cluster_pki;
use wasmco_pki::{ClusterPki, PkiError};
use wasmco_store::db::ResourceId;

use super::error::ApiError;
use super::state::AppState;

/// The routes, relative to a cluster's item path, with their methods.
pub const ROUTES: [(&str, &str); 5] = [
    ("post", "ca"),
    ("get", "ca"),
    ("post", "admin-kubeconfig"),
    ("post", "bootstrap-bundle"),
    ("post", "csr"),
];

/// The path of a cluster.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterPath {
    cluster_provider: String,
    cluster: String,
}

impl ClusterPath {
    /// The provider's and the cluster's names.
    pub fn names(&self) -> (&str, &str) {
        (&self.cluster_provider, &self.cluster)
    }

    fn id(&self) -> ResourceId {
        ResourceId::new(
            Kind::Cluster,
            vec![self.cluster_provider.clone(), self.cluster.clone()],
        )
    }
}

impl From<PkiError> for ApiError {
    fn from(e: PkiError) -> Self {
        match e {
            PkiError::Invalid { field, .. } => {
                ApiError::field(StatusCode::UNPROCESSABLE_ENTITY, field, e.to_string())
            }
            PkiError::Generate(_) | PkiError::Archive(_) => ApiError::internal(e),
        }
    }
}

fn load(state: &AppState, path: &ClusterPath) -> Result<ClusterPki, ApiError> {
    let id = path.id();
    state.db.get_raw(&id)?;
    cluster_pki::load(&state.db, &id)?.ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "{} has no CA yet; POST …/ca makes or imports one",
                id.describe()
            ),
        )
    })
}

/// Runs certificate work (key generation is CPU-bound) off the async workers.
async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    crate::work::off_the_workers(work).await?
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportBody {
    certificate: String,
    key: String,
}

/// `POST …/ca`: a new CA, or `{"certificate", "key"}` imported.
pub async fn create_ca(
    state: AppState,
    Path(path): Path<ClusterPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let import: Option<ImportBody> = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(wasmco_core::parse_json(&body, "body")?)
    };
    blocking(move || {
        let id = path.id();
        state.db.get_raw(&id)?;
        if cluster_pki::load(&state.db, &id)?.is_some() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                format!(
                    "{} already has a CA; certificates are re-issued from it by asking again",
                    id.describe()
                ),
            ));
        }
        let pki = match import {
            None => ClusterPki::create(&path.cluster)?,
            Some(import) => ClusterPki::import(&path.cluster, &import.certificate, &import.key)?,
        };
        cluster_pki::save(&state.db, &id, &pki)?;
        Ok((
            StatusCode::CREATED,
            axum::Json(json!({"certificate": pki.ca.certificate})),
        )
            .into_response())
    })
    .await
}

/// `GET …/ca`: the CA certificate, never its key.
pub async fn get_ca(state: AppState, Path(path): Path<ClusterPath>) -> Result<Response, ApiError> {
    blocking(move || {
        let pki = load(&state, &path)?;
        Ok(axum::Json(json!({"certificate": pki.ca.certificate})).into_response())
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct KubeconfigBody {
    server: String,
}

/// `POST …/admin-kubeconfig` `{"server": "https://…"}`: YAML.
pub async fn admin_kubeconfig(
    state: AppState,
    Path(path): Path<ClusterPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: KubeconfigBody = wasmco_core::parse_json(&body, "body")?;
    blocking(move || {
        let pki = load(&state, &path)?;
        let yaml = pki.admin_kubeconfig(&path.cluster, &request.server)?;
        Ok(([(header::CONTENT_TYPE, "application/yaml")], yaml).into_response())
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct BundleBody {
    node: String,
    #[serde(default)]
    sans: Vec<String>,
}

/// `POST …/bootstrap-bundle` `{"node", "sans"}`: kubeadm's pki as `.tar.gz`.
pub async fn bootstrap_bundle(
    state: AppState,
    Path(path): Path<ClusterPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: BundleBody = wasmco_core::parse_json(&body, "body")?;
    blocking(move || {
        let pki = load(&state, &path)?;
        let bundle = pki.bootstrap_bundle(&request.node, &request.sans)?;
        Ok((
            [
                (header::CONTENT_TYPE, "application/gzip".to_owned()),
                (
                    header::CONTENT_DISPOSITION,
                    format!("attachment; filename=\"{}-pki.tar.gz\"", request.node),
                ),
            ],
            bundle,
        )
            .into_response())
    })
    .await
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CsrBody {
    csr: String,
}

/// `POST …/csr` `{"csr": PEM}`: a node's certificate, `{"certificate": PEM}`.
pub async fn sign_csr(
    state: AppState,
    Path(path): Path<ClusterPath>,
    body: Bytes,
) -> Result<Response, ApiError> {
    let request: CsrBody = wasmco_core::parse_json(&body, "body")?;
    blocking(move || {
        let pki = load(&state, &path)?;
        let certificate = pki.sign_node_csr(&request.csr)?;
        Ok(axum::Json(json!({"certificate": certificate})).into_response())
    })
    .await
}

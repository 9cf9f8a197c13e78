//! Who is asking and what they may do: the admin token, scoped tokens
//! (EMCO's projects as tenants), and the audit log of every request.
//!
//! Two layers: [`authenticate`] wraps the whole router (so an unknown route
//! is a 401 too, and every request is audited); [`authorize`] runs after
//! routing, where the route's template and the project in the path are
//! known.

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::sync::{Arc, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};

use wasmco_core::Kind;
use wasmco_core::tokens::{Role, TokenRecord};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

use super::error::ApiError;

/// Who a request comes from.
#[derive(Debug, Clone)]
pub enum Principal {
    /// The admin token's holder: everything.
    Admin,
    /// A scoped token's holder: its projects, as its role allows.
    Scoped(Arc<TokenRecord>),
}

impl Principal {
    /// The name the audit log gives it.
    pub fn name(&self) -> &str {
        match self {
            Principal::Admin => "admin",
            Principal::Scoped(record) => &record.name,
        }
    }

    /// Whether it may see `project` at all.
    pub fn sees(&self, project: &str) -> bool {
        match self {
            Principal::Admin => true,
            Principal::Scoped(record) => record.covers(project),
        }
    }
}

/// Who is behind `request`, as the orchestrator's tenancy rules see it:
/// a scoped token's holder is a tenant; the admin is not confined.
pub fn actor(request: &Request) -> wasmco_orchestrator::Actor {
    match request.extensions().get::<Principal>() {
        Some(Principal::Scoped(_)) => wasmco_orchestrator::Actor::Tenant,
        _ => wasmco_orchestrator::Actor::Admin,
    }
}

/// The tokens the API accepts; cheap to share.
pub struct Tokens {
    admin: Arc<str>,
    /// Scoped tokens by the hex SHA-256 of their secret.
    scoped: RwLock<HashMap<String, Arc<TokenRecord>>>,
    /// Where they are stored: read again once it changed, since another
    /// host sharing the store may have issued or revoked one.
    db: ResourceDb,
    /// The database's generation when they were last read.
    loaded: std::sync::atomic::AtomicU64,
}

/// The hex SHA-256 of a token's secret, which is all that is stored.
pub fn digest(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Seconds since the Unix epoch.
pub fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Tokens {
    /// The admin token and every stored scoped token.
    pub fn load(admin: Arc<str>, db: &ResourceDb) -> Result<Self, DbError> {
        let loaded = db.generation();
        Ok(Tokens {
            admin,
            scoped: RwLock::new(Self::stored(db)?),
            db: db.clone(),
            loaded: loaded.into(),
        })
    }

    fn stored(db: &ResourceDb) -> Result<HashMap<String, Arc<TokenRecord>>, DbError> {
        Ok(db
            .tokens()?
            .into_iter()
            .map(|record| (record.digest.clone(), Arc::new(record)))
            .collect())
    }

    /// Reads the tokens again if the database changed since they were read.
    fn refresh(&self) {
        use std::sync::atomic::Ordering;
        let generation = self.db.generation();
        if self.loaded.load(Ordering::SeqCst) == generation {
            return;
        }
        match Self::stored(&self.db) {
            Ok(scoped) => {
                *self.write() = scoped;
                self.loaded.store(generation, Ordering::SeqCst);
            }
            // What was read before stands until the store answers.
            Err(error) => tracing::warn!(%error, "cannot read the tokens again"),
        }
    }

    /// Who holds `presented`, or why nobody does.
    fn resolve(&self, presented: &str) -> Result<Principal, &'static str> {
        use subtle::ConstantTimeEq;
        if bool::from(presented.as_bytes().ct_eq(self.admin.as_bytes())) {
            return Ok(Principal::Admin);
        }
        self.refresh();
        let record = self
            .read()
            .get(&digest(presented))
            .cloned()
            .ok_or("the bearer token is not valid")?;
        if record.expired(now()) {
            return Err("the bearer token has expired");
        }
        // A revoke through another host counts from its next request here
        // too, not from when this host's watch of the store catches up.
        match self.db.token_stands(&record) {
            Ok(true) => {}
            Ok(false) => return Err("the bearer token is not valid"),
            // What was read before stands until the store answers.
            Err(error) => tracing::warn!(%error, "cannot read the token again"),
        }
        Ok(Principal::Scoped(record))
    }

    /// Accepts a newly stored token.
    pub fn insert(&self, record: TokenRecord) {
        self.write().insert(record.digest.clone(), Arc::new(record));
    }

    /// Stops accepting the token named `name`, at once.
    pub fn revoke(&self, name: &str) {
        self.write().retain(|_, record| record.name != name);
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<TokenRecord>>> {
        // The map is replaced entry by entry; a panic mid-write leaves it whole.
        self.scoped.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<TokenRecord>>> {
        self.scoped.write().unwrap_or_else(|p| p.into_inner())
    }
}

/// What [`authenticate`] needs.
#[derive(Clone)]
pub struct Gate {
    /// The accepted tokens.
    pub tokens: Arc<Tokens>,
    /// Where every request is recorded.
    pub audit: AuditLog,
    /// Where every request is counted.
    pub http: crate::metrics::HttpMetrics,
}

/// The route template a request matched, handed from [`authorize`] to
/// [`authenticate`] for the audit log and the metrics (axum's own, shared by
/// the route's requests: nothing is copied per request).
#[derive(Debug, Clone)]
struct RouteTemplate(MatchedPath);

/// Lets a request through only with a bearer token the API accepts, and
/// records every request but `/healthz` in the audit log.
pub async fn authenticate(State(gate): State<Gate>, mut request: Request, next: Next) -> Response {
    if request.uri().path() == "/healthz" {
        return next.run(request).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let resource = request.uri().path().to_owned();
    let presented = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let verdict = match presented {
        Some(presented) => gate.tokens.resolve(presented),
        None => Err(
            "this API needs `Authorization: Bearer <token>`; the admin token is in DATA_DIR/admin.token",
        ),
    };
    let (who, response) = match verdict {
        Ok(principal) => {
            let who = principal.name().to_owned();
            request.extensions_mut().insert(principal);
            (who, next.run(request).await)
        }
        Err(message) => {
            let mut response = ApiError::new(StatusCode::UNAUTHORIZED, message).into_response();
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            let who = if presented.is_some() {
                "(invalid token)"
            } else {
                "(no token)"
            };
            (who.to_owned(), response)
        }
    };
    let route = response
        .extensions()
        .get::<RouteTemplate>()
        .map(|r| r.0.clone());
    let seconds = started.elapsed().as_secs_f64();
    gate.http.record(
        route.as_ref().map(MatchedPath::as_str),
        &method,
        response.status(),
        seconds,
    );
    gate.audit.record(AuditEntry {
        who,
        method,
        route,
        resource,
        status: response.status(),
        millis: seconds * 1e3,
    });
    response
}

/// Refuses what the request's principal may not do on the matched route.
pub async fn authorize(request: Request, next: Next) -> Response {
    let matched = request.extensions().get::<MatchedPath>().cloned();
    let template = matched.as_ref().map_or("", MatchedPath::as_str);
    // The admin, and `/healthz` (which has no principal), go straight on.
    let scoped = match request.extensions().get::<Principal>() {
        Some(principal @ Principal::Scoped(_)) => Some(principal.clone()),
        _ => None,
    };
    // Everything the request does logs under its route and path.
    let span = tracing::info_span!(
        "request",
        method = %request.method(),
        route = %template,
        path = %request.uri().path()
    );
    let mut response =
        tracing::Instrument::instrument(answer(scoped, template, request, next), span).await;
    if let Some(matched) = matched {
        response.extensions_mut().insert(RouteTemplate(matched));
    }
    response
}

/// Runs the request unless a scoped principal may not.
async fn answer(
    scoped: Option<Principal>,
    template: &str,
    request: Request,
    next: Next,
) -> Response {
    match scoped {
        None => next.run(request).await,
        Some(principal) => {
            let (mut parts, body) = request.into_parts();
            let project = RawPathParams::from_request_parts(&mut parts, &())
                .await
                .ok()
                .and_then(|params| {
                    params
                        .iter()
                        .find(|(name, _)| *name == Kind::Project.info().param)
                        .map(|(_, value)| value.to_owned())
                });
            match permit(&principal, &parts.method, template, project.as_deref()) {
                Ok(()) => next.run(Request::from_parts(parts, body)).await,
                Err(refusal) => refusal.into_response(),
            }
        }
    }
}

/// Whether `principal` may send `method` to the route `template` (whose
/// project parameter is `project`, when it has one).
///
/// A scoped token reaches only its projects: any other project is a 404
/// worded as for a project that does not exist, so it learns no names.
/// Viewers read (but not a logical cloud's user kubeconfig); editors also
/// change and deploy. Creating or deleting a project, and everything
/// outside projects (cluster providers, controllers, tokens), needs the
/// admin token.
pub fn permit(
    principal: &Principal,
    method: &Method,
    template: &str,
    project: Option<&str>,
) -> Result<(), ApiError> {
    let Principal::Scoped(record) = principal else {
        return Ok(());
    };
    let reads = matches!(*method, Method::GET | Method::HEAD);
    if template == "/v2/openapi.json" {
        return Ok(());
    }
    let admin_only = || {
        ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "token {} is scoped to projects; {method} {template} needs the admin token",
                record.name
            ),
        )
    };
    let projects = Kind::Project.collection_route();
    if template == projects {
        // The list is cut to the token's projects by the handler.
        return if reads { Ok(()) } else { Err(admin_only()) };
    }
    let Some(project) = project.filter(|_| template.starts_with(&format!("{projects}/"))) else {
        return Err(admin_only());
    };
    if !record.covers(project) {
        return Err(ApiError::from(DbError::NotFound(ResourceId::new(
            Kind::Project,
            vec![project.to_owned()],
        ))));
    }
    // A logical cloud user's kubeconfig is a credential for its clusters:
    // an editor's to fetch, not a viewer's.
    let credential = template.ends_with("/kubeconfig");
    if reads && !(credential && record.role == Role::Viewer) {
        return Ok(());
    }
    if template == Kind::Project.item_route() && *method != Method::PUT {
        return Err(admin_only());
    }
    // A project's tenancy policy is what bounds its tokens: the admin's to set.
    if template.starts_with(&Kind::TenancyPolicy.collection_route()) {
        return Err(admin_only());
    }
    match record.role {
        Role::Editor => Ok(()),
        Role::Viewer => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            format!(
                "token {} is a viewer's: it can read, but not change anything or fetch credentials",
                record.name
            ),
        )),
    }
}

/// One line of the audit log.
struct AuditEntry {
    who: String,
    method: Method,
    route: Option<MatchedPath>,
    resource: String,
    status: StatusCode,
    millis: f64,
}

/// The longest request path the audit log keeps whole.
const MAX_AUDITED_PATH: usize = 1024;

/// The audit log: one JSON line per request in `DATA_DIR/audit.log`, and an
/// event on the `wasmco::audit` tracing target. Lines are written by a
/// thread of its own, in batches, so neither a slow disk nor a write per
/// request holds up the requests.
#[derive(Clone)]
pub struct AuditLog {
    lines: std::sync::mpsc::Sender<String>,
}

/// How long the writer gathers lines before it writes them out.
const AUDIT_BATCH: std::time::Duration = std::time::Duration::from_millis(20);

impl AuditLog {
    /// A log appending to `file` (made 0600 when new).
    pub fn open(file: &Path) -> std::io::Result<Self> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        let out = options.open(file)?;
        let (sender, receiver) = std::sync::mpsc::channel::<String>();
        std::thread::Builder::new()
            .name("wasmco-audit".into())
            .spawn(move || write_batches(receiver, out))?;
        Ok(AuditLog { lines: sender })
    }

    fn record(&self, entry: AuditEntry) {
        let resource = wasmco_core::limits::cut(&entry.resource, MAX_AUDITED_PATH);
        let route = entry.route.as_ref().map_or("", MatchedPath::as_str);
        let status = entry.status.as_u16();
        tracing::info!(
            target: "wasmco::audit",
            who = %entry.who,
            method = %entry.method,
            route,
            resource,
            status,
            millis = entry.millis,
        );
        let quoted = |text: &str| serde_json::Value::from(text).to_string();
        let line = format!(
            r#"{{"time":"{}","who":{},"method":"{}","route":{},"resource":{},"status":{status},"millis":{:.3}}}"#,
            humantime::format_rfc3339_millis(SystemTime::now()),
            quoted(&entry.who),
            entry.method,
            quoted(route),
            quoted(resource),
            entry.millis,
        );
        // The writer only stops with the process.
        let _ = self.lines.send(line);
    }
}

/// The writer thread: every [`AUDIT_BATCH`], what has queued up, in one write.
fn write_batches(lines: std::sync::mpsc::Receiver<String>, out: std::fs::File) {
    use std::sync::mpsc::TryRecvError;
    let mut out = std::io::BufWriter::new(out);
    loop {
        std::thread::sleep(AUDIT_BATCH);
        let mut written = Ok(());
        let open = loop {
            match lines.try_recv() {
                Ok(line) => written = written.and_then(|()| writeln!(out, "{line}")),
                Err(TryRecvError::Empty) => break true,
                Err(TryRecvError::Disconnected) => break false,
            }
        };
        if let Err(error) = written.and_then(|()| out.flush()) {
            tracing::error!(%error, "cannot write the audit log");
        }
        if !open {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(role: Role) -> Principal {
        Principal::Scoped(Arc::new(TokenRecord {
            name: "t".into(),
            projects: ["mine".to_owned()].into(),
            role,
            issued: 0,
            expires: u64::MAX,
            digest: String::new(),
        }))
    }

    #[test]
    fn a_scope_decides_by_route_project_and_role() {
        let viewer = scoped(Role::Viewer);
        let editor = scoped(Role::Editor);
        let dig = "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/deployment-intent-groups/{deploymentIntentGroup}/instantiate";
        let status = |r: Result<(), ApiError>| r.err().map(|e| e.status.as_u16());
        assert_eq!(
            status(permit(&editor, &Method::POST, dig, Some("mine"))),
            None
        );
        assert_eq!(
            status(permit(&viewer, &Method::POST, dig, Some("mine"))),
            Some(403)
        );
        assert_eq!(
            status(permit(&editor, &Method::POST, dig, Some("theirs"))),
            Some(404)
        );
        let kubeconfig = "/v2/projects/{project}/logical-clouds/{logicalCloud}/cluster-references/{clusterReference}/kubeconfig";
        assert_eq!(
            status(permit(&viewer, &Method::GET, kubeconfig, Some("mine"))),
            Some(403)
        );
        assert_eq!(
            status(permit(&editor, &Method::GET, kubeconfig, Some("mine"))),
            None
        );
        let providers = "/v2/cluster-providers";
        assert_eq!(
            status(permit(&editor, &Method::GET, providers, None)),
            Some(403)
        );
        assert_eq!(
            status(permit(&Principal::Admin, &Method::DELETE, providers, None)),
            None
        );
        let project = "/v2/projects/{project}";
        assert_eq!(
            status(permit(&editor, &Method::PUT, project, Some("mine"))),
            None
        );
        assert_eq!(
            status(permit(&editor, &Method::DELETE, project, Some("mine"))),
            Some(403)
        );
        let policy = "/v2/projects/{project}/tenancy-policies/{tenancyPolicy}";
        assert_eq!(
            status(permit(&editor, &Method::PUT, policy, Some("mine"))),
            Some(403)
        );
        assert_eq!(
            status(permit(&viewer, &Method::GET, policy, Some("mine"))),
            None
        );
    }
}

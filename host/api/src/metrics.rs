//! `GET /metrics`: every layer's counters in the Prometheus (OpenMetrics)
//! text format, with the API's own requests among them.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::{Registry, Unit};

use wasmco_store::appcontext::Reachability;
use wasmco_store::db::ResourceDb;

use crate::error::ApiError;

/// A request by its route template (never its raw path, which would name
/// objects), method and answer.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    route: Arc<str>,
    method: &'static str,
    status: u16,
}

/// A route template and method.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    route: Arc<str>,
    method: &'static str,
}

/// From 100 µs to about 6.5 s.
fn request_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.000_1, 2.0, 17))
}

/// The API's requests; cheap to clone.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<RequestLabels, Counter>,
    duration: Family<RouteLabels, Histogram, fn() -> Histogram>,
    /// Each series' handles, found without hashing or copying the route's
    /// text: axum keeps one allocation per route template and hands it to
    /// every request of that route, so its address names the route.
    series: Arc<RwLock<HashMap<SeriesKey, Series>>>,
}

/// More series than the API's routes, methods and statuses make.
const MAX_CACHED_SERIES: usize = 4096;

/// A route template's address, the method and the status.
type SeriesKey = (usize, &'static str, u16);

/// The counter and histogram of one series (clones share the values).
struct Series {
    /// The template, to tell a reused address from the one cached.
    route: Arc<str>,
    requests: Counter,
    duration: Histogram,
}

impl HttpMetrics {
    fn new() -> Self {
        HttpMetrics {
            requests: Family::default(),
            duration: Family::new_with_constructor(request_buckets),
            series: Arc::default(),
        }
    }

    /// Records one answered request. `route` is the matched template
    /// (`None` when none matched).
    pub fn record(&self, route: Option<&str>, method: &Method, status: StatusCode, seconds: f64) {
        if !wasmco_core::instrumentation::recording() {
            return;
        }
        let route = route.unwrap_or("(unmatched)");
        // Bounded: anything but the methods the API serves is "other".
        let method = match *method {
            Method::GET => "GET",
            Method::POST => "POST",
            Method::PUT => "PUT",
            Method::DELETE => "DELETE",
            Method::PATCH => "PATCH",
            Method::HEAD => "HEAD",
            Method::OPTIONS => "OPTIONS",
            _ => "other",
        };
        let key = (route.as_ptr() as usize, method, status.as_u16());
        let cached = self.series.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(series) = cached.get(&key).filter(|s| *s.route == *route) {
            series.requests.inc();
            series.duration.observe(seconds);
            return;
        }
        drop(cached);
        let route: Arc<str> = Arc::from(route);
        let series = Series {
            requests: self
                .requests
                .get_or_create(&RequestLabels {
                    route: route.clone(),
                    method,
                    status: key.2,
                })
                .clone(),
            duration: self
                .duration
                .get_or_create(&RouteLabels {
                    route: route.clone(),
                    method,
                })
                .clone(),
            route,
        };
        series.requests.inc();
        series.duration.observe(seconds);
        let mut cached = self.series.write().unwrap_or_else(PoisonError::into_inner);
        // A nested router would give each request a template of its own
        // (axum joins the prefix per request): never let that grow.
        if cached.len() >= MAX_CACHED_SERIES {
            cached.clear();
        }
        cached.insert(key, series);
    }
}

/// A cluster's reachability, as rsync's probe last saw it.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReachabilityLabel {
    reachability: &'static str,
}

/// Every registered family, and the gauges read at scrape time.
pub struct Metrics {
    registry: Registry,
    http: HttpMetrics,
    store_bytes: Gauge,
    clusters: Family<ReachabilityLabel, Gauge>,
    db: ResourceDb,
}

impl Metrics {
    /// The API's families added to `registry` (which the other layers'
    /// already are in), over `db`'s store.
    pub fn new(mut registry: Registry, db: ResourceDb) -> Self {
        let http = HttpMetrics::new();
        registry.register(
            "wasmco_http_requests",
            "API requests by route template, method and status",
            http.requests.clone(),
        );
        registry.register_with_unit(
            "wasmco_http_request_duration",
            "How long the API took to answer, by route template and method",
            Unit::Seconds,
            http.duration.clone(),
        );
        let store_bytes = Gauge::default();
        registry.register_with_unit(
            "wasmco_store_size",
            "What the store takes on disk",
            Unit::Bytes,
            store_bytes.clone(),
        );
        let clusters = Family::default();
        registry.register(
            "wasmco_clusters",
            "Clusters by reachability, as rsync's probes last recorded it",
            clusters.clone(),
        );
        Metrics {
            registry,
            http,
            store_bytes,
            clusters,
            db,
        }
    }

    /// The API's own request metrics.
    pub fn http(&self) -> &HttpMetrics {
        &self.http
    }

    /// Everything, in the text format, with the gauges read now from
    /// `orchestrator` and the store.
    fn encode(&self, orchestrator: &wasmco_orchestrator::Orchestrator) -> Result<String, ApiError> {
        match orchestrator.cluster_healths() {
            Ok(healths) => {
                for reachability in [Reachability::Reachable, Reachability::Unreachable] {
                    let count = healths
                        .iter()
                        .filter(|(_, h)| h.state == reachability)
                        .count();
                    let label = match reachability {
                        Reachability::Reachable => "Reachable",
                        Reachability::Unreachable => "Unreachable",
                    };
                    self.clusters
                        .get_or_create(&ReachabilityLabel {
                            reachability: label,
                        })
                        .set(i64::try_from(count).unwrap_or(i64::MAX));
                }
            }
            Err(error) => tracing::warn!(%error, "cannot read the clusters' health"),
        }
        match self.db.store().size_on_disk() {
            Ok(bytes) => {
                self.store_bytes
                    .set(i64::try_from(bytes).unwrap_or(i64::MAX));
            }
            Err(error) => tracing::warn!(%error, "cannot read the store's size"),
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)
            .map_err(ApiError::internal)?;
        Ok(text)
    }
}

/// `GET /metrics`.
pub async fn serve(
    metrics: Arc<Metrics>,
    orchestrator: wasmco_orchestrator::Orchestrator,
) -> Result<Response, ApiError> {
    let text = crate::work::off_the_workers(move || metrics.encode(&orchestrator)).await??;
    let mut response = text.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    Ok(response)
}

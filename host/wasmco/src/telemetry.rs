//! Where logs and spans go: stderr as text or JSON, and, in a build with the
//! `otlp` feature, spans exported over OTLP (HTTP, protobuf) to a collector.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::Layer as _;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// How logs are written to stderr.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogFormat {
    /// For people.
    Text,
    /// One object per line, with the span fields, for log collectors.
    Json,
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// An endpoint was given to a build without the exporter.
    #[error(
        "--otlp-endpoint needs a wasmco built with the `otlp` feature: cargo build --release -p wasmco --features otlp"
    )]
    NotBuiltIn,
    /// The endpoint is not a URL an OTLP/HTTP exporter can post to.
    #[error("--otlp-endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// As given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The exporter could not be built.
    #[error("the OTLP exporter: {0}")]
    Exporter(String),
}

/// Flushes exported spans when dropped (at the end of `main`).
#[must_use = "spans still batched are lost when this is dropped early"]
pub struct Telemetry {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Telemetry {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take()
            && let Err(error) = provider.shutdown()
        {
            tracing::warn!(%error, "spans not all exported at exit");
        }
    }
}

/// Which spans go to the collector unless `WASMCO_OTLP_FILTER` says
/// otherwise: wasmco's own (requests, DIG actions, controller calls,
/// reconciles), not those of its dependencies (wasmtime's WASI calls would
/// be a span per clock read).
#[cfg(feature = "otlp")]
const OTLP_SPANS: &str = "warn,wasmco=info";

/// Installs the process's subscriber: stderr in `format`, filtered by
/// `RUST_LOG` (`warn` by default), and, with `otlp_endpoint`, an OTLP
/// exporter of wasmco's spans, filtered on its own.
pub fn install(
    format: LogFormat,
    otlp_endpoint: Option<&str>,
) -> Result<Telemetry, TelemetryError> {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let stderr = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let stderr = match format {
        LogFormat::Text => stderr.with_filter(filter).boxed(),
        LogFormat::Json => stderr.json().with_filter(filter).boxed(),
    };
    let registry = tracing_subscriber::registry().with(stderr);
    match otlp_endpoint {
        None => {
            registry.init();
            Ok(Telemetry {
                #[cfg(feature = "otlp")]
                provider: None,
            })
        }
        #[cfg(not(feature = "otlp"))]
        Some(_) => Err(TelemetryError::NotBuiltIn),
        #[cfg(feature = "otlp")]
        Some(endpoint) => {
            let provider = otlp::provider(endpoint)?;
            let tracer = opentelemetry::trace::TracerProvider::tracer(&provider, "wasmco");
            let spans = EnvFilter::try_from_env("WASMCO_OTLP_FILTER")
                .unwrap_or_else(|_| EnvFilter::new(OTLP_SPANS));
            registry
                .with(
                    tracing_opentelemetry::layer()
                        .with_tracer(tracer)
                        // `code.module.name` says it already, and a reconcile's
                        // own `target` field (its DIG) must not be shadowed.
                        .with_target(false)
                        .with_filter(spans),
                )
                .init();
            Ok(Telemetry {
                provider: Some(provider),
            })
        }
    }
}

#[cfg(feature = "otlp")]
mod otlp {
    use opentelemetry_otlp::WithExportConfig;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::SdkTracerProvider;

    use super::TelemetryError;

    /// Where a collector takes traces: the endpoint's `/v1/traces`, unless
    /// it names a path of its own.
    fn traces_url(endpoint: &str) -> Result<String, TelemetryError> {
        let url = reqwest::Url::parse(endpoint).map_err(|e| TelemetryError::Endpoint {
            endpoint: endpoint.to_owned(),
            reason: e.to_string(),
        })?;
        // No TLS stack is built into the exporter: spans go to a collector
        // (agent) beside the host, which forwards them however it must.
        if url.scheme() != "http" {
            return Err(TelemetryError::Endpoint {
                endpoint: endpoint.to_owned(),
                reason: "not an http:// URL (OTLP over HTTP to a collector beside the host, as on its port 4318)".into(),
            });
        }
        Ok(if url.path() == "/" || url.path().is_empty() {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        } else {
            endpoint.to_owned()
        })
    }

    /// A tracer provider batching spans to `endpoint` from its own thread.
    pub(super) fn provider(endpoint: &str) -> Result<SdkTracerProvider, TelemetryError> {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(traces_url(endpoint)?)
            .with_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| TelemetryError::Exporter(e.to_string()))?;
        Ok(SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(
                Resource::builder()
                    .with_service_name("wasmco")
                    .with_attribute(opentelemetry::KeyValue::new(
                        "service.version",
                        env!("CARGO_PKG_VERSION"),
                    ))
                    .build(),
            )
            .build())
    }

    #[cfg(test)]
    mod tests {
        use super::traces_url;

        #[test]
        fn a_bare_endpoint_gets_the_traces_path() {
            assert_eq!(
                traces_url("http://127.0.0.1:4318").unwrap(),
                "http://127.0.0.1:4318/v1/traces"
            );
            assert_eq!(
                traces_url("http://127.0.0.1:4318/").unwrap(),
                "http://127.0.0.1:4318/v1/traces"
            );
            assert_eq!(
                traces_url("http://collector/custom/path").unwrap(),
                "http://collector/custom/path"
            );
            assert!(traces_url("collector:4317").is_err());
            assert!(traces_url("https://collector:4318").is_err());
        }
    }
}

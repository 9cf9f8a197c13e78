//! With the `otlp` feature, `--otlp-endpoint` exports the spans to a
//! collector: here a loopback receiver that decodes OTLP/HTTP protobuf as a
//! collector does, and finds a DIG action's spans, tied to its request and
//! to the reconcile of what it built.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

use crate::deploy::{DIG, action, set_up_with};
use crate::support::server::{Server, Virtual, expect};
use crate::support::wait::eventually;

/// A span as exported, with the service that sent it.
#[derive(Debug, Clone)]
struct Exported {
    service: String,
    span: Span,
}

impl Exported {
    fn attribute(&self, key: &str) -> Option<String> {
        self.span
            .attributes
            .iter()
            .find(|a| a.key == key)
            .and_then(|a| a.value.as_ref()?.value.as_ref())
            .map(|value| match value {
                AnyValue::StringValue(s) => s.clone(),
                other => format!("{other:?}"),
            })
    }
}

/// An OTLP/HTTP receiver on a loopback port, keeping every span it is sent.
struct Collector {
    address: String,
    spans: Arc<Mutex<Vec<Exported>>>,
    _runtime: tokio::runtime::Runtime,
}

impl Collector {
    fn start() -> Collector {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let spans: Arc<Mutex<Vec<Exported>>> = Arc::default();
        let kept = spans.clone();
        let app = axum::Router::new().route(
            "/v1/traces",
            axum::routing::post(move |body: axum::body::Bytes| {
                let kept = kept.clone();
                async move {
                    let request = ExportTraceServiceRequest::decode(body)
                        .expect("the exporter sends OTLP protobuf");
                    for resource in request.resource_spans {
                        let service = resource
                            .resource
                            .iter()
                            .flat_map(|r| &r.attributes)
                            .find(|a| a.key == "service.name")
                            .and_then(|a| match a.value.as_ref()?.value.as_ref()? {
                                AnyValue::StringValue(s) => Some(s.clone()),
                                _ => None,
                            })
                            .unwrap_or_default();
                        for scope in resource.scope_spans {
                            for span in scope.spans {
                                kept.lock().unwrap().push(Exported {
                                    service: service.clone(),
                                    span,
                                });
                            }
                        }
                    }
                    // An empty ExportTraceServiceResponse.
                    (
                        [("content-type", "application/x-protobuf")],
                        Vec::<u8>::new(),
                    )
                }
            }),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let address = format!("http://{}", listener.local_addr().unwrap());
        runtime.spawn(async move { axum::serve(listener, app).await });
        Collector {
            address,
            spans,
            _runtime: runtime,
        }
    }

    fn spans(&self) -> Vec<Exported> {
        self.spans.lock().unwrap().clone()
    }
}

#[test]
fn a_dig_actions_spans_reach_the_collector_tied_to_its_request() {
    let collector = Collector::start();
    let clusters = [
        Virtual::start("c1"),
        Virtual::start("c2"),
        Virtual::start("c3"),
    ];
    let data = tempfile::tempdir().unwrap();
    let server = Server::start_with_env(
        data.path(),
        &["--otlp-endpoint", &collector.address],
        // Exported every 200 ms rather than every 5 s.
        &[("OTEL_BSP_SCHEDULE_DELAY", "200")],
    );
    set_up_with(&server, clusters.each_ref().map(|c| c.kubeconfig.clone()));
    expect(action(&server, DIG, "approve"), 202);
    expect(action(&server, DIG, "instantiate"), 202);

    let key = "shop/store/v1/live";
    let wanted = "a deploy span under its request, and a reconcile";
    let (deploy, request, reconcile) = eventually(wanted, Duration::from_secs(30), || {
        let spans = collector.spans();
        let deploy = spans
            .iter()
            .find(|s| s.span.name == "deploy" && s.attribute("dig").as_deref() == Some(key));
        let reconcile = spans
            .iter()
            .find(|s| s.span.name == "reconcile" && s.attribute("target").as_deref() == Some(key));
        let request = deploy.and_then(|deploy| {
            spans
                .iter()
                .find(|s| s.span.span_id == deploy.span.parent_span_id)
        });
        if let (Some(deploy), Some(request), Some(reconcile)) = (deploy, request, reconcile) {
            return Ok((deploy.clone(), request.clone(), reconcile.clone()));
        }
        Err(format!(
            "{:#?}",
            spans
                .iter()
                .filter(|s| s.span.name != "clock_time_get")
                .map(|s| (
                    &s.span.name,
                    hex(&s.span.span_id),
                    hex(&s.span.parent_span_id),
                    s.span
                        .attributes
                        .iter()
                        .map(|a| format!("{}={:?}", a.key, a.value))
                        .collect::<Vec<_>>()
                ))
                .collect::<Vec<_>>()
        ))
    });
    assert_eq!(deploy.service, "wasmco");
    assert_eq!(deploy.attribute("action").as_deref(), Some("instantiate"));
    // The deploy ran on a blocking thread, still under its request.
    assert_eq!(request.span.name, "request");
    assert!(
        request
            .attribute("route")
            .is_some_and(|route| route.ends_with("/instantiate")),
        "{request:?}"
    );
    assert_eq!(deploy.span.trace_id, request.span.trace_id);
    assert!(deploy.span.end_time_unix_nano >= deploy.span.start_time_unix_nano);
    // Each controller call is a span of its own, inside the deploy.
    let spans = collector.spans();
    for controller in ["generic-placement", "gac"] {
        assert!(
            spans.iter().any(|s| s.span.name == "controller"
                && s.attribute("controller").as_deref() == Some(controller)
                && s.span.parent_span_id == deploy.span.span_id),
            "no span of {controller} under the deploy"
        );
    }
    assert_eq!(reconcile.service, "wasmco");
    // wasmco's spans only: not a span per WASI call of the controllers.
    assert!(
        !spans.iter().any(|s| s.span.name == "clock_time_get"),
        "wasmtime's spans exported"
    );
}

#[test]
fn an_endpoint_that_is_not_http_is_refused_at_start() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_wasmco"))
        .args(["--otlp-endpoint", "collector:4317", "get", "clusters"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--otlp-endpoint"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

//! wasmco's integration tests: one binary, a module per concern.

mod api;
mod auth;
mod budgets;
mod ca_certs;
mod cli;
mod cluster_deploy;
mod clusters;
mod contract;
mod declared_intents;
mod deploy;
mod docs;
mod emco_flows;
mod gitops;
mod helm;
mod hostile;
mod hosts;
mod kube_apiserver;
mod languages;
mod layers;
mod logical_cloud;
mod metrics;
mod networks;
#[cfg(feature = "otlp")]
mod otlp;
mod pki;
mod rsync;
mod scenario;
mod security;
mod service_discovery;
mod shape;
mod store_etcd;
mod support;
mod tenancy;
mod ui;
mod vcluster;
mod vcluster_behaviour;

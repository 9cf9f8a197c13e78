//! Rendering an app's manifests for a DIG.
//!
//! A plain-manifest app: its profile's file and the DIG's
//! `overrideValues` are maps from `Kind/name` to an RFC 7386 merge patch
//! for that resource of the app, applied in that order (profile, then
//! override values).
//!
//! A Helm chart app: Helm's own engine (see [`wasmco_runtime::helm`])
//! renders it with release name = the DIG's `spec.version` and namespace =
//! its logical cloud's (else `default`); values are the chart's, then the
//! profile's values file, then the DIG's `overrideValues` as `--set`
//! strings.

use serde_json::Value;

use wasmco_core::files::Profile;
use wasmco_core::hooks::{Hook, HookDeletePolicy, HookEvent};
use wasmco_core::resource::Resource;
use wasmco_runtime::helm::{HelmError, HelmRenderer, RenderRequest, Rendered};

use crate::draft::AppDraft;
use crate::error::{OrchestratorError, input};

/// The Helm release a DIG's charts are rendered as.
pub(super) struct Release {
    pub(super) name: String,
    pub(super) namespace: String,
}

/// A plain-manifest app: its manifests with the profile's and the DIG's
/// `Kind/name` merge patches applied.
pub(super) fn render_manifests(
    name: &str,
    file: &[u8],
    profile: Option<Profile>,
    overrides: Vec<serde_json::Map<String, Value>>,
) -> Result<AppDraft, OrchestratorError> {
    let mut resources =
        wasmco_core::files::parse_manifests(file).map_err(|e| input(format!("app {name}: {e}")))?;
    let mut patches = match profile {
        None => serde_json::Map::new(),
        Some(Profile::Map(map)) => map,
        Some(Profile::HelmValues(_)) => {
            return Err(input(format!(
                "app {name} is not a Helm chart, so its profile's Helm values do not apply to it; \
                 give it a profile of Kind/name merge patches"
            )));
        }
    };
    for map in overrides {
        patches.extend(map);
    }
    for (target, patch) in patches {
        render(name, &mut resources, &target, &patch)?;
    }
    Ok(AppDraft::new(name, resources))
}

/// A chart app, rendered by Helm's engine; its hooks kept apart.
pub(super) fn render_chart(
    helm: &HelmRenderer,
    name: &str,
    chart: Vec<u8>,
    profile: Option<Profile>,
    overrides: &[serde_json::Map<String, Value>],
    release: &Release,
) -> Result<AppDraft, OrchestratorError> {
    let value_files = match profile {
        None => Vec::new(),
        Some(Profile::HelmValues(files)) => files,
        // A plain YAML profile of a chart is a values file.
        Some(Profile::Map(map)) => vec![Value::Object(map).to_string()],
    };
    let set = set_values(name, overrides)?;
    wasmco_core::specs::check_dns_label("spec.version", &release.name).map_err(|e| {
        input(format!(
            "app {name} is a Helm chart, so the release name (the DIG's {}) must be a DNS label: {}",
            e.field, e.reason
        ))
    })?;
    let chart = wasmco_core::files::chart_for_app(&chart, name)
        .map_err(|e| input(format!("app {name}: {e}")))?
        .into_owned();
    let request = RenderRequest {
        chart,
        value_files,
        set,
        release: release.name.clone(),
        namespace: release.namespace.clone(),
        kube_version: None,
    };
    let rendered = helm.render(&request).map_err(|e| match e {
        busy @ HelmError::Busy { .. } => OrchestratorError::Busy(busy.to_string()),
        e => input(format!("app {name}: Helm could not render the chart: {e}")),
    })?;
    let resources = chart_resources(name, &rendered)?;
    let hooks = chart_hooks(name, &rendered)?;
    tracing::debug!(
        app = name,
        chart = %rendered.chart.name,
        resources = resources.len(),
        hooks = hooks.len(),
        render = ?rendered.timings.render,
        instantiate = ?rendered.timings.instantiate,
        "chart rendered"
    );
    let mut app = AppDraft::new(name, resources);
    app.hooks = hooks;
    Ok(app)
}

/// The DIG's override values of a chart app, as Helm `--set` strings.
fn set_values(
    name: &str,
    overrides: &[serde_json::Map<String, Value>],
) -> Result<Vec<String>, OrchestratorError> {
    let mut set = Vec::new();
    for map in overrides {
        for (key, value) in map {
            let value = match value {
                Value::String(text) => text.clone(),
                Value::Number(_) | Value::Bool(_) | Value::Null => value.to_string(),
                _ => {
                    return Err(input(format!(
                        "app {name}: override value {key:?} must be a string, number or boolean \
                         (a chart's override values are Helm --set values)"
                    )));
                }
            };
            set.push(format!("{key}={value}"));
        }
    }
    Ok(set)
}

/// The rendered chart's resources, each key once.
fn chart_resources(name: &str, rendered: &Rendered) -> Result<Vec<Resource>, OrchestratorError> {
    let mut resources = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for manifest in &rendered.manifests {
        let parsed = wasmco_core::files::parse_manifests(manifest.content.as_bytes())
            .map_err(|e| input(format!("app {name}: {}: {}", manifest.source, e.reason)))?;
        for resource in parsed {
            if !seen.insert(resource.key.clone()) {
                return Err(input(format!(
                    "app {name}: {}: {} appears twice in the chart",
                    manifest.source, resource.key
                )));
            }
            resources.push(resource);
        }
    }
    Ok(resources)
}

/// The rendered chart's hooks that run on an event wasmco knows.
fn chart_hooks(name: &str, rendered: &Rendered) -> Result<Vec<Hook>, OrchestratorError> {
    let mut hooks = Vec::new();
    for hook in &rendered.hooks {
        let resource = wasmco_core::files::parse_manifests(hook.content.as_bytes())
            .map_err(|e| input(format!("app {name}: hook {}: {}", hook.source, e.reason)))?
            .into_iter()
            .next()
            .ok_or_else(|| input(format!("app {name}: hook {} is empty", hook.source)))?;
        let events: Vec<HookEvent> = hook
            .events
            .iter()
            .filter_map(|e| HookEvent::parse(e))
            .collect();
        if events.is_empty() {
            continue;
        }
        hooks.push(Hook {
            resource,
            events,
            weight: hook.weight,
            delete_policies: hook
                .delete_policies
                .iter()
                .filter_map(|p| HookDeletePolicy::parse(p))
                .collect(),
        });
    }
    Ok(hooks)
}

/// Applies one `Kind/name` merge patch to an app's resources.
fn render(
    app: &str,
    resources: &mut [Resource],
    target: &str,
    patch: &Value,
) -> Result<(), OrchestratorError> {
    let (kind, name) = target.split_once('/').ok_or_else(|| {
        input(format!(
            "app {app}: override key {target:?} must be Kind/name naming one of its resources"
        ))
    })?;
    let resource = resources
        .iter_mut()
        .find(|r| r.key.kind == kind && r.key.name == name)
        .ok_or_else(|| {
            input(format!(
                "app {app}: override names {target}, which the app does not have"
            ))
        })?;
    let mut manifest = resource.manifest.clone();
    json_patch::merge(&mut manifest, patch);
    let patched = Resource::from_manifest(manifest).map_err(|e| {
        input(format!(
            "app {app}: override of {target} makes it invalid: {e}"
        ))
    })?;
    if patched.key != resource.key {
        return Err(input(format!(
            "app {app}: override of {target} may not change its kind or name"
        )));
    }
    *resource = patched;
    Ok(())
}

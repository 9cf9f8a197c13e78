//! `wasmco get` and finding a DIG by name.

use serde_json::Value;

use wasmco_core::specs::CompositeAppSpec;
use wasmco_core::wire::{Answered, ControllerStatus, DeploymentStatus, Readiness};
use wasmco_core::{Kind, LabelBody};

use super::client::{ApiClient, read_answer};
use super::error::CliError;

/// The parents a person names with flags (`--project shop`).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Scope {
    /// The cluster provider of a cluster, label or kv-pair.
    #[arg(long, global = true)]
    pub provider: Option<String>,
    /// The cluster of a label or kv-pair.
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// The project.
    #[arg(long, global = true)]
    pub project: Option<String>,
    /// The composite app.
    #[arg(long, global = true)]
    pub composite_app: Option<String>,
    /// The composite app's version.
    #[arg(long, global = true)]
    pub composite_app_version: Option<String>,
    /// The app (of an app dependency).
    #[arg(long, global = true)]
    pub app: Option<String>,
    /// The composite profile (of an app profile).
    #[arg(long, global = true)]
    pub composite_profile: Option<String>,
    /// The deployment intent group (of intents).
    #[arg(long, global = true)]
    pub dig: Option<String>,
    /// The generic placement intent (of app intents).
    #[arg(long, global = true)]
    pub placement_intent: Option<String>,
}

impl Scope {
    fn value(&self, param: &str) -> (Option<&String>, &'static str) {
        match param {
            "clusterProvider" => (self.provider.as_ref(), "--provider"),
            "cluster" => (self.cluster.as_ref(), "--cluster"),
            "project" => (self.project.as_ref(), "--project"),
            "compositeApp" => (self.composite_app.as_ref(), "--composite-app"),
            "compositeAppVersion" => (
                self.composite_app_version.as_ref(),
                "--composite-app-version",
            ),
            "app" => (self.app.as_ref(), "--app"),
            "compositeProfile" => (self.composite_profile.as_ref(), "--composite-profile"),
            "deploymentIntentGroup" => (self.dig.as_ref(), "--dig"),
            _ => (self.placement_intent.as_ref(), "--placement-intent"),
        }
    }
}

/// Output formats of `get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Columns for a person.
    Table,
    /// YAML documents.
    Yaml,
    /// JSON.
    Json,
}

/// The kind a person typed: a collection segment (`clusters`), its
/// singular (`cluster`), the title (`composite-app`), or `dig`.
pub fn parse_kind(word: &str) -> Option<Kind> {
    let word = word.to_ascii_lowercase();
    if matches!(word.as_str(), "dig" | "digs") {
        return Some(Kind::DeploymentIntentGroup);
    }
    Kind::ALL
        .into_iter()
        .filter(|k| !k.is_declared())
        .find(|kind| {
            let info = kind.info();
            let title = info.title.replace(' ', "-");
            word == info.segment
                || word == info.segment.trim_end_matches('s')
                || word == title
                || word == format!("{title}s")
                || word == info.store_id
        })
}

/// The collection path of `kind` with its parents from `scope`.
pub fn collection_path(kind: Kind, scope: &Scope) -> Result<String, CliError> {
    let route = kind.collection_route();
    let mut path = Vec::new();
    let mut missing = Vec::new();
    for segment in route.trim_start_matches("/v2/").split('/') {
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some(param) => match scope.value(param) {
                (Some(value), _) => path.push(value.clone()),
                (None, flag) => {
                    missing.push(flag);
                    path.push(format!("<{param}>"));
                }
            },
            None => path.push(segment.to_owned()),
        }
    }
    if missing.is_empty() {
        Ok(path.join("/"))
    } else {
        Err(CliError::Usage(format!(
            "{}s live under other resources: give {} (or the path itself: `{}`)",
            kind.info().title,
            missing.join(", "),
            path.join("/")
        )))
    }
}

/// `wasmco get KIND [NAME]`: KIND is a kind word or a collection path.
pub fn get(
    client: &ApiClient,
    kind_or_path: &str,
    name: Option<&str>,
    scope: &Scope,
    output: Output,
) -> Result<String, CliError> {
    let (kind, collection) = if kind_or_path.contains('/') {
        let path = kind_or_path.trim_matches('/');
        let path = path.strip_prefix("v2/").unwrap_or(path).to_owned();
        if let Some(kind) = Kind::from_path(&path, false) {
            (kind, path)
        } else if let Some(kind) = Kind::from_path(&path, true) {
            let body = client.get(&format!("v2/{path}"))?;
            let collection = path.rsplit_once('/').map_or("", |(parent, _)| parent);
            return render(client, kind, collection, vec![body], output);
        } else {
            return Err(CliError::Usage(format!(
                "no wasmco resource lives at `{path}`"
            )));
        }
    } else {
        let kind = parse_kind(kind_or_path).ok_or_else(|| {
            let known: Vec<&str> = Kind::ALL
                .iter()
                .filter(|k| !k.is_declared())
                .map(|k| k.info().segment)
                .collect();
            CliError::Usage(format!(
                "unknown kind `{kind_or_path}`; kinds: {}",
                known.join(", ")
            ))
        })?;
        (kind, collection_path(kind, scope)?)
    };
    let items = match name {
        Some(name) => {
            let mut item = format!("v2/{collection}/{name}");
            if kind.is_versioned() {
                let version = scope.composite_app_version.as_deref().ok_or_else(|| {
                    CliError::Usage(
                        "a composite app is named with --composite-app-version too".into(),
                    )
                })?;
                item.push('/');
                item.push_str(version);
            }
            vec![client.get(&item)?]
        }
        None => match client.get(&format!("v2/{collection}"))? {
            Value::Array(items) => items,
            other => vec![other],
        },
    };
    render(client, kind, &collection, items, output)
}

fn render(
    client: &ApiClient,
    kind: Kind,
    collection: &str,
    items: Vec<Value>,
    output: Output,
) -> Result<String, CliError> {
    Ok(match output {
        Output::Json => {
            serde_json::to_string_pretty(&items).map_err(|e| CliError::Usage(e.to_string()))?
        }
        Output::Yaml => {
            let mut text = String::new();
            for item in &items {
                text.push_str("---\n");
                text.push_str(
                    &serde_norway::to_string(item).map_err(|e| CliError::Usage(e.to_string()))?,
                );
            }
            text
        }
        Output::Table => table(client, kind, collection, items)?,
    })
}

/// Reads each item of `collection` as the wire type its kind answers with.
fn typed<T: serde::de::DeserializeOwned>(
    collection: &str,
    items: Vec<Value>,
) -> Result<Vec<T>, CliError> {
    let path = format!("v2/{collection}");
    items
        .into_iter()
        .map(|item| Ok(read_answer("GET", &path, item)?))
        .collect()
}

/// What an operator looks for, as kubectl's tables show: for clusters and
/// DIGs, one more read per row.
fn table(
    client: &ApiClient,
    kind: Kind,
    collection: &str,
    items: Vec<Value>,
) -> Result<String, CliError> {
    if kind == Kind::ClusterLabel {
        let mut table = new_table(["LABEL"]);
        for label in typed::<LabelBody>(collection, items)? {
            table.add_row([label.cluster_label]);
        }
        return Ok(table.to_string());
    }
    let items: Vec<Answered> = typed(collection, items)?;
    match kind {
        Kind::Controller => return controllers_table(collection, items),
        Kind::Cluster => return clusters_table(client, collection, items),
        Kind::DeploymentIntentGroup => return digs_table(client, collection, items),
        _ => {}
    }
    let mut table = new_table(["NAME", "DESCRIPTION", "SPEC"]);
    for item in items {
        let spec = item.spec.to_string();
        let spec = if spec.chars().count() > 60 {
            format!("{}…", spec.chars().take(59).collect::<String>())
        } else {
            spec
        };
        table.add_row([
            item.metadata.name,
            item.metadata.description.unwrap_or_default(),
            spec,
        ]);
    }
    Ok(table.to_string())
}

fn controllers_table(collection: &str, items: Vec<Answered>) -> Result<String, CliError> {
    let mut table = new_table(["NAME", "TYPE", "PRIORITY", "SIZE", "DIGEST"]);
    for item in items {
        let path = format!("v2/{collection}");
        let status: ControllerStatus = read_answer("GET", &path, item.status.unwrap_or_default())?;
        table.add_row([
            item.metadata.name,
            status.kind,
            status.priority.to_string(),
            status.size.to_string(),
            status.digest.chars().take(19).collect(),
        ]);
    }
    Ok(table.to_string())
}

/// Clusters with their labels and health: two more reads per row.
fn clusters_table(
    client: &ApiClient,
    collection: &str,
    items: Vec<Answered>,
) -> Result<String, CliError> {
    let mut table = new_table(["NAME", "LABELS", "STATE", "SINCE", "VERSION", "LAST ERROR"]);
    for item in items {
        let name = &item.metadata.name;
        let health: DeploymentStatus = client.get_as(&format!("v2/{collection}/{name}/status"))?;
        let labels: Vec<LabelBody> = client.get_as(&format!("v2/{collection}/{name}/labels"))?;
        let labels: Vec<String> = labels.into_iter().map(|l| l.cluster_label).collect();
        table.add_row([
            item.metadata.name,
            labels.join(","),
            health.state.map(|s| s.to_string()).unwrap_or_default(),
            health.since.unwrap_or_default(),
            health.version.unwrap_or_default(),
            health.last_error.unwrap_or_default(),
        ]);
    }
    Ok(table.to_string())
}

/// DIGs with their state and readiness: one more read per row.
fn digs_table(
    client: &ApiClient,
    collection: &str,
    items: Vec<Answered>,
) -> Result<String, CliError> {
    let mut table = new_table(["NAME", "STATE", "REVISION", "READY", "AGE"]);
    for item in items {
        let name = &item.metadata.name;
        let deployment: DeploymentStatus = client.get_as(&format!(
            "v2/{collection}/{name}/status?status=ready&output=summary"
        ))?;
        let counts = deployment.ready_counts.unwrap_or_default();
        let total: u64 = counts.values().sum();
        let ready = counts.get(Readiness::Ready.as_str()).copied().unwrap_or(0);
        let state = deployment.deployment;
        table.add_row([
            item.metadata.name,
            state.deployed_status.to_string(),
            state.revision.to_string(),
            format!("{ready}/{total}"),
            state.created().map(age).unwrap_or_default(),
        ]);
    }
    Ok(table.to_string())
}

/// How long ago `time` (RFC 3339) was, as kubectl writes it: `42s`,
/// `5m`, `3h`, `2d`.
fn age(time: &str) -> String {
    let Ok(then) = humantime::parse_rfc3339(time) else {
        return String::new();
    };
    let seconds = std::time::SystemTime::now()
        .duration_since(then)
        .map_or(0, |d| d.as_secs());
    match seconds {
        0..60 => format!("{seconds}s"),
        60..3600 => format!("{}m", seconds / 60),
        3600..86400 => format!("{}h", seconds / 3600),
        _ => format!("{}d", seconds / 86400),
    }
}

/// A borderless table of `header`.
pub fn new_table<const N: usize>(header: [&str; N]) -> comfy_table::Table {
    let mut table = comfy_table::Table::new();
    table
        .load_preset(comfy_table::presets::NOTHING)
        .set_content_arrangement(comfy_table::ContentArrangement::Disabled)
        .set_header(header);
    table
}

/// The path of the DIG a person named: a path as is, else the DIG in
/// `scope`, else the only DIG of that name in any project.
pub fn find_dig(client: &ApiClient, name: &str, scope: &Scope) -> Result<String, CliError> {
    if name.contains('/') {
        let path = name.trim_matches('/');
        let path = path.strip_prefix("v2/").unwrap_or(path);
        return match Kind::from_path(path, true) {
            Some(Kind::DeploymentIntentGroup) => Ok(format!("v2/{path}")),
            _ => Err(CliError::Usage(format!(
                "`{name}` is not a deployment intent group's path"
            ))),
        };
    }
    let mut found = Vec::new();
    for project in names(client, "v2/projects", scope.project.as_deref())? {
        let apps: Vec<Answered<CompositeAppSpec>> =
            client.get_as(&format!("v2/projects/{project}/composite-apps"))?;
        for app in apps {
            let app_name = app.metadata.name;
            let version = app.spec.composite_app_version;
            if scope.composite_app.as_ref().is_some_and(|c| *c != app_name)
                || scope
                    .composite_app_version
                    .as_ref()
                    .is_some_and(|v| *v != version)
            {
                continue;
            }
            let collection = format!(
                "v2/projects/{project}/composite-apps/{app_name}/{version}/deployment-intent-groups"
            );
            if names(client, &collection, Some(name))?.next().is_some() {
                found.push(format!("{collection}/{name}"));
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => Err(CliError::Usage(format!(
            "no deployment intent group is called `{name}`; `wasmco get digs --project P \
             --composite-app CA --composite-app-version V` lists them"
        ))),
        _ => Err(CliError::Usage(format!(
            "`{name}` names more than one deployment intent group ({}); pick one with \
             --project, --composite-app and --composite-app-version, or give its path",
            found.join(", ")
        ))),
    }
}

/// The names in a collection, only `only` when given.
fn names(
    client: &ApiClient,
    collection: &str,
    only: Option<&str>,
) -> Result<impl Iterator<Item = String>, CliError> {
    let items: Vec<Answered> = client.get_as(collection)?;
    let only = only.map(str::to_owned);
    Ok(items
        .into_iter()
        .map(|item| item.metadata.name)
        .filter(move |n| only.as_ref().is_none_or(|o| o == n)))
}

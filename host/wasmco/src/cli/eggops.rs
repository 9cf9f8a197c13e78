//! `wasmco apply -f` and `wasmco delete -f` of Eggops' own YAML
//! (`eggo.isula.org/v1` Machines, Infrastructures and Clusters, and the
//! login Secrets they name), sent to the API as the provider's machines,
//! infrastructures, machine logins and requested cluster deployments, all
//! under one provider (made when missing): `--provider`, or the namespace
//! the documents name.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use wasmco_core::eggo::eggops::{self, EggopsDocument};

use super::apply::{Outcome, RunOptions, Tally, run};
use super::client::{ApiClient, Upload};
use super::error::CliError;

/// One Eggops document read from a file.
#[derive(Debug)]
pub struct Item {
    /// Where it came from: `file.yaml#2`.
    pub origin: String,
    /// The provider it goes under.
    pub provider: String,
    /// What it is.
    pub document: EggopsDocument,
    /// The document as written (a login Secret is uploaded as it is).
    pub raw: Value,
}

/// Whether `paths` hold Eggops' documents rather than emcoctl's: any of
/// their documents is of `eggo.isula.org/v1`.
pub fn is_eggops(paths: &[PathBuf]) -> bool {
    paths.iter().filter(|path| path.is_file()).any(|path| {
        std::fs::read_to_string(path).is_ok_and(|text| {
            text.lines()
                .any(|line| line.trim() == format!("apiVersion: {}", eggops::API_VERSION))
        })
    })
}

/// Reads every document of `paths`, all to go under `provider`, or else
/// under the first namespace they name (Eggops' Machines have none), or
/// else `default`.
pub fn load(paths: &[PathBuf], provider: Option<&str>) -> Result<Vec<Item>, CliError> {
    let mut read = Vec::new();
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|source| CliError::Io {
            path: path.clone(),
            source,
        })?;
        read.push((path, documents(path, &text)?));
    }
    let namespace = read
        .iter()
        .flat_map(|(_, values)| values)
        .find_map(|value| value["metadata"]["namespace"].as_str());
    let provider = provider.or(namespace).unwrap_or("default").to_owned();
    let mut items = Vec::new();
    for (path, values) in read {
        for (index, raw) in values.into_iter().enumerate() {
            let origin = format!("{}#{}", path.display(), index + 1);
            let bad = |e: wasmco_core::FieldError| {
                CliError::Usage(format!("{origin}: {}: {}", e.field, e.reason))
            };
            let Some(document) = eggops::document(&raw).map_err(bad)? else {
                return Err(CliError::Usage(format!(
                    "{origin}: {} {} is not one of Eggops' documents",
                    raw["apiVersion"].as_str().unwrap_or("(no apiVersion)"),
                    raw["kind"].as_str().unwrap_or("(no kind)")
                )));
            };
            items.push(Item {
                origin,
                provider: provider.clone(),
                document,
                raw,
            });
        }
    }
    Ok(items)
}

fn documents(path: &Path, text: &str) -> Result<Vec<Value>, CliError> {
    let mut values = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value: Value = serde::Deserialize::deserialize(document)
            .map_err(|e| CliError::Usage(format!("{}: not YAML: {e}", path.display())))?;
        if !value.is_null() {
            values.push(value);
        }
    }
    Ok(values)
}

/// Creates (or replaces) what each document describes, in order, and
/// starts each requested cluster's deploy.
pub fn apply(
    client: &ApiClient,
    items: &[Item],
    options: RunOptions,
    out: &mut dyn std::io::Write,
) -> Result<Tally, CliError> {
    run(items.iter(), label, options, out, |item| {
        apply_one(client, item)
    })
}

/// Deletes what each document describes, in reverse order; a requested
/// cluster is cleaned up first (and must be, for its machines to be
/// given back).
pub fn delete(
    client: &ApiClient,
    items: &[Item],
    options: RunOptions,
    out: &mut dyn std::io::Write,
) -> Result<Tally, CliError> {
    run(items.iter().rev(), label, options, out, |item| {
        let Some((_, item_path)) = paths(item) else {
            return Ok(Outcome::Skipped(skipped_reason(item)));
        };
        if matches!(item.document, EggopsDocument::Cluster(..)) {
            clean_up(client, &item_path, options.terminate_timeout)?;
        }
        match client.delete(&format!("v2/{item_path}")) {
            Ok(()) => Ok(Outcome::Done(format!("{:<12}{item_path}", "deleted"))),
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => {
                Ok(Outcome::Skipped("already gone".into()))
            }
            Err(error) => Err(error.into()),
        }
    })
}

fn label(item: &Item) -> String {
    let name = match &item.document {
        EggopsDocument::Machine(name, _)
        | EggopsDocument::Infrastructure(name, _)
        | EggopsDocument::Cluster(name, _)
        | EggopsDocument::Login(name, _) => name.as_str(),
        EggopsDocument::Skipped(_, name, _) => name.as_str(),
    };
    format!("{} ({})", name, item.origin)
}

/// The collection and item paths (under `/v2`) of what `item` becomes.
fn paths(item: &Item) -> Option<(String, String)> {
    let (segment, name) = match &item.document {
        EggopsDocument::Machine(name, _) => ("machines", name),
        EggopsDocument::Infrastructure(name, _) => ("infrastructures", name),
        EggopsDocument::Cluster(name, _) => ("cluster-deployments", name),
        EggopsDocument::Login(name, _) => ("machine-logins", name),
        EggopsDocument::Skipped(..) => return None,
    };
    let collection = format!("cluster-providers/{}/{segment}", item.provider);
    let item_path = format!("{collection}/{name}");
    Some((collection, item_path))
}

fn skipped_reason(item: &Item) -> String {
    match &item.document {
        EggopsDocument::Skipped(kind, _, why) => format!("{kind}: {why}"),
        _ => String::new(),
    }
}

fn apply_one(client: &ApiClient, item: &Item) -> Result<Outcome, CliError> {
    let Some((collection, item_path)) = paths(item) else {
        return Ok(Outcome::Skipped(skipped_reason(item)));
    };
    ensure_provider(client, &item.provider)?;
    let metadata = json!({"name": item.raw["metadata"]["name"]});
    let (body, uploads, multipart) = match &item.document {
        EggopsDocument::Machine(_, spec) => {
            (json!({"metadata": metadata, "spec": spec}), vec![], false)
        }
        EggopsDocument::Infrastructure(_, spec) => {
            (json!({"metadata": metadata, "spec": spec}), vec![], false)
        }
        EggopsDocument::Cluster(_, request) => (
            json!({"metadata": metadata, "spec": {"request": request}}),
            vec![],
            true,
        ),
        EggopsDocument::Login(..) => {
            let secret = Upload {
                part: "file",
                file_name: "secret.json".into(),
                bytes: item.raw.to_string().into_bytes(),
            };
            (
                json!({"metadata": metadata, "spec": {}}),
                vec![secret],
                true,
            )
        }
        EggopsDocument::Skipped(..) => return Ok(Outcome::Skipped(skipped_reason(item))),
    };
    let created = match client.create_or_replace(
        &format!("v2/{collection}"),
        &format!("v2/{item_path}"),
        &body,
        multipart,
        uploads,
    ) {
        Ok(created) => created,
        // A requested cluster whose run goes on (waiting for machines, say)
        // is not replaced under it.
        Err(error)
            if error.status() == Some(StatusCode::CONFLICT)
                && matches!(item.document, EggopsDocument::Cluster(..)) =>
        {
            return Ok(Outcome::Skipped(super::apply::api_message(&error)));
        }
        Err(error) => return Err(error.into()),
    };
    let verb = if created { "created" } else { "updated" };
    if !matches!(item.document, EggopsDocument::Cluster(..)) {
        return Ok(Outcome::Done(format!("{verb:<12}{item_path}")));
    }
    match client.post(&format!("v2/{item_path}/deploy"), &Value::Null) {
        Ok(status) => Ok(Outcome::Done(format!(
            "{verb:<12}{item_path}: {}",
            status["state"].as_str().unwrap_or("deploying")
        ))),
        // Applying the file again meets the cluster's run going on.
        Err(error) if error.status() == Some(StatusCode::CONFLICT) => Ok(Outcome::Done(format!(
            "{verb:<12}{item_path}: {}",
            super::apply::api_message(&error)
        ))),
        Err(error) => Err(error.into()),
    }
}

/// Cleans a requested cluster up (which gives its machines back) and
/// waits for the cleanup to end; one never deployed has nothing to clean.
fn clean_up(client: &ApiClient, item_path: &str, timeout: Duration) -> Result<(), CliError> {
    match client.post(&format!("v2/{item_path}/cleanup"), &Value::Null) {
        Ok(_) => {}
        Err(error)
            if matches!(
                error.status(),
                Some(StatusCode::CONFLICT | StatusCode::NOT_FOUND)
            ) =>
        {
            return Ok(());
        }
        Err(error) => return Err(error.into()),
    }
    let deadline = Instant::now() + timeout;
    loop {
        let status = client.get(&format!("v2/{item_path}/status"))?;
        match status["state"].as_str().unwrap_or_default() {
            "CleanedUp" | "Created" => return Ok(()),
            "Failed" => {
                return Err(CliError::Usage(format!(
                    "the cleanup of {item_path} failed: {}",
                    status["progress"]["error"]
                        .as_str()
                        .unwrap_or("no reason given")
                )));
            }
            _ if Instant::now() >= deadline => {
                return Err(CliError::Usage(format!(
                    "the cleanup of {item_path} did not end within {}",
                    humantime::format_duration(timeout)
                )));
            }
            _ => std::thread::sleep(Duration::from_secs(1)),
        }
    }
}

/// Makes the provider the documents go under when it is not there.
fn ensure_provider(client: &ApiClient, provider: &str) -> Result<(), CliError> {
    let body = json!({"metadata": {"name": provider}, "spec": {}});
    match client.post("v2/cluster-providers", &body) {
        Ok(_) => Ok(()),
        Err(error) if error.status() == Some(StatusCode::CONFLICT) => Ok(()),
        Err(error) => Err(error.into()),
    }
}

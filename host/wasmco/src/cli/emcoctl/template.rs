//! Go templates filled from a values file, as emcoctl fills them.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::error::DocumentError;

/// Reads a values file: a YAML mapping of names to values.
pub fn read_values(path: &Path) -> Result<gtmpl::Value, DocumentError> {
    let text = std::fs::read_to_string(path).map_err(|source| DocumentError::Read {
        path: path.to_owned(),
        source,
    })?;
    let values: Value = serde_norway::from_str(&text).map_err(|e| DocumentError::Values {
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    if !values.is_object() {
        return Err(DocumentError::Values {
            path: path.to_owned(),
            reason: "must be a mapping of names to values".into(),
        });
    }
    Ok(template_value(values))
}

/// Objects become Go-template structs, so a missing key is an error naming
/// it rather than an empty string in a resource name.
fn template_value(value: Value) -> gtmpl::Value {
    match value {
        Value::Null => gtmpl::Value::Nil,
        Value::Bool(b) => b.into(),
        Value::Number(n) => match (n.as_i64(), n.as_u64(), n.as_f64()) {
            (Some(i), _, _) => i.into(),
            (None, Some(u), _) => u.into(),
            (_, _, Some(f)) => f.into(),
            _ => gtmpl::Value::Nil,
        },
        Value::String(s) => s.into(),
        Value::Array(items) => gtmpl::Value::Array(items.into_iter().map(template_value).collect()),
        Value::Object(map) => gtmpl::Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, template_value(v)))
                .collect::<HashMap<_, _>>(),
        ),
    }
}

/// Fills a file's Go template. A top-level value the values file does not
/// set is Go's "no value" (printed `<no value>`, false in `if`), as in
/// emcoctl, and returned by name so the user is told; one missing deeper
/// (a field of a `range` item) is an error naming it.
pub fn render_template(
    path: &Path,
    text: &str,
    values: Option<&gtmpl::Value>,
) -> Result<(String, Vec<String>), DocumentError> {
    if !text.contains("{{") {
        return Ok((text.to_owned(), Vec::new()));
    }
    let fail = |reason: String| DocumentError::Template {
        path: path.to_owned(),
        reason,
    };
    let Some(values) = values else {
        return Err(fail(
            "has template placeholders ({{...}}) but no values file was given (-v values.yaml)"
                .into(),
        ));
    };
    let mut template = gtmpl::Template::default();
    template
        .parse(text)
        .map_err(|e| fail(format!("template: {e}")))?;
    let mut filled = values.clone();
    let mut unset = Vec::new();
    loop {
        match template.render(&gtmpl::Context::from(filled.clone())) {
            Ok(text) => return Ok((text, unset)),
            Err(gtmpl::error::ExecError::NoFiledFor(key, receiver))
                if receiver == filled && !unset.contains(&key) =>
            {
                if let gtmpl::Value::Object(top) = &mut filled {
                    top.insert(key.clone(), gtmpl::Value::NoValue);
                }
                unset.push(key);
            }
            Err(e) => return Err(fail(fill_error(&e))),
        }
    }
}

/// What a failed fill says, in the user's words: the key an item of the
/// values lacks and the keys it has, never the values themselves (gtmpl's
/// message prints them all, secrets included).
fn fill_error(error: &gtmpl::error::ExecError) -> String {
    let gtmpl::error::ExecError::NoFiledFor(key, receiver) = error else {
        // Whatever else it says ends before a dump of the values.
        let error = error.to_string();
        let said = error.split(" for {").next().unwrap_or(&error);
        return format!("filling the template from the values: {said}");
    };
    let have = match receiver {
        gtmpl::Value::Object(map) | gtmpl::Value::Map(map) => {
            let mut keys: Vec<&str> = map.keys().map(String::as_str).collect();
            keys.sort_unstable();
            format!(" (it has {})", keys.join(", "))
        }
        _ => String::new(),
    };
    format!("the template uses {{{{.{key}}}}}, which an item of the values file does not set{have}")
}

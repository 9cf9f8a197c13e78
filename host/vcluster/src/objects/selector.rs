//! Label selectors, as `labelSelector` query values write them.

use serde_json::{Map, Value};

use super::error::KubeError;

/// A label selector (`a=b,c!=d,e,!f,g in (x,y),h notin (z)`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    Absent(String),
}

impl Selector {
    /// Parses a `labelSelector` query value.
    pub fn parse(text: &str) -> Result<Self, KubeError> {
        let mut requirements = Vec::new();
        let mut rest = text.trim();
        while !rest.is_empty() {
            let (term, tail) = split_term(rest);
            rest = tail.trim_start_matches(',').trim();
            let term = term.trim();
            let bad = || KubeError::bad_request(format!("unable to parse requirement: {term:?}"));
            let requirement = if let Some((key, values)) = term.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some((key, values)) = term.split_once(" in ") {
                Requirement::In(key.trim().to_owned(), set(values).ok_or_else(bad)?)
            } else if let Some((key, value)) = term.split_once("!=") {
                Requirement::NotIn(key.trim().to_owned(), vec![value.trim().to_owned()])
            } else if let Some((key, value)) =
                term.split_once("==").or_else(|| term.split_once('='))
            {
                Requirement::In(key.trim().to_owned(), vec![value.trim().to_owned()])
            } else if let Some(key) = term.strip_prefix('!') {
                Requirement::Absent(key.trim().to_owned())
            } else if !term.is_empty() {
                Requirement::Exists(term.to_owned())
            } else {
                return Err(bad());
            };
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    /// Whether an object's labels satisfy every requirement.
    pub fn matches(&self, labels: &Value) -> bool {
        let empty = Map::new();
        let labels = labels.as_object().unwrap_or(&empty);
        let value = |key: &str| labels.get(key).and_then(Value::as_str);
        self.requirements.iter().all(|r| match r {
            Requirement::In(key, values) => {
                value(key).is_some_and(|v| values.iter().any(|w| w == v))
            }
            Requirement::NotIn(key, values) => {
                value(key).is_none_or(|v| !values.iter().any(|w| w == v))
            }
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::Absent(key) => !labels.contains_key(key),
        })
    }
}

/// The first term of a selector; commas inside `( )` do not split.
fn split_term(text: &str) -> (&str, &str) {
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => return (&text[..i], &text[i..]),
            _ => {}
        }
    }
    (text, "")
}

fn set(values: &str) -> Option<Vec<String>> {
    let inner = values.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(|v| v.trim().to_owned())
            .filter(|v| !v.is_empty())
            .collect(),
    )
}

//! What one controller call's edits may make the host do: how many edits,
//! how large and deep a manifest may grow, and how many bytes of manifests
//! all its edits together may produce. A JSON patch of 40 `copy`
//! operations doubles a manifest 40 times; the budget is checked after each
//! operation, so such a call fails at the limit instead of taking the host's
//! memory, and nothing of it is applied.

use serde_json::Value;

use wasmco_core::controllers;

/// Nesting past which a manifest is refused. Uploads stop at 128 (the JSON
/// and YAML parsers' limit), so nothing a user could upload is refused; an
/// edit that nests deeper is refused before anything recursive walks it.
pub const MAX_MANIFEST_DEPTH: usize = 128;

/// The limits of one call's edits (from the controller's limits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EditLimits {
    /// Edits one call may return.
    pub max_edits: usize,
    /// Bytes of manifests its edits may produce in all.
    pub output_bytes: u64,
    /// Largest manifest an edit may produce.
    pub manifest_bytes: usize,
}

impl Default for EditLimits {
    fn default() -> Self {
        EditLimits {
            max_edits: controllers::DEFAULT_MAX_EDITS as usize,
            output_bytes: controllers::DEFAULT_OUTPUT_BYTES,
            manifest_bytes: controllers::DEFAULT_MANIFEST_BYTES as usize,
        }
    }
}

/// What is left of one call's output budget.
#[derive(Debug)]
pub(super) struct Budget {
    limits: EditLimits,
    spent: u64,
}

impl Budget {
    pub(super) fn new(limits: EditLimits) -> Self {
        Budget { limits, spent: 0 }
    }

    /// Refuses a batch of more edits than the limit.
    pub(super) fn check_count(&self, edits: usize) -> Result<(), String> {
        if edits > self.limits.max_edits {
            return Err(format!(
                "{edits} edits, over the limit of {} (maxEdits)",
                self.limits.max_edits
            ));
        }
        Ok(())
    }

    /// Measures `manifest` (without recursion), refuses it when too deep or
    /// too large, and spends its size `times` over.
    pub(super) fn spend(&mut self, manifest: &Value, times: usize) -> Result<(), String> {
        let size = measure(manifest, self.limits.manifest_bytes)?;
        let cost = (size as u64).saturating_mul(times as u64);
        self.spent = self.spent.saturating_add(cost);
        if self.spent > self.limits.output_bytes {
            return Err(format!(
                "the edits produce more than {} bytes of manifests (outputBytes)",
                self.limits.output_bytes
            ));
        }
        Ok(())
    }
}

/// The approximate size of `value` as JSON text, walked without
/// recursion; an error once it nests deeper than [`MAX_MANIFEST_DEPTH`] or
/// grows past `max_bytes` (the walk stops there).
pub fn measure(value: &Value, max_bytes: usize) -> Result<usize, String> {
    let mut size = 0usize;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 1)];
    while let Some((value, depth)) = stack.pop() {
        if depth > MAX_MANIFEST_DEPTH {
            return Err(format!(
                "a manifest nests deeper than {MAX_MANIFEST_DEPTH} levels"
            ));
        }
        size += match value {
            Value::Null | Value::Bool(_) => 5,
            Value::Number(_) => 20,
            Value::String(s) => s.len() + 2,
            Value::Array(items) => {
                stack.extend(items.iter().map(|item| (item, depth + 1)));
                2 + items.len()
            }
            Value::Object(map) => {
                stack.extend(map.values().map(|item| (item, depth + 1)));
                2 + map.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        };
        if size > max_bytes {
            return Err(format!(
                "a manifest grows past {max_bytes} bytes (manifestBytes)"
            ));
        }
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> Value {
        let mut value = Value::Null;
        for _ in 0..depth {
            value = Value::Array(vec![value]);
        }
        value
    }

    #[test]
    fn depth_and_size_are_measured_without_recursion() {
        assert!(measure(&nested(MAX_MANIFEST_DEPTH - 1), 1 << 20).is_ok());
        assert!(
            measure(&nested(MAX_MANIFEST_DEPTH + 1), 1 << 20)
                .unwrap_err()
                .contains("deeper")
        );
        let big = serde_json::json!({"data": "x".repeat(1000)});
        assert!(measure(&big, 2000).unwrap() > 1000);
        assert!(measure(&big, 500).unwrap_err().contains("manifestBytes"));
        // Dropping a value this deep would itself overflow the stack; it is
        // taken apart by hand below.
        let deep = nested(100_000);
        assert!(measure(&deep, usize::MAX).is_err());
        let mut deep = deep;
        while let Value::Array(mut items) = deep {
            deep = items.pop().unwrap_or(Value::Null);
        }
    }

    #[test]
    fn a_budget_counts_every_copy() {
        let limits = EditLimits {
            max_edits: 2,
            output_bytes: 1000,
            manifest_bytes: 1000,
        };
        let mut budget = Budget::new(limits);
        assert!(budget.check_count(3).is_err());
        let manifest = serde_json::json!({"k": "x".repeat(90)});
        budget.spend(&manifest, 5).unwrap();
        let error = budget.spend(&manifest, 10).unwrap_err();
        assert!(error.contains("outputBytes"), "{error}");
    }
}

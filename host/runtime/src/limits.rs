//! What one controller call may use.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use wasmtime::ResourceLimiter;

use wasmco_core::controllers;

use crate::error::RegistrationError;

pub use wasmco_core::controllers::LimitOverrides;

/// The limits every call of a controller runs under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ControllerLimits {
    /// Wall-clock budget of one call, instantiation included.
    pub deadline_ms: u64,
    /// Cap on the controller's linear memory.
    pub memory_bytes: u64,
    /// Cap on core instances (a component is a few of them).
    pub instances: u32,
    /// Cap on tables.
    pub tables: u32,
    /// Cap on elements of one table.
    pub table_elements: u32,
    /// How much of the controller's stdout and stderr is kept.
    pub log_bytes: u32,
    /// Edits one call may return.
    pub max_edits: u32,
    /// Bytes of manifests one call's edits may produce, counted once per
    /// cluster a manifest is added to or patched on (and once per patch
    /// operation): the work and memory a call can make the host spend.
    pub output_bytes: u64,
    /// Largest manifest an edit may produce.
    pub manifest_bytes: u32,
}

impl Default for ControllerLimits {
    fn default() -> Self {
        ControllerLimits {
            deadline_ms: 2_000,
            memory_bytes: 64 << 20,
            instances: 16,
            tables: 16,
            table_elements: 20_000,
            log_bytes: 64 << 10,
            max_edits: controllers::DEFAULT_MAX_EDITS,
            output_bytes: controllers::DEFAULT_OUTPUT_BYTES,
            manifest_bytes: controllers::DEFAULT_MANIFEST_BYTES,
        }
    }
}

impl ControllerLimits {
    /// The deadline as a duration.
    pub fn deadline(&self) -> Duration {
        Duration::from_millis(self.deadline_ms)
    }

    /// These limits with each field `overrides` sets replaced: how a host
    /// sets its own defaults, up or down (zero is refused).
    pub fn replaced_by(&self, overrides: &LimitOverrides) -> Result<Self, RegistrationError> {
        self.merged(overrides, false)
    }

    /// These limits with `overrides` applied; a registration may only tighten.
    pub fn tightened_by(&self, overrides: &LimitOverrides) -> Result<Self, RegistrationError> {
        self.merged(overrides, true)
    }

    /// One pass over the fields `overrides` sets, by their names in JSON, so
    /// a new limit needs no code here.
    fn merged(
        &self,
        overrides: &LimitOverrides,
        only_tighter: bool,
    ) -> Result<Self, RegistrationError> {
        let encode = |e: serde_json::Error| RegistrationError::Limit {
            field: String::new(),
            reason: e.to_string(),
        };
        let mut limits = serde_json::to_value(self).map_err(encode)?;
        let asked = serde_json::to_value(overrides).map_err(encode)?;
        let (Some(limits_map), Some(asked)) = (limits.as_object_mut(), asked.as_object()) else {
            return Ok(self.clone());
        };
        for (field, value) in asked {
            let Some(asked) = value.as_u64() else {
                continue;
            };
            let host = limits_map.get(field).and_then(|v| v.as_u64()).unwrap_or(0);
            let refuse = |reason: String| RegistrationError::Limit {
                field: field.clone(),
                reason,
            };
            if asked == 0 {
                return Err(refuse("must be greater than zero".into()));
            }
            if only_tighter && asked > host {
                return Err(refuse(format!(
                    "{asked} exceeds the host's limit of {host}; limits may only be tightened"
                )));
            }
            limits_map.insert(field.clone(), asked.into());
        }
        serde_json::from_value(limits).map_err(encode)
    }
}

/// Enforces the memory and table caps of one call and remembers the first
/// refusal, so a trap that follows it can be reported as what it is.
pub(super) struct CallLimiter {
    memory_bytes: usize,
    /// Bytes of every memory of the call together: a component of many
    /// core modules must not get the cap once per memory.
    memory_used: usize,
    table_elements: usize,
    /// Elements of every table of the call together.
    table_elements_used: usize,
    instances: usize,
    tables: usize,
    /// The size a refused memory growth asked for.
    pub refused_memory: Option<usize>,
}

impl CallLimiter {
    pub(super) fn new(limits: &ControllerLimits) -> Self {
        CallLimiter {
            memory_bytes: usize::try_from(limits.memory_bytes).unwrap_or(usize::MAX),
            memory_used: 0,
            table_elements: limits.table_elements as usize,
            table_elements_used: 0,
            instances: limits.instances as usize,
            tables: limits.tables as usize,
            refused_memory: None,
        }
    }

    /// Bytes of linear memory the call holds now, all memories together.
    pub(super) fn memory_used(&self) -> usize {
        self.memory_used
    }
}

impl ResourceLimiter for CallLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = (self.memory_used - current.min(self.memory_used)).saturating_add(desired);
        if total > self.memory_bytes {
            self.refused_memory.get_or_insert(total);
            return Ok(false);
        }
        self.memory_used = total;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let total = (self.table_elements_used - current.min(self.table_elements_used))
            .saturating_add(desired);
        if total > self.table_elements {
            return Ok(false);
        }
        self.table_elements_used = total;
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.instances
    }

    fn tables(&self) -> usize {
        self.tables
    }

    fn memories(&self) -> usize {
        // One linear memory is all a Rust (or C) guest needs; the cap is on size.
        self.instances
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_sets_its_defaults_either_way_and_registrations_only_tighten() {
        let host = ControllerLimits::default()
            .replaced_by(&LimitOverrides {
                max_edits: Some(50_000),
                output_bytes: Some(1 << 20),
                ..LimitOverrides::default()
            })
            .unwrap();
        assert_eq!(host.max_edits, 50_000);
        assert_eq!(host.output_bytes, 1 << 20);
        let zero = LimitOverrides {
            max_edits: Some(0),
            ..LimitOverrides::default()
        };
        assert!(host.replaced_by(&zero).is_err());
        let looser = LimitOverrides {
            output_bytes: Some(2 << 20),
            ..LimitOverrides::default()
        };
        assert!(host.tightened_by(&looser).is_err());
    }

    #[test]
    fn the_memory_cap_covers_every_memory_of_a_call_together() {
        let limits = ControllerLimits {
            memory_bytes: 64 << 20,
            ..ControllerLimits::default()
        };
        let mut limiter = CallLimiter::new(&limits);
        // Three memories of 20 MiB fit; a fourth would pass the cap, though
        // it alone is under it.
        for _ in 0..3 {
            assert!(limiter.memory_growing(0, 20 << 20, None).unwrap());
        }
        assert!(!limiter.memory_growing(0, 20 << 20, None).unwrap());
        assert_eq!(limiter.refused_memory, Some(80 << 20));
        // Growing one of them counts only the growth.
        assert!(limiter.memory_growing(20 << 20, 24 << 20, None).unwrap());
        assert!(!limiter.memory_growing(24 << 20, 30 << 20, None).unwrap());
    }

    #[test]
    fn the_table_cap_covers_every_table_together() {
        let limits = ControllerLimits {
            table_elements: 1000,
            ..ControllerLimits::default()
        };
        let mut limiter = CallLimiter::new(&limits);
        assert!(limiter.table_growing(0, 600, None).unwrap());
        assert!(!limiter.table_growing(0, 600, None).unwrap());
        assert!(limiter.table_growing(0, 400, None).unwrap());
    }
}

//! The controllers that can be called, by name.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use wasmco_core::{ControllerSpec, Kind};
use wasmco_runtime::{Controller, Runtime};
use wasmco_store::db::{DbError, ResourceDb};

/// The controllers that can be called, by name.
#[derive(Clone, Default)]
pub struct ControllerRegistry {
    loaded: Arc<RwLock<HashMap<String, Arc<Controller>>>>,
}

impl ControllerRegistry {
    /// Makes `controller` the one called by its name.
    pub fn insert(&self, controller: Controller) {
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        loaded.insert(controller.name().to_owned(), Arc::new(controller));
    }

    /// Forgets a deleted controller.
    pub fn remove(&self, name: &str) {
        let mut loaded = self.loaded.write().unwrap_or_else(|p| p.into_inner());
        loaded.remove(name);
    }

    /// The controller called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<Controller>> {
        let loaded = self.loaded.read().unwrap_or_else(|p| p.into_inner());
        loaded.get(name).cloned()
    }

    /// Loads every stored controller (from the compile cache when possible).
    /// One that no longer loads is logged and skipped, not fatal: the server
    /// still starts and the controller can be uploaded again.
    pub fn load_stored(&self, db: &ResourceDb, runtime: &Runtime) -> Result<usize, DbError> {
        let mut count = 0;
        for (id, body) in db.list(Kind::Controller, &[])? {
            let name = &id.path[0];
            let spec: ControllerSpec = match wasmco_core::read_spec(&body["spec"]) {
                Ok(spec) => spec,
                Err(error) => {
                    tracing::error!(controller = %name, %error, "stored controller spec unreadable; skipped");
                    continue;
                }
            };
            let Some(wasm) = db.file(&id)? else {
                tracing::error!(controller = %name, "stored controller has no component; skipped");
                continue;
            };
            match runtime.load(name, spec.kind, &wasm, &spec.limits) {
                Ok(controller) => {
                    self.insert(controller);
                    count += 1;
                }
                Err(error) => {
                    tracing::error!(controller = %name, %error, "stored controller no longer loads; skipped")
                }
            }
        }
        Ok(count)
    }
}

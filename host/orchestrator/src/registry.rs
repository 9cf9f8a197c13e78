//! The controllers that can be called, by name.
//!
//! Each host keeps the controllers it loaded; the store is the truth. A
//! controller uploaded (or replaced) through another host sharing the
//! store is loaded here when it is first called, and a loaded one whose
//! stored component changed is loaded again: its digest says so.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use wasmco_core::{ControllerSpec, Kind};
use wasmco_runtime::{Controller, RegistrationError, Runtime};
use wasmco_store::db::{DbError, ResourceDb, ResourceId};

/// The controllers that can be called, by name.
#[derive(Clone, Default)]
pub struct ControllerRegistry {
    loaded: Arc<RwLock<HashMap<String, Arc<Controller>>>>,
    /// What loads a stored controller that is not (or no longer) loaded.
    runtime: Option<Runtime>,
}

/// Why a stored controller could not be called.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] DbError),
    /// Its stored component no longer loads.
    #[error("controller {name} no longer loads: {source}")]
    Load {
        /// The controller.
        name: String,
        /// Why.
        #[source]
        source: RegistrationError,
    },
}

impl ControllerRegistry {
    /// A registry that loads stored controllers with `runtime` when they
    /// are called and not loaded here.
    pub fn with_runtime(runtime: Runtime) -> Self {
        ControllerRegistry {
            loaded: Arc::default(),
            runtime: Some(runtime),
        }
    }

    /// The stored controller `name` as it is stored now: the one loaded
    /// here if its component is the stored one, else loaded again from
    /// the store; `None` when none is stored (or loaded, without a runtime).
    pub fn current(
        &self,
        name: &str,
        db: &ResourceDb,
    ) -> Result<Option<Arc<Controller>>, LoadError> {
        let Some(runtime) = &self.runtime else {
            return Ok(self.get(name));
        };
        let id = ResourceId::new(Kind::Controller, vec![name.to_owned()]);
        let body = match db.get(&id) {
            Ok(body) => body,
            Err(DbError::NotFound(_)) => return Ok(None),
            Err(error) => return Err(error.into()),
        };
        let stored = body["status"]["digest"].as_str().unwrap_or_default();
        if let Some(loaded) = self.get(name)
            && stored.strip_prefix("sha256:") == Some(loaded.digest())
        {
            return Ok(Some(loaded));
        }
        let spec: ControllerSpec = db.spec(&id)?;
        let Some(wasm) = db.file(&id)? else {
            return Ok(None);
        };
        let controller = runtime
            .load(name, spec.kind, &wasm, &spec.limits)
            .map_err(|source| LoadError::Load {
                name: name.to_owned(),
                source,
            })?;
        tracing::info!(controller = %name, "loaded as stored (uploaded through another host)");
        self.insert(controller);
        Ok(self.get(name))
    }

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

//! The data directory's keys: the master key that seals secrets, and the
//! admin token.

use std::path::Path;
use std::sync::Arc;

use wasmco_store::secrets::MasterKey;
use wasmco_store::{BatchOp, Expect, KvStore};

use super::error::ServeError;

/// The audit log in the data directory: one JSON line per request.
pub const AUDIT_LOG_FILE: &str = "audit.log";
/// Where, under the data directory, the package archives an Eggops
/// `Infrastructure` names by relative path are found.
pub const PACKAGE_DIR: &str = "packages";

/// The file holding the admin bearer token, made (0600) on first start.
pub const ADMIN_TOKEN_FILE: &str = "admin.token";

/// The admin bearer token, made on first start.
pub fn open_admin_token(data_dir: &Path) -> Result<String, ServeError> {
    let path = data_dir.join(ADMIN_TOKEN_FILE);
    match wasmco_store::secrets::read_or_make_hex(&path, true)? {
        Some(token) if !token.is_empty() => Ok(token),
        _ => Err(ServeError::Io(std::io::Error::other(format!(
            "{} is empty; delete it to have a new token made",
            path.display()
        )))),
    }
}

/// The file beside the store that tells a right master key from a wrong
/// one (a value sealed under the key; no secret).
const MASTER_KEY_CHECK: &str = "master-key.check";

/// The master key: `WASMCO_MASTER_KEY`, else the file named by
/// `WASMCO_MASTER_KEY_FILE`, else `DATA_DIR/master.key`, made (0600) for a
/// data directory that has sealed nothing yet. A key that did not seal
/// this data directory is refused before the store is opened.
pub fn open_master_key(data_dir: &Path) -> Result<Arc<MasterKey>, ServeError> {
    let file = std::env::var_os("WASMCO_MASTER_KEY_FILE")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| data_dir.join("master.key"));
    let check_path = data_dir.join(MASTER_KEY_CHECK);
    let check = match std::fs::read(&check_path) {
        Ok(check) => Some(check),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(ServeError::Io(e)),
    };
    let key = MasterKey::load(&file, check.is_none())?
        .ok_or_else(|| ServeError::NoMasterKey { file: file.clone() })?;
    match check {
        Some(check) => key.verify(&check)?,
        None => wasmco_store::secrets::write_private(&check_path, &key.check_value())?,
    }
    Ok(Arc::new(key))
}

/// The store's record of the master key its secrets are sealed under.
const STORE_MASTER_KEY_CHECK: &[u8] = b"meta/master-key-check";

/// Refuses a master key other than the one the store's secrets are sealed
/// under (hosts sharing a store must share the key); records it when the
/// store has none yet.
pub fn master_key_fits_store(store: &dyn KvStore, key: &MasterKey) -> Result<(), ServeError> {
    let check = key.check_value();
    let recorded = store.batch_if(
        vec![Expect::Absent(STORE_MASTER_KEY_CHECK.to_vec())],
        vec![BatchOp::Put(STORE_MASTER_KEY_CHECK.to_vec(), check.clone())],
    )?;
    if recorded {
        return Ok(());
    }
    let stored = store.get(STORE_MASTER_KEY_CHECK)?.unwrap_or_default();
    key.verify(&stored).map_err(|_| ServeError::SharedMasterKey)
}

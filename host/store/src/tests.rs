//! The behaviour every store must have, run against sled on disk.

use super::*;

#[test]
fn sled_store_behaves() {
    let dir = tempfile::tempdir().unwrap();
    crate::conformance::check_store(&SledStore::open(dir.path()).unwrap());
}

#[test]
fn sled_store_keeps_data_across_reopen() {
    let dir = tempfile::tempdir().unwrap();
    {
        let store = SledStore::open(dir.path()).unwrap();
        store.put(b"k", b"v").unwrap();
    }
    let store = SledStore::open(dir.path()).unwrap();
    assert_eq!(store.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

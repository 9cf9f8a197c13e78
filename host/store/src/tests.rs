//! The behaviour every store must have, run against sled on disk.

use super::*;

fn check_store(store: &dyn KvStore) {
    assert_eq!(store.get(b"a").unwrap(), None);
    store.put(b"a/1", b"one").unwrap();
    store.put(b"a/2", b"two").unwrap();
    store.put(b"b/1", b"other").unwrap();
    assert_eq!(store.get(b"a/1").unwrap().as_deref(), Some(&b"one"[..]));
    let keys: Vec<Vec<u8>> = store
        .scan_prefix(b"a/")
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec![b"a/1".to_vec(), b"a/2".to_vec()]);
    store
        .batch(vec![
            BatchOp::Delete(b"a/1".to_vec()),
            BatchOp::Put(b"a/3".to_vec(), b"three".to_vec()),
        ])
        .unwrap();
    assert_eq!(store.get(b"a/1").unwrap(), None);
    assert_eq!(store.scan_prefix(b"a/").unwrap().len(), 2);
    store.delete(b"a/2").unwrap();
    store.delete(b"never-there").unwrap();
    assert_eq!(
        store.scan_prefix(b"a/").unwrap(),
        vec![(b"a/3".to_vec(), b"three".to_vec())]
    );
}

#[test]
fn sled_store_behaves() {
    let dir = tempfile::tempdir().unwrap();
    check_store(&SledStore::open(dir.path()).unwrap());
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

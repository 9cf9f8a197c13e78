//! The behaviour every [`KvStore`] must have, as a suite each backend's
//! tests run (sled's here, etcd's against a real etcd in the end-to-end
//! tests).

use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use crate::{BatchOp, Change, Expect, KvStore};

/// Panics, naming the step, if `store` (empty) does not behave as a
/// [`KvStore`] must: reads its writes, scans a prefix in key order across
/// pages, applies a batch whole, deletes what is there and what is not,
/// applies a conditional batch only when its conditions hold, and reports
/// changes under a watched prefix (and only those).
pub fn check_store(store: &dyn KvStore) {
    check_conditional_batches(store);
    check_watches(store);
    check_big_values(store);
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
    // One key changed twice in a batch ends as the last change left it.
    store
        .batch(vec![
            BatchOp::Delete(b"a/3".to_vec()),
            BatchOp::Put(b"a/3".to_vec(), b"again".to_vec()),
            BatchOp::Put(b"a/4".to_vec(), b"first".to_vec()),
            BatchOp::Delete(b"a/4".to_vec()),
        ])
        .unwrap();
    assert_eq!(store.get(b"a/3").unwrap().as_deref(), Some(&b"again"[..]));
    assert_eq!(store.get(b"a/4").unwrap(), None);
    store.put(b"a/3", b"three").unwrap();
    store.delete(b"a/2").unwrap();
    store.delete(b"never-there").unwrap();
    assert_eq!(
        store.scan_prefix(b"a/").unwrap(),
        vec![(b"a/3".to_vec(), b"three".to_vec())]
    );
    // More keys than one page of a paginated backend, and keys whose
    // bytes sort past the prefix's last printable one.
    let many: Vec<BatchOp> = (0..100)
        .map(|i| BatchOp::Put(format!("m/{i:04}").into_bytes(), vec![i as u8]))
        .collect();
    store.batch(many).unwrap();
    for i in 100..1300 {
        store.put(format!("m/{i:04}").as_bytes(), &[1]).unwrap();
    }
    store.put(b"m/\xff", b"last").unwrap();
    store.put(b"m0", b"outside").unwrap();
    let scanned = store.scan_prefix(b"m/").unwrap();
    assert_eq!(
        scanned.len(),
        1301,
        "every key under the prefix, none past it"
    );
    assert!(scanned.windows(2).all(|w| w[0].0 < w[1].0), "in key order");
    assert_eq!(
        scanned.last().map(|(_, v)| v.as_slice()),
        Some(&b"last"[..])
    );
    let mut visited = 0;
    store
        .visit_prefix(b"m/00", &mut |_, _| visited += 1)
        .unwrap();
    assert_eq!(visited, 100);
}

fn check_conditional_batches(store: &dyn KvStore) {
    let put = |key: &[u8], value: &[u8]| BatchOp::Put(key.to_vec(), value.to_vec());
    let absent = |key: &[u8]| Expect::Absent(key.to_vec());
    let holding = |key: &[u8], value: &[u8]| Expect::Value(key.to_vec(), value.to_vec());
    assert!(
        store
            .batch_if(vec![absent(b"c/1")], vec![put(b"c/1", b"x")])
            .unwrap()
    );
    assert!(
        !store
            .batch_if(vec![absent(b"c/1")], vec![put(b"c/2", b"y")])
            .unwrap(),
        "a condition that fails writes nothing"
    );
    assert_eq!(store.get(b"c/2").unwrap(), None);
    assert!(
        store
            .batch_if(vec![holding(b"c/1", b"x")], vec![put(b"c/1", b"z")])
            .unwrap()
    );
    assert!(
        !store
            .batch_if(
                vec![holding(b"c/1", b"x"), absent(b"c/9")],
                vec![BatchOp::Delete(b"c/1".to_vec())]
            )
            .unwrap(),
        "a value that moved on is not the one expected"
    );
    assert_eq!(store.get(b"c/1").unwrap().as_deref(), Some(&b"z"[..]));
    store.delete(b"c/1").unwrap();
}

fn check_watches(store: &dyn KvStore) {
    let (seen, changes) = mpsc::channel();
    let seen = Mutex::new(seen);
    store
        .watch_prefix(
            b"w/",
            Arc::new(move |change| {
                let _ = seen.lock().unwrap_or_else(|p| p.into_inner()).send(change);
            }),
        )
        .unwrap();
    store.put(b"v/outside", b"1").unwrap();
    store.put(b"w/a", b"1").unwrap();
    store.batch(vec![BatchOp::Delete(b"w/a".to_vec())]).unwrap();
    let mut keys = Vec::new();
    while keys.len() < 2 {
        match changes.recv_timeout(Duration::from_secs(10)) {
            Ok(Change::Key(key)) => keys.push(key),
            Ok(Change::Missed) => {}
            Err(error) => panic!("the watch reported {keys:?}, then nothing: {error}"),
        }
    }
    assert_eq!(keys, vec![b"w/a".to_vec(), b"w/a".to_vec()]);
    store.delete(b"v/outside").unwrap();
}

/// Values of any size the API takes (tens of MiB) are kept and read back
/// whole, alone or several in one batch, in scans too; a value that looks
/// like a store's own bookkeeping is kept as written.
fn check_big_values(store: &dyn KvStore) {
    let big = |seed: u8, len: usize| -> Vec<u8> {
        (0..len)
            .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
            .collect()
    };
    let ten = big(1, 10 << 20);
    store.put(b"big/one", &ten).unwrap();
    assert!(
        store.get(b"big/one").unwrap().as_deref() == Some(&ten[..]),
        "a 10 MiB value"
    );
    let (a, b) = (big(2, 3 << 20), big(3, 700 << 10));
    store
        .batch(vec![
            BatchOp::Put(b"big/a".to_vec(), a.clone()),
            BatchOp::Put(b"big/b".to_vec(), b.clone()),
            BatchOp::Put(b"big/c".to_vec(), b"small".to_vec()),
        ])
        .unwrap();
    let scanned = store.scan_prefix(b"big/").unwrap();
    let keys: Vec<&[u8]> = scanned.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(keys, [&b"big/a"[..], b"big/b", b"big/c", b"big/one"]);
    assert!(scanned[0].1 == a && scanned[1].1 == b && scanned[3].1 == ten);
    // Replaced by a small value, then deleted.
    store.put(b"big/one", b"small now").unwrap();
    assert_eq!(
        store.get(b"big/one").unwrap().as_deref(),
        Some(&b"small now"[..])
    );
    let forged = b"\xffwasmco-chunked\0{\"id\":\"x\",\"count\":1,\"len\":1}".to_vec();
    store.put(b"big/forged", &forged).unwrap();
    assert_eq!(store.get(b"big/forged").unwrap(), Some(forged));
    store
        .batch(
            ["big/a", "big/b", "big/c", "big/one", "big/forged"]
                .iter()
                .map(|k| BatchOp::Delete(k.as_bytes().to_vec()))
                .collect(),
        )
        .unwrap();
    assert!(store.scan_prefix(b"big/").unwrap().is_empty());
}

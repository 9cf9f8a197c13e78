//! The request as records, for controllers that need no speed: clusters
//! with their provider, name, labels and key/value pairs as `&str`, and the
//! [`place!`](crate::place) and [`unplace!`](crate::unplace) edits. Heavy
//! controllers read the columns ([`Clusters`]) instead; both read the same
//! tables.
//!
//! ```ignore
//! fn place(request: PlacementRequest) -> Result<Vec<PlacementEdit>, ControllerError> {
//!     let view = wasmco_guest::view!(request);
//!     let edge: Vec<_> = view.clusters().filter(|c| c.has_label("edge")).collect();
//!     Ok(view.apps(&request.apps).map(|app| wasmco_guest::place!(app, &edge)).collect())
//! }
//! ```

use crate::clusters::Clusters;
use crate::strings::StringTable;

/// A request's strings and clusters, read as records: `view!(request)`.
#[derive(Debug, Clone, Copy)]
pub struct View<'a> {
    /// The string table.
    pub strings: StringTable<'a>,
    /// The cluster table.
    pub clusters: Clusters<'a>,
}

/// A [`View`] of a generated request (placement or action): `view!(request)`.
#[macro_export]
macro_rules! view {
    ($request:expr) => {
        $crate::records::View {
            strings: $crate::StringTable::new(&$request.strings.data, &$request.strings.ends),
            clusters: $crate::clusters!($request.clusters),
        }
    };
}

/// A label looked up once in the request's strings, for [`Cluster::has`]:
/// a label the request does not hold is on no cluster.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Label(Option<u32>);

/// One cluster of a request.
#[derive(Debug, Clone, Copy)]
pub struct Cluster<'a> {
    /// Its index, which edits name it by.
    pub index: u32,
    view: View<'a>,
}

impl<'a> View<'a> {
    /// The string with id `id` (an app's name, a label…).
    pub fn text(&self, id: u32) -> &'a str {
        self.strings.get(id)
    }

    /// The names of `apps` (the request's `apps` column).
    pub fn apps(&self, apps: &'a [u32]) -> impl Iterator<Item = &'a str> + 'a {
        let strings = self.strings;
        apps.iter().map(move |&app| strings.get(app))
    }

    /// Every cluster, in table order.
    pub fn clusters(&self) -> impl Iterator<Item = Cluster<'a>> + 'a {
        let view = *self;
        (0..self.clusters.len() as u32).map(move |index| Cluster { index, view })
    }

    /// Cluster `index`.
    pub fn cluster(&self, index: u32) -> Cluster<'a> {
        Cluster { index, view: *self }
    }

    /// `text` as a [`Label`]: look a label up once, then test each cluster
    /// with [`Cluster::has`] by number rather than by text.
    pub fn label(&self, text: &str) -> Label {
        Label(self.strings.find(text))
    }
}

impl<'a> Cluster<'a> {
    /// Its cluster provider.
    pub fn provider(&self) -> &'a str {
        self.view
            .strings
            .get(self.view.clusters.provider(self.index))
    }

    /// Its name.
    pub fn name(&self) -> &'a str {
        self.view.strings.get(self.view.clusters.name(self.index))
    }

    /// Its labels.
    pub fn labels(&self) -> impl Iterator<Item = &'a str> + 'a {
        let strings = self.view.strings;
        self.view
            .clusters
            .labels(self.index)
            .iter()
            .map(move |&label| strings.get(label))
    }

    /// Whether it carries `label` (looked up each time: in a loop over
    /// clusters, [`View::label`] once and [`Self::has`]).
    pub fn has_label(&self, label: &str) -> bool {
        self.has(self.view.label(label))
    }

    /// Whether it carries `label`.
    pub fn has(&self, label: Label) -> bool {
        label
            .0
            .is_some_and(|id| self.view.clusters.labels(self.index).contains(&id))
    }

    /// The value of its key/value pair `key`, if it has one.
    pub fn kv(&self, key: &str) -> Option<&'a str> {
        let key = self.view.strings.find(key)?;
        let strings = self.view.strings;
        self.view
            .clusters
            .kv(self.index)
            .find(|&(k, _)| k == key)
            .map(|(_, value)| strings.get(value))
    }
}

/// What names a cluster in an edit: its index, or the record.
pub trait ClusterIndex {
    /// The cluster's index in the request.
    fn cluster_index(&self) -> u32;
}

impl ClusterIndex for u32 {
    fn cluster_index(&self) -> u32 {
        *self
    }
}

impl ClusterIndex for Cluster<'_> {
    fn cluster_index(&self) -> u32 {
        self.index
    }
}

impl<T: ClusterIndex> ClusterIndex for &T {
    fn cluster_index(&self) -> u32 {
        (*self).cluster_index()
    }
}

/// The edit placing `app` on `clusters` (indices or [`Cluster`]s), in the
/// controller's own bindings: `PlacementEdit` and `PlaceApp` must be in
/// scope. `place!(app, clusters, group)` makes them one anyOf group.
#[macro_export]
macro_rules! place {
    ($app:expr, $clusters:expr) => {
        $crate::place!($app, $clusters, None)
    };
    ($app:expr, $clusters:expr, $group:expr) => {
        PlacementEdit::Place(PlaceApp {
            app: ::core::convert::Into::into($app),
            clusters: ::core::iter::IntoIterator::into_iter($clusters)
                .map(|c| $crate::records::ClusterIndex::cluster_index(&c))
                .collect(),
            group: $group,
        })
    };
}

/// The edit taking `app` off `clusters`; `PlacementEdit` and `UnplaceApp`
/// must be in scope.
#[macro_export]
macro_rules! unplace {
    ($app:expr, $clusters:expr) => {
        PlacementEdit::Unplace(UnplaceApp {
            app: ::core::convert::Into::into($app),
            clusters: ::core::iter::IntoIterator::into_iter($clusters)
                .map(|c| $crate::records::ClusterIndex::cluster_index(&c))
                .collect(),
        })
    };
}

#[cfg(test)]
mod tests {
    use alloc::string::String;
    use alloc::vec::Vec;

    use crate::testing::{FlatRequest, TestCluster};

    // The bindings' shapes, as a controller crate generates them.
    #[derive(Debug, PartialEq)]
    struct PlaceApp {
        app: String,
        clusters: Vec<u32>,
        group: Option<String>,
    }
    #[derive(Debug, PartialEq)]
    struct UnplaceApp {
        app: String,
        clusters: Vec<u32>,
    }
    #[derive(Debug, PartialEq)]
    enum PlacementEdit {
        Place(PlaceApp),
        Unplace(UnplaceApp),
    }

    #[test]
    fn clusters_read_as_records_and_become_edits() {
        let flat = FlatRequest::new(
            &[
                TestCluster {
                    provider: "p",
                    name: "a",
                    labels: &["edge", "east"],
                    kv: &[("cpu", "8")],
                },
                TestCluster {
                    provider: "p",
                    name: "b",
                    labels: &["core"],
                    kv: &[],
                },
                TestCluster {
                    provider: "q",
                    name: "c",
                    labels: &["edge"],
                    kv: &[],
                },
            ],
            &["web"],
        );
        let view = super::View {
            strings: crate::StringTable::new(&flat.data, &flat.ends),
            clusters: crate::Clusters {
                provider: &flat.provider,
                name: &flat.name,
                label_start: &flat.label_start,
                labels: &flat.labels,
                kv_start: &flat.kv_start,
                kv_key: &flat.kv_key,
                kv_value: &flat.kv_value,
            },
        };
        let a = view.cluster(0);
        assert_eq!((a.provider(), a.name()), ("p", "a"));
        assert_eq!(a.labels().collect::<Vec<_>>(), ["edge", "east"]);
        assert_eq!(a.kv("cpu"), Some("8"));
        assert_eq!(a.kv("memory"), None);
        assert!(!a.has_label("nowhere"));
        assert!(a.has(view.label("east")) && !view.cluster(1).has(view.label("east")));
        let edge: Vec<_> = view.clusters().filter(|c| c.has_label("edge")).collect();
        assert_eq!(
            crate::place!("web", &edge),
            PlacementEdit::Place(PlaceApp {
                app: "web".into(),
                clusters: alloc::vec![0, 2],
                group: None
            })
        );
        assert_eq!(
            crate::unplace!("web", [1u32]),
            PlacementEdit::Unplace(UnplaceApp {
                app: "web".into(),
                clusters: alloc::vec![1]
            })
        );
    }
}

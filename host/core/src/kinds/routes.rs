//! Where a kind lives in the URL space, derived from the table.

use super::kind::Kind;

impl Kind {
    /// Its ancestors, outermost first.
    pub fn ancestors(self) -> Vec<Kind> {
        let mut chain = Vec::new();
        let mut next = self.info().parent;
        while let Some(kind) = next {
            chain.push(kind);
            next = kind.info().parent;
        }
        chain.reverse();
        chain
    }

    /// Its path parameters: one per ancestor segment, then its own.
    pub fn own_params(self) -> Vec<&'static str> {
        if self.is_versioned() {
            vec![self.info().param, "compositeAppVersion"]
        } else {
            vec![self.info().param]
        }
    }

    /// The axum route of its collection, e.g. `/v2/cluster-providers/{clusterProvider}/clusters`.
    pub fn collection_route(self) -> String {
        let parent = match self.info().parent {
            Some(parent) => parent.item_route(),
            None => "/v2".to_owned(),
        };
        format!("{parent}/{}", self.info().segment)
    }

    /// The axum route of one item.
    pub fn item_route(self) -> String {
        let mut route = self.collection_route();
        for param in self.own_params() {
            route.push_str("/{");
            route.push_str(param);
            route.push('}');
        }
        route
    }

    /// The kind whose collection (`item == false`) or item route `path`
    /// (relative to `/v2`, e.g. `projects/p/composite-apps`) is.
    pub fn from_path(path: &str, item: bool) -> Option<Kind> {
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        Kind::ALL
            .into_iter()
            .filter(|k| !k.is_declared())
            .find(|kind| {
                let route = if item {
                    kind.item_route()
                } else {
                    kind.collection_route()
                };
                let pattern: Vec<&str> = route.trim_start_matches("/v2/").split('/').collect();
                pattern.len() == segments.len()
                    && pattern
                        .iter()
                        .zip(&segments)
                        .all(|(p, s)| !s.is_empty() && (p.starts_with('{') || p == s))
            })
    }

    /// How many path values name its parent.
    pub fn parent_arity(self) -> usize {
        self.ancestors().iter().map(|k| k.own_params().len()).sum()
    }

    /// Kinds that live directly under this one.
    pub fn children(self) -> impl Iterator<Item = Kind> {
        Kind::ALL
            .into_iter()
            .filter(move |k| k.info().parent == Some(self))
    }
}

#[cfg(test)]
mod tests {
    use super::Kind;

    #[test]
    fn routes_follow_emco() {
        assert_eq!(
            Kind::App.item_route(),
            "/v2/projects/{project}/composite-apps/{compositeApp}/{compositeAppVersion}/apps/{app}"
        );
        assert_eq!(
            Kind::ClusterLabel.collection_route(),
            "/v2/cluster-providers/{clusterProvider}/clusters/{cluster}/labels"
        );
        assert_eq!(Kind::GenericAppIntent.parent_arity(), 5);
        assert_eq!(
            Kind::from_path("projects/p/composite-apps", false),
            Some(Kind::CompositeApp)
        );
        assert_eq!(
            Kind::from_path("projects/p/composite-apps/ca/v1", true),
            Some(Kind::CompositeApp)
        );
        assert_eq!(
            Kind::from_path("cluster-providers/p/clusters/c/labels", false),
            Some(Kind::ClusterLabel)
        );
        assert_eq!(Kind::from_path("projects/p/networks", false), None);
    }
}

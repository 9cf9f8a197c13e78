//! A target by its context's key: what the store lists as deployed,
//! named again as the target it belongs to.

use wasmco_core::cloud::CONTEXT_COMPOSITE_APP;

use super::dig::DigRef;
use super::logical_cloud::LogicalCloudRef;
use super::network::{NETWORK_COMPOSITE_APP, NetworkSetRef};

/// A deployed context, by the kind of its key.
pub(crate) enum Deployed {
    Dig(DigRef),
    Cloud(LogicalCloudRef),
    Networks(NetworkSetRef),
}

impl Deployed {
    pub(crate) fn of(key: &str) -> Option<Deployed> {
        let parts: Vec<&str> = key.split('/').collect();
        match parts[..] {
            [project, composite_app, version, name] => Some(Deployed::Dig(DigRef {
                project: project.to_owned(),
                composite_app: composite_app.to_owned(),
                version: version.to_owned(),
                name: name.to_owned(),
            })),
            [project, CONTEXT_COMPOSITE_APP, name] => Some(Deployed::Cloud(LogicalCloudRef {
                project: project.to_owned(),
                name: name.to_owned(),
            })),
            [provider, NETWORK_COMPOSITE_APP, cluster] => Some(Deployed::Networks(NetworkSetRef {
                provider: provider.to_owned(),
                cluster: cluster.to_owned(),
            })),
            _ => None,
        }
    }

    /// DIGs before the clouds they run in, network intents last.
    pub(crate) fn order(&self) -> u8 {
        match self {
            Deployed::Dig(_) => 0,
            Deployed::Cloud(_) => 1,
            Deployed::Networks(_) => 2,
        }
    }
}

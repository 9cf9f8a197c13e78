//! EMCO's emcoctl documents, read as they are, and what applying or deleting
//! each one asks of the API.
//!
//! ```yaml
//! version: emco/v2
//! resourceContext:
//!   anchor: projects/{{.ProjectName}}/composite-apps
//! metadata: {name: app1}
//! spec: {compositeAppVersion: v1}
//! file: app1.tgz            # the multipart `file` part
//! ```
//!
//! Files are Go templates filled from a values file (`-v`), as emcoctl does.

mod document;
mod error;
mod load;
mod operation;
mod template;

pub use document::Document;
pub use error::DocumentError;
pub use load::{Loaded, load};
pub use operation::{ACTIONS, Action, Operation};

#[cfg(test)]
mod tests;

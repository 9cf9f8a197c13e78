//! The schemas of the bodies the API answers, derived from the wire types
//! the handlers answer with (`wasmco_core::wire`): a field added to a body
//! is in the document by construction.

use schemars::JsonSchema;
use schemars::generate::{Contract, SchemaSettings};
use serde_json::{Map, Value, json};

use wasmco_core::wire::{ContextBody, DeploymentState, DeploymentStatus, ErrorBody};

/// A response whose JSON body is a `T`.
pub(super) fn answers<T: JsonSchema>(description: &str) -> Value {
    json!({"description": description, "content": {"application/json": {"schema": reference::<T>()}}})
}

/// A reference to `T`'s schema among the components.
pub(super) fn reference<T: JsonSchema>() -> Value {
    json!({"$ref": format!("#/components/schemas/{}", T::schema_name())})
}

/// Every wire type's schema, and the schemas they refer to, by name.
pub(super) fn components() -> Map<String, Value> {
    // What the server writes, not what it would read: a field it leaves
    // out when empty is not required.
    let mut generator = SchemaSettings::openapi3()
        .with(|settings| settings.contract = Contract::Serialize)
        .into_generator();
    generator.subschema_for::<DeploymentState>();
    generator.subschema_for::<DeploymentStatus>();
    generator.subschema_for::<ContextBody>();
    generator.subschema_for::<ErrorBody>();
    generator.subschema_for::<wasmco_core::wire::GitOpsStatus>();
    // The bodies cluster deployments' actions read.
    generator.subschema_for::<wasmco_core::eggo::JoinFile>();
    generator.subschema_for::<wasmco_core::wire::NodeRemoval>();
    generator.subschema_for::<wasmco_core::wire::CleanupRequest>();
    generator.take_definitions(true)
}

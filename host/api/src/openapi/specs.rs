//! The JSON Schema of each kind's `spec`. A kind whose body has a type of
//! its own (in `wasmco_core::specs`, `wasmco_core::network` or
//! `wasmco_core::tenancy`) has its schema derived from that type (the
//! components of the document, by reference), so that what the server
//! reads and what the document says cannot part: a body the document calls
//! valid is refused only for what a schema cannot say (a name of something
//! that does not exist, a file's content, a duration's range).
//!
//! Written here by hand are only the kinds with no spec type of their own:
//! their spec is free (EMCO keeps it as given, or a declared kind's schema
//! is its controller's).

use schemars::generate::SchemaSettings;
use schemars::transform::RecursiveTransform;
use schemars::{Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use wasmco_core::Kind;
use wasmco_core::eggo::eggops::{InfrastructureSpec, MachineSpec};
use wasmco_core::network::{NetworkSpec, ProviderNetworkSpec};
pub use wasmco_core::specs::NAME_PATTERN;
use wasmco_core::specs::{
    AppIntentSpec, AppProfileSpec, CaCertClusterGroupSpec, CaCertLogicalCloudSpec, CaCertSpec,
    ClusterDeploymentSpec, ClusterReferenceSpec, CompositeAppSpec, ControllerSpec, DependencySpec,
    DigIntentSpec, DigSpec, FailoverIntentSpec, KvPairSpec, LogicalCloudSpec, QuotaSpec,
    RolloutIntentSpec, UserPermissionSpec,
};
use wasmco_core::tenancy::TenancyPolicySpec;

/// Any object: the kinds whose spec is free (or EMCO's, kept as given).
fn free() -> Value {
    json!({"type": "object"})
}

/// What the server reads: a field it fills in when left out is not
/// required, and a number its type cannot hold is refused.
fn generator() -> SchemaGenerator {
    SchemaSettings::openapi3()
        .with_transform(RecursiveTransform(bounded_by_format))
        .into_generator()
}

/// Gives an integer of a narrow format the range its Rust type holds:
/// schemars names the format (`uint32`) but states only its minimum.
fn bounded_by_format(schema: &mut Schema) {
    let maximum = match schema.get("format").and_then(Value::as_str) {
        Some("uint8") => u64::from(u8::MAX),
        Some("uint16") => u64::from(u16::MAX),
        Some("uint32") => u64::from(u32::MAX),
        _ => return,
    };
    if schema.get("maximum").is_none() {
        schema.insert("maximum".into(), maximum.into());
    }
}

/// The schema of `kind`'s spec.
pub fn spec(kind: Kind) -> Value {
    schema(kind, &mut generator())
}

/// Every spec type's schema, and the schemas they refer to, by name.
pub(super) fn components() -> Map<String, Value> {
    let mut generator = generator();
    for kind in Kind::ALL {
        schema(kind, &mut generator);
    }
    generator.take_definitions(true)
}

/// Whether `kind`'s spec has fields it cannot do without (so the document
/// must carry a spec).
pub fn spec_required(kind: Kind) -> bool {
    let mut generator = generator();
    let spec = schema(kind, &mut generator);
    let components = generator.take_definitions(true);
    let spec = spec["$ref"]
        .as_str()
        .and_then(|path| path.rsplit('/').next())
        .and_then(|name| components.get(name))
        .unwrap_or(&spec);
    spec["required"].as_array().is_some_and(|r| !r.is_empty()) || spec.get("oneOf").is_some()
}

/// `kind`'s spec schema: a reference to its type's, whose schema (and
/// those it refers to) `generator` collects; or, for a kind with no spec
/// type, the schema itself.
fn schema(kind: Kind, generator: &mut SchemaGenerator) -> Value {
    let of = |schema: Schema| schema.to_value();
    match kind {
        Kind::ClusterProvider
        | Kind::Cluster
        | Kind::Project
        | Kind::App
        | Kind::CompositeProfile
        | Kind::GenericPlacementIntent
        | Kind::ControllerIntent
        // Each declared kind's schema is its controller's.
        | Kind::Intent => free(),
        // A label's body has no spec; the table sends it elsewhere.
        Kind::ClusterLabel => free(),
        Kind::ClusterKvPair | Kind::LogicalCloudKvPair => of(generator.subschema_for::<KvPairSpec>()),
        Kind::Controller => of(generator.subschema_for::<ControllerSpec>()),
        Kind::ClusterDeployment => of(generator.subschema_for::<ClusterDeploymentSpec>()),
        Kind::Machine => of(generator.subschema_for::<MachineSpec>()),
        Kind::Infrastructure => of(generator.subschema_for::<InfrastructureSpec>()),
        // Its login is the `file` part; the spec holds nothing.
        Kind::MachineLogin => free(),
        Kind::CompositeApp => of(generator.subschema_for::<CompositeAppSpec>()),
        Kind::AppDependency => of(generator.subschema_for::<DependencySpec>()),
        Kind::AppProfile => of(generator.subschema_for::<AppProfileSpec>()),
        Kind::DeploymentIntentGroup => of(generator.subschema_for::<DigSpec>()),
        Kind::DigIntent => of(generator.subschema_for::<DigIntentSpec>()),
        Kind::FailoverIntent => of(generator.subschema_for::<FailoverIntentSpec>()),
        Kind::RolloutIntent => of(generator.subschema_for::<RolloutIntentSpec>()),
        Kind::GenericAppIntent => of(generator.subschema_for::<AppIntentSpec>()),
        Kind::LogicalCloud => of(generator.subschema_for::<LogicalCloudSpec>()),
        Kind::LogicalCloudClusterReference => of(generator.subschema_for::<ClusterReferenceSpec>()),
        Kind::LogicalCloudUserPermission => of(generator.subschema_for::<UserPermissionSpec>()),
        Kind::LogicalCloudQuota => of(generator.subschema_for::<QuotaSpec>()),
        Kind::CaCert | Kind::ProjectCaCert => of(generator.subschema_for::<CaCertSpec>()),
        Kind::CaCertClusterGroup | Kind::CaCertLcClusterGroup => {
            of(generator.subschema_for::<CaCertClusterGroupSpec>())
        }
        Kind::CaCertLogicalCloud => of(generator.subschema_for::<CaCertLogicalCloudSpec>()),
        Kind::ClusterNetwork => of(generator.subschema_for::<NetworkSpec>()),
        Kind::ClusterProviderNetwork => of(generator.subschema_for::<ProviderNetworkSpec>()),
        Kind::TenancyPolicy | Kind::ProviderTenancyPolicy => {
            of(generator.subschema_for::<TenancyPolicySpec>())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schema_both_the_wire_and_the_specs_name_is_one_schema() {
        let answered = super::super::wire::components();
        for (name, schema) in components() {
            if let Some(other) = answered.get(&name) {
                assert_eq!(
                    &schema, other,
                    "{name} differs between the wire and the specs"
                );
            }
        }
    }

    #[test]
    fn every_reference_to_a_spec_type_is_among_the_components() {
        let components = components();
        for kind in Kind::ALL {
            if let Some(path) = spec(kind)["$ref"].as_str() {
                let name = path.trim_start_matches("#/components/schemas/");
                assert!(components.contains_key(name), "{kind:?}: {path}");
            }
        }
    }

    #[test]
    fn a_spec_is_required_where_its_type_cannot_do_without_one() {
        for kind in [
            Kind::Controller,
            Kind::CompositeApp,
            Kind::DeploymentIntentGroup,
            Kind::GenericAppIntent,
            Kind::LogicalCloud,
            Kind::CaCert,
            Kind::ClusterNetwork,
        ] {
            assert!(spec_required(kind), "{kind:?}");
        }
        for kind in [
            Kind::Project,
            Kind::LogicalCloudQuota,
            Kind::TenancyPolicy,
            Kind::ClusterLabel,
        ] {
            assert!(!spec_required(kind), "{kind:?}");
        }
    }

    #[test]
    fn a_narrow_integer_is_bounded_by_its_type() {
        let controller = &components()["ControllerSpec"];
        assert_eq!(controller["properties"]["priority"]["maximum"], u32::MAX);
    }
}

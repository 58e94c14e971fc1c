//! Column descriptions. The API server describes most columns with the API documentation
//! of the field they show (`SwaggerDoc()` of the Go type); the same text is the field's
//! `description` in the OpenAPI schemas, which k8s-openapi carries for Kubernetes 1.33, so
//! [`field`] reads it from there rather than keeping a copy. Columns whose Go printer cites
//! a type that has no 1.33 schema (an old beta version such as `extensions/v1beta1`) are
//! described by the GA type of the same kind.

use k8s_openapi::schemars::JsonSchema;
use k8s_openapi::schemars::generate::SchemaGenerator;

/// The description of `T`'s field `name`, as the API documents it.
pub(super) fn field<T: JsonSchema>(name: &str) -> String {
    let mut generator = SchemaGenerator::default();
    let schema = T::json_schema(&mut generator);
    schema
        .as_value()
        .pointer(&format!("/properties/{name}/description"))
        .and_then(serde_json::Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// `metadata.name`'s documentation, the Name column's description.
pub(super) fn meta_name() -> String {
    field::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>("name")
}

/// `metadata.creationTimestamp`'s documentation, the Age column's description.
pub(super) fn meta_created() -> String {
    field::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>("creationTimestamp")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptions_come_from_the_api_documentation() {
        assert!(meta_name().starts_with("Name must be unique within a namespace."), "{}", meta_name());
        assert!(meta_created().contains("\n\nPopulated by the system."), "{}", meta_created());
        assert!(field::<k8s_openapi::api::core::v1::PodStatus>("podIP").starts_with("podIP address"));
    }
}

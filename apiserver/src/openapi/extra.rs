//! Where schemas that are not built in (CustomResourceDefinitions) plug into `/openapi/v3`.
//!
//! Kubernetes counterpart: the apiextensions-apiserver's `openapi/builder` publishing each CRD
//! version's schema to the apiserver's OpenAPI v3 service (`AddUpdateApiResource`), one document
//! per group version.
//!
//! minik keeps it to a trait: a source (the CRD registry, once it exists) lists its group
//! versions and kinds with their structural schemas; the index and the documents ask it on every
//! request, so a new CRD shows up at once. Sources are registered per process.

use std::sync::{Arc, RwLock};

use super::Served;

/// One extra kind: how it is served and its schema (an OpenAPI v3 schema object).
#[derive(Clone, Debug)]
pub struct ExtraKind {
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Whether it has a `status` subresource.
    pub status: bool,
    /// The definition's name, upstream style: `com.example.v1.Widget` (the group reversed).
    pub definition: String,
    pub schema: serde_json::Value,
}

/// A provider of extra group versions: `("example.com/v1", kinds)`.
pub trait ExtraSchemas: Send + Sync {
    fn group_versions(&self) -> Vec<(String, Vec<ExtraKind>)>;
}

fn sources() -> &'static RwLock<Vec<Arc<dyn ExtraSchemas>>> {
    static SOURCES: RwLock<Vec<Arc<dyn ExtraSchemas>>> = RwLock::new(Vec::new());
    &SOURCES
}

/// Adds a source of extra schemas to this process's OpenAPI documents.
pub fn register(source: Arc<dyn ExtraSchemas>) {
    sources()
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .push(source);
}

/// The upstream definition name of a custom kind: group `stable.example.com` → `com.example.stable`.
pub fn definition_name(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// Every extra group version's document, by its path under `/openapi/v3/`.
pub fn documents() -> Vec<(String, Served)> {
    let sources = sources()
        .read()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone();
    sources
        .iter()
        .flat_map(|source| source.group_versions())
        .map(|(api_version, kinds)| {
            let document = super::extra_document(&kinds, &api_version);
            (
                super::group_version_path(&api_version),
                Served::of(&document),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn custom_definitions_are_named_by_the_reversed_group() {
        assert_eq!(
            definition_name("stable.example.com/v1", "CronTab"),
            "com.example.stable.v1.CronTab"
        );
    }
}

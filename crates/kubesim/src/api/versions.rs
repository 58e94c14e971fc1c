//! Objects between the version they are stored in and the version a request uses: what a
//! read answers ([`Api::served`], [`Api::served_all`]), the form a write works on
//! ([`Api::working`]) and the form it stores ([`Api::to_storage`]).
//!
//! A custom resource is stored in its CRD's storage version as it was when the object was
//! last written (an object written before the storage version changed keeps the old one
//! until it is written again, which is what storage migration relies on), and a write works
//! on the request's version: the current object is converted to it, the request applied
//! there, the result converted to the storage version. Conversions go through
//! [`crate::api::conversion`]; what a webhook converts is then pruned with the target version's
//! schema (and its non-nullable nulls dropped), as the server's storage codec does
//! (`customresource_handler.go`, `schemaCoercingConverter`). With strategy `None` only the
//! `apiVersion` changes. A built-in object works in its stored form (`crate::api::convert`:
//! the two Event APIs share one store).

use std::sync::Arc;

use ctop_schema as schema;
use serde_json::Value;

use super::Api;
use crate::api::conversion::{ConversionError, Converter, TIMEOUT};
use crate::api::convert;
use crate::kinds::meta::str_at;
use crate::kinds::registry::{Conversion, CrdDefinition, ResourceType};

impl Api {
    /// `stored` as a read in `rt`'s version answers it.
    pub async fn served(&self, rt: &ResourceType, stored: &Value) -> Result<Value, ConversionError> {
        match webhook_definition(rt) {
            Some(def) if str_at(stored, "apiVersion") != rt.gv => {
                let mut out = self.convert_crd(def, stored.clone(), &rt.version).await?;
                convert::out_in_place(rt, &mut out);
                Ok(out)
            }
            // Without a webhook to call, only the apiVersion (and a built-in kind's form)
            // changes.
            _ => Ok(convert::to_served(rt, stored)),
        }
    }

    /// The objects of a list as `rt` serves them, in their order; those the CRD's webhook
    /// converts go to it in one review.
    pub async fn served_all(
        &self,
        rt: &ResourceType,
        stored: &[Arc<Value>],
    ) -> Result<Vec<Value>, ConversionError> {
        let Some(def) = webhook_definition(rt) else {
            return Ok(stored.iter().map(|o| convert::to_served(rt, o)).collect());
        };
        let objects: Vec<Value> = stored.iter().map(|o| (**o).clone()).collect();
        let caller = self.webhooks.read().clone();
        let converter =
            Converter { definition: def, service_hosts: caller.service_hosts(), timeout: TIMEOUT };
        let converted = converter.list(objects, &rt.version).await?;
        Ok(converted
            .into_iter()
            .zip(stored)
            .map(|(mut o, before)| {
                if str_at(before, "apiVersion") != rt.gv {
                    coerce(def, &rt.version, &mut o);
                }
                convert::out_in_place(rt, &mut o);
                o
            })
            .collect())
    }

    /// The form a write in `rt`'s version works on: a custom resource in that version, a
    /// built-in object as stored.
    pub(super) async fn working(&self, rt: &ResourceType, stored: &Value) -> Result<Value, ConversionError> {
        match &rt.crd {
            Some(crd) => self.convert_crd(&crd.definition, stored.clone(), &rt.version).await,
            None => Ok(stored.clone()),
        }
    }

    /// The stored form of `working`, an object a write in `rt`'s version made: a custom
    /// resource in its CRD's storage version.
    pub(super) async fn to_storage(
        &self,
        rt: &ResourceType,
        working: Value,
    ) -> Result<Value, ConversionError> {
        match &rt.crd {
            Some(crd) => {
                let def = &crd.definition;
                self.convert_crd(def, working, &def.storage_version).await
            }
            None => Ok(working),
        }
    }

    async fn convert_crd(
        &self,
        def: &CrdDefinition,
        object: Value,
        version: &str,
    ) -> Result<Value, ConversionError> {
        if str_at(&object, "apiVersion") == def.api_version(version) {
            return Ok(object);
        }
        let caller = self.webhooks.read().clone();
        let converter =
            Converter { definition: def, service_hosts: caller.service_hosts(), timeout: TIMEOUT };
        let mut converted = converter.one(object, version).await?;
        if matches!(def.conversion, Conversion::Webhook { .. }) {
            coerce(def, version, &mut converted);
        }
        Ok(converted)
    }
}

/// The CRD of `rt` when its objects convert through a webhook.
fn webhook_definition(rt: &ResourceType) -> Option<&CrdDefinition> {
    let def = &rt.crd.as_ref()?.definition;
    matches!(def.conversion, Conversion::Webhook { .. }).then_some(&**def)
}

/// What the storage codec does to a converted object: prune it with `version`'s schema and
/// drop the nulls that schema does not allow.
fn coerce(def: &CrdDefinition, version: &str, object: &mut Value) {
    if let Some(s) = def.schema(version) {
        schema::prune(object, s);
        schema::drop_nulls(object, s);
    }
}

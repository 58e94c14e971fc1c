//! Custom resources' tables (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`):
//! Name, then one column per `additionalPrinterColumns` entry of the served version (an
//! undescribed column is described by its JSONPath), or the Age column the API server
//! gives a version without printer columns. Cells come from [`crate::server::printer_columns`];
//! a `date` cell is shown as an age, `<invalid>` when it does not parse.

use serde_json::{Value, json};

use super::format::{human_duration, seconds_between};
use super::{Include, attach, name_col, shape};
use crate::kinds::registry::CrdVersion;
use crate::server::printer_columns::{column_cell, json_path};

/// The column the API server adds to a version without printer columns.
fn default_columns() -> Vec<Value> {
    vec![json!({"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp", "description": ""})]
}

fn column_json(c: &Value) -> Value {
    let path = c["jsonPath"].as_str().unwrap_or_default();
    let description = match c["description"].as_str().filter(|d| !d.is_empty()) {
        Some(d) => d.to_owned(),
        None => format!("Custom resource definition column (in JSONPath format): {path}"),
    };
    json!({
        "name": c["name"].as_str().unwrap_or_default(),
        "type": c["type"].as_str().unwrap_or_default(),
        "format": c["format"].as_str().unwrap_or_default(),
        "description": description,
        "priority": c["priority"].as_i64().unwrap_or(0),
    })
}

fn cell(c: &Value, o: &Value) -> Value {
    let path = c["jsonPath"].as_str().unwrap_or_default();
    let column_type = c["type"].as_str().unwrap_or("string");
    match json_path(o, path).as_ref().and_then(|v| column_cell(column_type, v)) {
        None => Value::Null,
        Some(Value::String(ts)) if column_type == "date" => match ts.parse::<jiff::Timestamp>() {
            Ok(t) => json!(human_duration(seconds_between(t, crate::clock::timestamp()))),
            Err(_) => json!("<invalid>"),
        },
        Some(cell) => cell,
    }
}

/// The table of `objects` of a custom resource version.
pub(super) fn table(crd: &CrdVersion, objects: &[Value], list_meta: Value, include: Include) -> Value {
    let defaults;
    let printer = if crd.printer_columns.is_empty() {
        defaults = default_columns();
        &defaults
    } else {
        &crd.printer_columns
    };
    let mut columns = vec![name_col().json()];
    columns.extend(printer.iter().map(column_json));
    let rows = objects
        .iter()
        .map(|o| {
            let mut cells =
                vec![json!(o.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default())];
            cells.extend(printer.iter().map(|c| cell(c, o)));
            let mut r = json!({"cells": cells});
            attach(&mut r, o, include);
            r
        })
        .collect();
    shape(columns, rows, list_meta)
}

#[cfg(test)]
mod tests {
    use super::super::docs;
    use super::*;

    #[test]
    fn columns_are_described_by_their_path_unless_described() {
        let c = column_json(&json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size"}));
        assert_eq!(c["description"], "Custom resource definition column (in JSONPath format): .spec.size");
        assert_eq!(c["format"], "");
        let d = column_json(
            &json!({"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "How big"}),
        );
        assert_eq!(d["description"], "How big");
        assert_eq!(docs::meta_name(), name_col().description);
    }
}

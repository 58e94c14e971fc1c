//! `Table` responses for `kubectl get` (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`)
//! and `PartialObjectMetadata`.
//!
//! Start at [`table`]: a custom resource gets its `additionalPrinterColumns` ([`crd`]), a
//! built-in kind the columns kube-apiserver's printers compute for it (one module per API
//! area: [`pod`], [`core`], [`apps`], [`batch`], [`network`], [`cluster`]), and any other
//! kind the generic server's default table convertor (Name and Created At). The server
//! always builds rows as `kubectl get -o wide` shows them: every column is sent, and
//! kubectl hides those of priority 1. Column descriptions come from the Go types' API
//! documentation, read from k8s-openapi's schemas ([`docs`]); cells are formatted by the
//! helpers in [`format`].

mod apps;
mod batch;
mod cluster;
mod core;
mod crd;
mod docs;
mod format;
mod network;
mod pod;

use std::collections::HashMap;
use std::sync::LazyLock;

use serde_json::{Value, json};

use crate::kinds::registry::ResourceType;

/// `PartialObjectMetadata` of an object, in `api_version` (`meta.k8s.io/v1` or `/v1beta1`).
pub fn partial(obj: &Value, api_version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": api_version,
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// How `includeObject` asks rows to carry their object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Include {
    /// No object.
    None,
    /// `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

/// One column of a table (`metav1.TableColumnDefinition`).
struct Column {
    name: &'static str,
    ty: &'static str,
    format: &'static str,
    description: String,
    priority: i64,
}

impl Column {
    fn json(&self) -> Value {
        json!({"name": self.name, "type": self.ty, "format": self.format, "description": self.description, "priority": self.priority})
    }
}

/// A column shown by `kubectl get`.
fn col(name: &'static str, ty: &'static str, description: impl Into<String>) -> Column {
    Column { name, ty, format: "", description: description.into(), priority: 0 }
}

/// A column shown by `kubectl get -o wide` only (priority 1).
fn wide(name: &'static str, ty: &'static str, description: impl Into<String>) -> Column {
    Column { priority: 1, ..col(name, ty, description) }
}

/// The leading Name column of every printer.
fn name_col() -> Column {
    Column { format: "name", ..col("Name", "string", docs::meta_name()) }
}

/// The Age column of every printer.
fn age_col() -> Column {
    col("Age", "string", docs::meta_created())
}

/// The Containers, Images (and Selector) wide columns of the workload printers.
fn containers_cols() -> [Column; 2] {
    [
        wide("Containers", "string", "Names of each container in the template."),
        wide("Images", "string", "Images referenced by each container in the template."),
    ]
}

/// One row: its cells and, for finished Pods, its conditions.
struct Row {
    cells: Vec<Value>,
    conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Row { cells, conditions: None }
    }
}

/// The columns and row function of one built-in kind (a `TableHandler` of
/// `pkg/printers/internalversion/printers.go`).
struct Printer {
    group: &'static str,
    kind: &'static str,
    columns: fn() -> Vec<Column>,
    row: fn(&Value) -> Row,
}

/// Every built-in printer, from the area modules.
fn printers() -> Vec<Printer> {
    [
        pod::printers(),
        core::printers(),
        apps::printers(),
        batch::printers(),
        network::printers(),
        cluster::printers(),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// A printer's column definitions as sent, and its row function.
type Compiled = (Vec<Value>, fn(&Value) -> Row);

/// The printers with their column definitions, built once (the descriptions come from
/// generated schemas).
static PRINTERS: LazyLock<HashMap<(&'static str, &'static str), Compiled>> = LazyLock::new(|| {
    printers()
        .into_iter()
        .map(|p| ((p.group, p.kind), ((p.columns)().iter().map(Column::json).collect(), p.row)))
        .collect()
});

fn attach(row: &mut Value, o: &Value, include: Include) {
    match include {
        Include::None => {}
        Include::Metadata => row["object"] = partial(o, "meta.k8s.io/v1"),
        Include::Object => row["object"] = o.clone(),
    }
}

fn shape(columns: Vec<Value>, rows: Vec<Value>, list_meta: Value) -> Value {
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": columns, "rows": rows})
}

/// The generic server's table for kinds without a printer (`defaultTableConvertor` in
/// `k8s.io/apiserver/pkg/registry/rest/table.go`): the name and the creation time in
/// RFC 3339, UTC.
fn default_table(objects: &[Value], list_meta: Value, include: Include) -> Value {
    let columns = vec![name_col().json(), col("Created At", "date", docs::meta_created()).json()];
    let rows = objects
        .iter()
        .map(|o| {
            let mut r = json!({"cells": [format::name(o), format::created_at(o)]});
            attach(&mut r, o, include);
            r
        })
        .collect();
    shape(columns, rows, list_meta)
}

/// A Table of `objects` (already in the served version).
pub fn table(rt: &ResourceType, objects: &[Value], list_meta: Value, include: Include) -> Value {
    if let Some(crd) = rt.crd.as_ref() {
        return crd::table(crd, objects, list_meta, include);
    }
    let Some((columns, row)) = PRINTERS.get(&(rt.group.as_str(), rt.kind.as_str())) else {
        return default_table(objects, list_meta, include);
    };
    let rows = objects
        .iter()
        .map(|o| {
            let Row { cells, conditions } = row(o);
            let mut r = json!({"cells": cells});
            if let Some(c) = conditions {
                r["conditions"] = c;
            }
            attach(&mut r, o, include);
            r
        })
        .collect();
    shape(columns.clone(), rows, list_meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printer_has_a_cell_per_column() {
        for p in printers() {
            let columns = (p.columns)();
            let row = (p.row)(&json!({"metadata": {"name": "x"}}));
            assert_eq!(columns.len(), row.cells.len(), "{}/{}", p.group, p.kind);
            assert_eq!(columns[0].name, if p.kind == "Event" { "Last Seen" } else { "Name" }, "{}", p.kind);
            assert!(
                columns.iter().all(|c| !c.description.is_empty()),
                "{}: a column without description",
                p.kind
            );
        }
    }
}

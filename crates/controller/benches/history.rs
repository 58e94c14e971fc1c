//! Memory of the reconcile history (dhat): the heap bytes per object of a full history
//! (the default 10 records) of the WebApp operator's reconciles, for 1,000 and 10,000
//! objects, as the controller's memory holds them (the records' compact JSON lines,
//! LZ4-compressed as one block per object). Each record is what a WebApp reconcile writes: the trigger, one read (the token
//! Secret), three children, five status fields (`ready`, `phase`, the `Ready` condition's
//! status, reason and message), no event.
//! Printed as a Markdown table. The whole operator with the history on and off, side by
//! side, is `ctop-bench --impls ctop,ctop-history-off` (RSS per CR).
//!
//! `cargo bench -p ctop-controller --bench history`

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::collections::HashMap;

use ctop_controller::history::{
    Child, ChildAction, DEFAULT_KEPT, Ended, FieldChange, Read, ReadCall, Reconcile, Trigger,
};
use serde_json::json;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn heap() -> usize {
    dhat::HeapStats::get().curr_bytes
}

/// The record of reconcile `i` of the WebApp `name`.
fn record(name: &str, i: usize) -> Reconcile {
    let child = |kind: &str, suffix: &str| Child {
        action: if i == 0 { ChildAction::Created } else { ChildAction::Configured },
        kind: kind.to_owned(),
        namespace: Some("default".into()),
        name: format!("{name}{suffix}"),
    };
    // How a reconcile that turns Ready True notes it: the condition's fields that changed.
    let change = |path: &str, before: &str, after: &str| FieldChange {
        path: path.into(),
        before: Some(json!(before)),
        after: Some(json!(after)),
    };
    Reconcile {
        started: "2026-11-29T12:00:00.123Z".into(),
        took_ms: 2.5,
        triggers: vec![Trigger::Child {
            kind: "apps/v1/Deployment".into(),
            namespace: Some("default".into()),
            name: name.to_owned(),
            deleted: false,
        }],
        more_triggers: 0,
        generation: Some(i64::try_from(i).unwrap()),
        resource_version: Some(format!("{}", 100_000 + i)),
        reads: vec![Read {
            call: ReadCall::Get,
            kind: "v1/Secret".into(),
            namespace: Some("default".into()),
            name: Some(format!("{name}-token")),
            resource_version: Some("4711".into()),
            count: None,
        }],
        more_reads: 0,
        children: vec![
            child("v1/Secret", "-token"),
            child("apps/v1/Deployment", ""),
            child("v1/Service", ""),
        ],
        more_children: 0,
        status: vec![
            FieldChange { path: "ready".into(), before: Some(json!(false)), after: Some(json!(true)) },
            FieldChange {
                path: "phase".into(),
                before: Some(json!("Pending")),
                after: Some(json!("Running")),
            },
            change("conditions[Ready].status", "False", "True"),
            change("conditions[Ready].reason", "ChildInProgress", "ChildrenCurrent"),
            change(
                "conditions[Ready].message",
                &format!("Deployment {name}: 1 of 2 replicas available"),
                "all 3 children are current",
            ),
        ],
        events: Vec::new(),
        ended: Ended::Succeeded { next_in_seconds: Some(300.0) },
    }
}

/// One object's `records` as the controller keeps them (`history::Records`, private): their
/// compact JSON lines, LZ4-compressed as one block.
fn kept(records: impl Iterator<Item = Reconcile>) -> Box<[u8]> {
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(&r).unwrap());
        text.push('\n');
    }
    lz4_flex::compress_prepend_size(text.as_bytes()).into_boxed_slice()
}

/// Bytes per object of `objects` full histories of `kept` records, kept as the controller
/// keeps them.
fn per_object(objects: usize, keep: usize) -> f64 {
    let before = heap();
    let mut all: HashMap<String, Box<[u8]>> = HashMap::new();
    for o in 0..objects {
        let name = format!("webapp-{o:05}");
        let records = if keep == 0 { Box::default() } else { kept((0..keep).map(|i| record(&name, i))) };
        all.insert(format!("default/{name}"), records);
    }
    let keys: usize = all.keys().map(String::capacity).sum();
    let bytes = heap() - before - keys;
    std::hint::black_box(&all);
    bytes as f64 / objects as f64
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    println!("| objects | records kept | history bytes per object | per record | all histories (MiB) |");
    println!("|---:|---:|---:|---:|---:|");
    for objects in [1_000, 10_000] {
        // The map's own table is the memory's, not the history's: weighed apart and taken off.
        let table = per_object(objects, 0);
        let bytes = per_object(objects, DEFAULT_KEPT) - table;
        let per_record = bytes / DEFAULT_KEPT as f64;
        let mib = bytes * objects as f64 / (1024.0 * 1024.0);
        println!("| {objects} | {DEFAULT_KEPT} | {bytes:.0} | {per_record:.0} | {mib:.1} |");
    }
}

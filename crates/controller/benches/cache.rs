//! Memory of the controller's caches (dhat): bytes held per cached Deployment in kube's
//! reflector store as `DynamicObject` (a `serde_json::Value` tree; what ctop's caches held
//! before) and in ctop's [`Store`] as [`Object`] (indexed metadata plus the JSON text of the
//! rest), against the object's JSON size with managedFields stripped; and the cost of
//! handing one object to the script as JSON text. Printed as Markdown tables.
//!
//! `cargo bench -p ctop-controller --bench cache`

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use std::time::Instant;

use ctop_controller::{Object, Store};
use kube::api::{ApiResource, DynamicObject};
use kube::runtime::reflector::store::Writer;
use kube::runtime::watcher;
use serde::de::DeserializeOwned;

#[path = "../../../bench/fixtures/deployment.rs"]
mod fixture;
use fixture::{deployment, strip_managed_fields};

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

fn heap() -> usize {
    dhat::HeapStats::get().curr_bytes
}

fn ar() -> ApiResource {
    ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&())
}

/// Fill a kube-runtime reflector store with `texts` read as `K` (as the watch reads them):
/// the bytes it holds per object, and the store.
fn fill_reflector<K>(texts: &[String]) -> (f64, Writer<K>)
where
    K: kube::Resource<DynamicType = ApiResource> + DeserializeOwned + Clone,
{
    let before = heap();
    let mut writer: Writer<K> = Writer::new(ar());
    writer.apply_watcher_event(&watcher::Event::Init);
    for t in texts {
        let o: K = serde_json::from_str(t).unwrap();
        writer.apply_watcher_event(&watcher::Event::InitApply(o));
    }
    writer.apply_watcher_event(&watcher::Event::InitDone);
    assert_eq!(writer.as_reader().state().len(), texts.len());
    ((heap() - before) as f64 / texts.len() as f64, writer)
}

/// Fill ctop's store with `texts` read as [`Object`]s: the bytes it holds per object, and
/// the store.
fn fill_store(texts: &[String]) -> (f64, Store) {
    let before = heap();
    let store = Store::default();
    store.apply(&watcher::Event::Init);
    for t in texts {
        let o: Object = serde_json::from_str(t).unwrap();
        store.apply(&watcher::Event::InitApply(o));
    }
    store.apply(&watcher::Event::InitDone);
    assert_eq!(store.len(), texts.len());
    ((heap() - before) as f64 / texts.len() as f64, store)
}

fn main() {
    let _profiler = dhat::Profiler::builder().testing().build();
    println!("## The controller's cache: bytes held per cached Deployment\n");
    println!("| cached as | objects | bytes/object | JSON bytes (managedFields stripped) | ratio |");
    println!("|---|---|---|---|---|");
    for n in [1_000, 10_000] {
        // What the watch receives (with managedFields), and its size without them.
        let texts: Vec<String> = (0..n).map(|i| deployment(i).to_string()).collect();
        let json = (0..n).map(|i| strip_managed_fields(deployment(i)).to_string().len()).sum::<usize>()
            as f64
            / n as f64;
        let (dynamic, w) = fill_reflector::<DynamicObject>(&texts);
        drop(w);
        println!(
            "| DynamicObject in kube's reflector (before) | {n} | {dynamic:.0} | {json:.0} | {:.2}× |",
            dynamic / json
        );
        let (object, s) = fill_store(&texts);
        println!("| Object in ctop's Store | {n} | {object:.0} | {json:.0} | {:.2}× |", object / json);
        drop(s);
    }

    println!("\n## One cached object to the script's JSON text\n");
    println!("| from | µs per object (under dhat) | bytes allocated per object |");
    println!("|---|---|---|");
    let text = deployment(7).to_string();
    let dynamic: DynamicObject = serde_json::from_str(&text).unwrap();
    let object: Object = serde_json::from_str(&text).unwrap();
    let rounds = 20_000;
    let time = |f: &dyn Fn() -> String| {
        let total = dhat::HeapStats::get().total_bytes;
        let t = Instant::now();
        for _ in 0..rounds {
            std::hint::black_box(f());
        }
        let us = t.elapsed().as_secs_f64() * 1e6 / f64::from(rounds);
        (us, (dhat::HeapStats::get().total_bytes - total) as f64 / f64::from(rounds))
    };
    let (us, bytes) = time(&|| serde_json::to_string(&dynamic).unwrap());
    println!("| DynamicObject (serde_json::to_string) | {us:.2} | {bytes:.0} |");
    let (us, bytes) = time(&|| object.to_json_as("apps/v1", "Deployment"));
    println!("| Object (to_json_as) | {us:.2} | {bytes:.0} |");
}

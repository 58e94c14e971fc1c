//! `seed: FILE`: a test's cluster filled with what a recording (`ctop run --record FILE`)
//! saw, so that a test starts where the recorded cluster was. Start with [`seed`]; the
//! pure parts are [`collect`] (the last version of every object, in apply order) and
//! [`strip`] (what an apply must not carry).
//!
//! What is seeded: every call's object and every object in a `getObserved` or
//! `listObserved` answer, each in the last version the recording holds (by call order, then
//! tape order within a call), keyed by apiVersion, kind, namespace and name. The server's
//! bookkeeping is stripped ([`SERVER_SET`]); `status` is written through the status
//! subresource when the kind has one, after the apply, so a recorded `phase: Running`
//! arrives with the object.
//!
//! Owner references are **remapped**, not dropped: a child recorded with an owner reference
//! to its primary's old uid would dangle (the garbage collector deletes such objects, and
//! ctop's applier refuses to take over an object another uid controls), so every object is
//! created after the objects it references, and each reference to a seeded object gets that
//! object's new uid. The seeded world then is the recorded one before the operator runs:
//! deleting a primary collects its children, and the `controller-owner` oracle holds
//! whether or not the operator's next reconcile succeeds. A reference to an object the
//! recording never saw is dropped (its owner is not in the test's cluster).
//!
//! The order: Namespaces and CustomResourceDefinitions, then what the operator only read,
//! then its primaries, then their children (an owner always before what it owns). A
//! namespace no seeded object creates is created bare. A kind the cluster does not serve
//! (no CRD) fails the step before anything is written. An object the recording saw being
//! deleted is deleted again once seeded (its finalizers hold it, as they did).
//! Everything is written by the test's field manager (`ctop-test`), as `apply:` writes.
//!
//! [`World::act`] stops the operator for the seed and starts it again after, as `ctop run`
//! would start on the recorded cluster: it never sees the cluster half written (a primary
//! without its children would get new ones: a new random token, for instance).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use ctop_recording::{HandlerKind, Recording, TapeEntry};
use serde_json::{Value, json};

use crate::format::ObjectRef;
use crate::state::{describe, identity};
use crate::world::World;
use ctop_core::group_of;

/// The metadata the API server sets, never applied: `ownerReferences` are remapped and
/// `deletionTimestamp` becomes a deletion (see the module docs).
pub const SERVER_SET: [&str; 9] = [
    "uid",
    "resourceVersion",
    "managedFields",
    "creationTimestamp",
    "generation",
    "selfLink",
    "ownerReferences",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Why a seed failed.
#[derive(Debug, thiserror::Error)]
pub enum SeedError {
    /// The recording could not be read.
    #[error("cannot seed from the recording")]
    Read(#[source] ctop_recording::ReadError),
    /// Reading it stopped (its task panicked).
    #[error("reading the recording stopped")]
    Stopped(#[source] tokio::task::JoinError),
    /// A call's object or a `getObserved` answer is not JSON.
    #[error("call {seq} of the recording holds {what} that is not JSON")]
    NotJson {
        /// The call.
        seq: u64,
        /// What: its object, or the answer to a read.
        what: String,
        /// The parser's error.
        #[source]
        source: serde_json::Error,
    },
    /// Objects of kinds the test's cluster does not serve.
    #[error(
        "the recording holds objects of kinds the test's cluster does not serve: {}; apply their CustomResourceDefinitions in a step before the seed",
        kinds.join(", ")
    )]
    UnknownKinds {
        /// `apiVersion kind (N objects)`, one a kind.
        kinds: Vec<String>,
    },
    /// The API server refused a write.
    #[error("seeding {object}: {message}")]
    Write {
        /// The object, `Kind namespace/name`.
        object: String,
        /// The API server's message.
        message: String,
    },
}

/// Where an object comes in a seed's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// Namespaces and CustomResourceDefinitions: what the others need.
    Foundation,
    /// What the operator read that is neither its primary nor a child.
    Read,
    /// The object of a `reconcile` or `finalize` call.
    Primary,
    /// An object with an owner reference to another seeded object, or an ApplySet
    /// `part-of` label.
    Child,
}

/// One object to seed, as the recording last saw it.
#[derive(Clone, Debug, PartialEq)]
pub struct Seed {
    /// What is applied: the object without [`SERVER_SET`] metadata and without `status`.
    pub object: Value,
    /// Its recorded status (absent or empty: `None`).
    pub status: Option<Value>,
    /// Its recorded uid: references to it are remapped to its new one.
    pub uid: Option<String>,
    /// Its recorded owner references.
    pub owners: Vec<Value>,
    /// It was being deleted: it is deleted again once seeded.
    pub deleting: bool,
    /// Where it comes in the order.
    pub role: Role,
}

/// apiVersion, kind, namespace, name.
type Key = (String, String, String, String);

/// Seed `world` from the recording at `path` (the operator keeps running: [`World::act`]
/// stops it first).
pub async fn seed(world: &World, path: &Path) -> Result<(), SeedError> {
    let path = path.to_owned();
    let recording = tokio::task::spawn_blocking(move || ctop_recording::read(&path))
        .await
        .map_err(SeedError::Stopped)?
        .map_err(SeedError::Read)?;
    write(world, collect(&recording)?).await
}

/// The last version of every object `recording` saw, stripped, in the order to apply them.
pub fn collect(recording: &Recording) -> Result<Vec<Seed>, SeedError> {
    let mut last: BTreeMap<Key, Value> = BTreeMap::new();
    let mut primaries: HashSet<Key> = HashSet::new();
    for call in &recording.calls {
        let parse = |what: String, text: &str| {
            serde_json::from_str::<Value>(text).map_err(|source| SeedError::NotJson {
                seq: call.seq,
                what,
                source,
            })
        };
        if let Some(text) = &call.object {
            let key = note(&mut last, parse("its object".into(), text)?, None);
            // A mapper's object is a watched one, not a primary.
            if let Some(key) = key
                && matches!(call.handler, HandlerKind::Reconcile | HandlerKind::Finalize)
            {
                primaries.insert(key);
            }
        }
        for entry in &call.tape {
            match entry {
                TapeEntry::Get { kind, answer: Some(Some(text)), .. } => {
                    let what = format!("the answer to `{}`", entry.request());
                    note(&mut last, parse(what, text)?, Some(kind));
                }
                // An answer that is not a JSON array (kept as text, FORMAT.md) holds no objects.
                TapeEntry::List { kind, answer: Some(text) } => {
                    if let Ok(Value::Array(items)) = serde_json::from_str(text) {
                        for item in items {
                            note(&mut last, item, Some(kind));
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let uids: HashSet<String> =
        last.values().filter_map(|o| o["metadata"]["uid"].as_str().map(str::to_owned)).collect();
    let mut seeds: Vec<Seed> = last
        .into_iter()
        .map(|(key, o)| {
            let role = role_of(&o, primaries.contains(&key), &uids);
            strip(o, role)
        })
        .collect();
    // Stable: by key within a role.
    seeds.sort_by_key(|s| s.role);
    Ok(seeds)
}

/// Keep `o` as the last version of its object; its key, unless it names no object. A read's
/// answer may lack `apiVersion` and `kind`: `tape_kind` (`apiVersion/kind`) gives them.
fn note(last: &mut BTreeMap<Key, Value>, mut o: Value, tape_kind: Option<&str>) -> Option<Key> {
    let m = o.as_object_mut()?;
    if let Some((api_version, kind)) = tape_kind.and_then(|k| k.rsplit_once('/')) {
        m.entry("apiVersion").or_insert_with(|| api_version.into());
        m.entry("kind").or_insert_with(|| kind.into());
    }
    let (v, k, ns, name) = identity(&o);
    if v.is_empty() || k.is_empty() || name.is_empty() {
        return None;
    }
    let key = (v.to_owned(), k.to_owned(), ns.to_owned(), name.to_owned());
    last.insert(key.clone(), o);
    Some(key)
}

fn role_of(o: &Value, primary: bool, uids: &HashSet<String>) -> Role {
    let (api_version, kind, _, _) = identity(o);
    let owned = o["metadata"]["ownerReferences"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["uid"].as_str().is_some_and(|u| uids.contains(u)));
    if (api_version == "v1" && kind == "Namespace")
        || (group_of(api_version) == "apiextensions.k8s.io" && kind == "CustomResourceDefinition")
    {
        Role::Foundation
    } else if primary {
        Role::Primary
    } else if owned || !o["metadata"]["labels"][ctop_applier::applyset::PART_OF_LABEL].is_null() {
        Role::Child
    } else {
        Role::Read
    }
}

/// `o` as a seed: [`SERVER_SET`] metadata and `status` taken off (kept aside), and a
/// Service's allocated cluster IPs (the test's cluster allocates its own; a headless
/// Service keeps `None`).
pub fn strip(mut o: Value, role: Role) -> Seed {
    let mut seed =
        Seed { object: Value::Null, status: None, uid: None, owners: Vec::new(), deleting: false, role };
    if let Some(m) = o.as_object_mut() {
        seed.status =
            m.remove("status").filter(|s| !s.is_null() && s.as_object().is_none_or(|s| !s.is_empty()));
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut) {
            seed.uid = meta.get("uid").and_then(Value::as_str).map(str::to_owned);
            seed.owners = meta.get("ownerReferences").and_then(Value::as_array).cloned().unwrap_or_default();
            seed.deleting = meta.get("deletionTimestamp").is_some_and(|t| !t.is_null());
            for key in SERVER_SET {
                meta.remove(key);
            }
        }
    }
    let (api_version, kind, _, _) = identity(&o);
    if (api_version, kind) == ("v1", "Service")
        && let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut)
        && spec.get("clusterIP").and_then(Value::as_str) != Some("None")
    {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    seed.object = o;
    seed
}

/// Write `seeds` (in [`collect`]'s order) into `world`.
async fn write(world: &World, seeds: Vec<Seed>) -> Result<(), SeedError> {
    let mut seeds = without_existing_crds(world, seeds).await?;
    check_kinds(world, &seeds).await?;
    create_namespaces(world, &seeds).await?;
    let recorded: HashSet<String> = seeds.iter().filter_map(|s| s.uid.clone()).collect();
    let mut uids: HashMap<String, String> = HashMap::new();
    let mut deleting = Vec::new();
    let mut stuck = false;
    while !seeds.is_empty() {
        let before = seeds.len();
        let mut waiting = Vec::new();
        for s in seeds {
            // An owner not written yet (a child's child's owner comes in the same role):
            // wait for it, to reference its new uid. Owners that reference each other
            // (`stuck`) are written with the references that can be made.
            let waits = s
                .owners
                .iter()
                .filter_map(|r| r["uid"].as_str())
                .any(|u| recorded.contains(u) && !uids.contains_key(u) && s.uid.as_deref() != Some(u));
            if waits && !stuck {
                waiting.push(s);
                continue;
            }
            let new = write_one(world, &s, &uids).await?;
            if let (Some(old), Some(new)) = (s.uid.clone(), new) {
                uids.insert(old, new);
            }
            if s.deleting {
                deleting.push(s.object);
            }
        }
        stuck = waiting.len() == before;
        seeds = waiting;
    }
    for o in deleting {
        let r = object_ref(&o)?;
        world.delete(&r).await.map_err(|message| SeedError::Write { object: describe(&o), message })?;
    }
    Ok(())
}

fn object_ref(o: &Value) -> Result<ObjectRef, SeedError> {
    ObjectRef::of(o).map_err(|message| SeedError::Write { object: describe(o), message })
}

/// Apply one seed (status through the subresource when its kind has one); its new uid.
async fn write_one(
    world: &World,
    s: &Seed,
    uids: &HashMap<String, String>,
) -> Result<Option<String>, SeedError> {
    let fail = |message: String| SeedError::Write { object: describe(&s.object), message };
    let r = object_ref(&s.object)?;
    let kind = world.kind(r.api_version.as_deref(), &r.kind).await.map_err(fail)?;
    let mut body = s.object.clone();
    let owners: Vec<Value> = s
        .owners
        .iter()
        .filter_map(|o| {
            let new = uids.get(o["uid"].as_str()?)?;
            let mut o = o.clone();
            o.as_object_mut()?.insert("uid".into(), Value::from(new.as_str()));
            Some(o)
        })
        .collect();
    if let Some(m) = body.as_object_mut() {
        if let Some(meta) = m.get_mut("metadata").and_then(Value::as_object_mut)
            && !owners.is_empty()
        {
            meta.insert("ownerReferences".into(), Value::Array(owners));
        }
        // Without a status subresource, status is an ordinary field of the object.
        if let (false, Some(status)) = (kind.status, &s.status) {
            m.insert("status".into(), status.clone());
        }
    }
    world.apply(&body).await.map_err(fail)?;
    if let (true, Some(status)) = (kind.status, &s.status) {
        world
            .patch(&r, &json!({ "status": status }), true)
            .await
            .map_err(|m| fail(format!("writing its status: {m}")))?;
    }
    let live = world.get(&r).await.map_err(fail)?;
    Ok(live.and_then(|o| o["metadata"]["uid"].as_str().map(str::to_owned)))
}

/// `seeds` without the CustomResourceDefinitions the cluster has already: the script's own
/// (generated from the script under test) or one an earlier step applied win over a
/// recorded copy.
async fn without_existing_crds(world: &World, seeds: Vec<Seed>) -> Result<Vec<Seed>, SeedError> {
    let mut kept = Vec::with_capacity(seeds.len());
    for s in seeds {
        if s.role == Role::Foundation && identity(&s.object).1 == "CustomResourceDefinition" {
            let fail = |message| SeedError::Write { object: describe(&s.object), message };
            if world.get(&object_ref(&s.object)?).await.map_err(fail)?.is_some() {
                continue;
            }
        }
        kept.push(s);
    }
    Ok(kept)
}

/// Fails when an object's kind is neither served nor defined by a seeded CRD.
async fn check_kinds(world: &World, seeds: &[Seed]) -> Result<(), SeedError> {
    let mut counts: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in seeds {
        let (api_version, kind, _, _) = identity(&s.object);
        *counts.entry((api_version, kind)).or_default() += 1;
    }
    let mut unknown = Vec::new();
    for ((api_version, kind), n) in counts {
        let defined = seeds.iter().any(|s| defines(&s.object, api_version, kind));
        if !defined && world.kind(Some(api_version), kind).await.is_err() {
            unknown.push(format!("{api_version} {kind} ({n} object{})", if n == 1 { "" } else { "s" }));
        }
    }
    if unknown.is_empty() { Ok(()) } else { Err(SeedError::UnknownKinds { kinds: unknown }) }
}

/// Whether `crd` is a CustomResourceDefinition of `api_version` `kind`.
fn defines(crd: &Value, api_version: &str, kind: &str) -> bool {
    let spec = &crd["spec"];
    crd["kind"] == "CustomResourceDefinition"
        && spec["names"]["kind"] == kind
        && spec["versions"].as_array().into_iter().flatten().any(|v| {
            spec["group"]
                .as_str()
                .zip(v["name"].as_str())
                .is_some_and(|(g, n)| format!("{g}/{n}") == api_version)
        })
}

/// Creates the namespaces the seeds are in that neither exist nor are seeded.
async fn create_namespaces(world: &World, seeds: &[Seed]) -> Result<(), SeedError> {
    let seeded: HashSet<&str> = seeds
        .iter()
        .map(|s| identity(&s.object))
        .filter(|(api_version, kind, _, _)| (*api_version, *kind) == ("v1", "Namespace"))
        .map(|(_, _, _, name)| name)
        .collect();
    let used: BTreeSet<&str> = seeds
        .iter()
        .map(|s| identity(&s.object).2)
        .filter(|ns| !ns.is_empty() && !seeded.contains(ns))
        .collect();
    for ns in used {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let fail = |message| SeedError::Write { object: format!("Namespace {ns}"), message };
        if world.get(&object_ref(&namespace)?).await.map_err(fail)?.is_none() {
            world.create(&namespace).await.map_err(fail)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

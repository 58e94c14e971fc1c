//! The invariants each example must satisfy once the writers stop and the operator has
//! caught up. Each check lists the cluster as it is and returns every violation found, as
//! one line naming the object (`default/g3: ...`), so that a failure can be traced back to
//! the operations on that object.

use std::collections::BTreeMap;

use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use kube::{Client, ResourceExt as _};

use crate::ops::kinds;

/// The finalizer the greeting example puts on Persons.
pub const IN_USE: &str = "greetings.example.com/in-use";

async fn list(client: &Client, ar: &ApiResource) -> Result<Vec<DynamicObject>, kube::Error> {
    Ok(Api::<DynamicObject>::all_with(client.clone(), ar).list(&ListParams::default()).await?.items)
}

fn key(o: &DynamicObject) -> String {
    format!("{}/{}", o.namespace().unwrap_or_default(), o.name_any())
}

fn spec_str<'a>(o: &'a DynamicObject, field: &str) -> Option<&'a str> {
    o.data["spec"][field].as_str()
}

fn condition<'a>(o: &'a DynamicObject, kind: &str) -> Option<&'a str> {
    o.data["status"]["conditions"].as_array()?.iter().find(|c| c["type"] == kind)?["status"].as_str()
}

fn controller_uid(o: &DynamicObject) -> Option<&str> {
    o.owner_references().iter().find(|r| r.controller == Some(true)).map(|r| r.uid.as_str())
}

/// `status.observedGeneration` equals `metadata.generation`.
fn generation_current(o: &DynamicObject, out: &mut Vec<String>) {
    let observed = o.data["status"]["observedGeneration"].as_i64();
    if observed != o.metadata.generation {
        out.push(format!(
            "{}: status.observedGeneration {observed:?} != metadata.generation {:?}",
            key(o),
            o.metadata.generation
        ));
    }
}

/// Children of kind `ar` that carry an owner reference of `owner_kind` must point at a live
/// owner of that uid, and children labelled as the example's must be owned at all.
fn no_orphans(
    children: &[DynamicObject],
    owner_kind: &str,
    owners: &BTreeMap<String, &DynamicObject>,
    managed_label: (&str, &str),
    out: &mut Vec<String>,
) {
    for c in children {
        let refs: Vec<_> = c.owner_references().iter().filter(|r| r.kind == owner_kind).collect();
        let labelled = c.labels().get(managed_label.0).map(String::as_str) == Some(managed_label.1);
        if refs.is_empty() {
            if labelled && c.metadata.deletion_timestamp.is_none() {
                out.push(format!("{} {}: labelled as a child but has no owner", c.types_kind(), key(c)));
            }
            continue;
        }
        for r in refs {
            let ns = c.namespace().unwrap_or_default();
            let live = owners.get(&format!("{ns}/{}", r.name)).and_then(|o| o.uid());
            if live.as_deref() != Some(r.uid.as_str()) {
                out.push(format!(
                    "{} {}: orphan of {owner_kind} {ns}/{} ({})",
                    c.types_kind(),
                    key(c),
                    r.name,
                    r.uid
                ));
            }
        }
    }
}

trait TypesKind {
    fn types_kind(&self) -> String;
}
impl TypesKind for DynamicObject {
    fn types_kind(&self) -> String {
        self.types.as_ref().map(|t| t.kind.clone()).unwrap_or_default()
    }
}

fn with_kind(mut items: Vec<DynamicObject>, ar: &ApiResource) -> Vec<DynamicObject> {
    for o in &mut items {
        o.types = Some(kube::api::TypeMeta { api_version: ar.api_version.clone(), kind: ar.kind.clone() });
    }
    items
}

/// The greeting example: messages and people lists exact and sorted by first name; no
/// Person stuck with a deletionTimestamp (so none is referenced); the in-use finalizer on
/// exactly the Persons some Greeting lists; observedGeneration current.
pub async fn greeting(client: &Client) -> Result<Vec<String>, kube::Error> {
    let persons = list(client, &kinds::person()).await?;
    let greetings = list(client, &kinds::greeting()).await?;
    let mut out = Vec::new();
    let referenced: std::collections::BTreeSet<String> = greetings
        .iter()
        .flat_map(|g| {
            let ns = g.namespace().unwrap_or_default();
            g.data["status"]["people"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|n| n.as_str().map(|n| format!("{ns}/{n}")))
                .collect::<Vec<_>>()
        })
        .collect();
    for p in &persons {
        let expected: &[&str] = if referenced.contains(&key(p)) { &[IN_USE] } else { &[] };
        if p.metadata.deletion_timestamp.is_some() {
            out.push(format!("{}: Person still terminating (finalizers {:?})", key(p), p.finalizers()));
        } else if p.finalizers() != expected {
            out.push(format!("{}: Person finalizers {:?}, expected {expected:?}", key(p), p.finalizers()));
        }
    }
    for g in &greetings {
        generation_current(g, &mut out);
        let ns = g.namespace().unwrap_or_default();
        let (message, people) = match (spec_str(g, "name"), spec_str(g, "surname")) {
            (Some(name), None) => (format!("Hello, {name}"), Vec::new()),
            (None, Some(surname)) => {
                let mut family: Vec<&DynamicObject> = persons
                    .iter()
                    .filter(|p| {
                        p.namespace().as_deref() == Some(ns.as_str())
                            && spec_str(p, "surname") == Some(surname)
                            && p.metadata.deletion_timestamp.is_none()
                    })
                    .collect();
                family.sort_by(|a, b| {
                    (spec_str(a, "firstName"), a.name_any()).cmp(&(spec_str(b, "firstName"), b.name_any()))
                });
                let firsts: Vec<&str> = family.iter().filter_map(|p| spec_str(p, "firstName")).collect();
                (
                    format!("Hello to the {surname} family: {}", firsts.join(", ")),
                    family.iter().map(|p| p.name_any()).collect(),
                )
            }
            other => {
                out.push(format!("{}: invalid spec {other:?} (the mutator writes only valid ones)", key(g)));
                continue;
            }
        };
        let got_message = g.data["status"]["message"].as_str();
        if got_message != Some(message.as_str()) {
            out.push(format!("{}: message {got_message:?}, expected {message:?}", key(g)));
        }
        let got_people: Option<Vec<String>> = g.data["status"]["people"]
            .as_array()
            .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect());
        if got_people.as_ref() != Some(&people) {
            out.push(format!("{}: people {got_people:?}, expected {people:?}", key(g)));
        }
        for name in got_people.iter().flatten() {
            if let Some(p) =
                persons.iter().find(|p| p.namespace().as_deref() == Some(&ns) && &p.name_any() == name)
                && p.metadata.deletion_timestamp.is_some()
            {
                out.push(format!("{}: references {ns}/{name}, which is being deleted", key(g)));
            }
        }
    }
    Ok(out)
}

/// The webapp example: each WebApp's Deployment, Service and token Secret exist, are
/// controlled by it and match its spec; status current; no orphan children.
pub async fn webapp(client: &Client) -> Result<Vec<String>, kube::Error> {
    let apps = list(client, &kinds::webapp()).await?;
    let deployments = with_kind(list(client, &kinds::deployment()).await?, &kinds::deployment());
    let services = with_kind(list(client, &kinds::service()).await?, &kinds::service());
    let secrets = with_kind(list(client, &kinds::secret()).await?, &kinds::secret());
    let by_key: BTreeMap<String, &DynamicObject> = apps.iter().map(|a| (key(a), a)).collect();
    let mut out = Vec::new();
    let find = |list: &'_ [DynamicObject], ns: &str, name: &str| {
        list.iter().find(|o| o.namespace().as_deref() == Some(ns) && o.name_any() == name).cloned()
    };
    for a in &apps {
        if a.metadata.deletion_timestamp.is_some() {
            continue;
        }
        generation_current(a, &mut out);
        let ns = a.namespace().unwrap_or_default();
        let name = a.name_any();
        let uid = a.uid().unwrap_or_default();
        for (kind, list, child) in [
            ("Deployment", &deployments, name.clone()),
            ("Service", &services, name.clone()),
            ("Secret", &secrets, format!("{name}-token")),
        ] {
            match find(list, &ns, &child) {
                None => out.push(format!("{ns}/{name}: {kind} {child} is missing")),
                Some(c) if controller_uid(&c) != Some(uid.as_str()) => {
                    out.push(format!("{ns}/{name}: {kind} {child} is not controlled by it"))
                }
                Some(_) => {}
            }
        }
        if let Some(d) = find(&deployments, &ns, &name) {
            let spec = &a.data["spec"];
            let want = (spec["replicas"].as_i64(), spec["image"].as_str());
            let pod = &d.data["spec"]["template"]["spec"]["containers"][0];
            let got = (d.data["spec"]["replicas"].as_i64(), pod["image"].as_str());
            if want != got {
                out.push(format!(
                    "{ns}/{name}: Deployment has (replicas, image) {got:?}, spec says {want:?}"
                ));
            }
            let port = pod["ports"][0]["containerPort"].as_i64();
            if port != spec["port"].as_i64() {
                out.push(format!("{ns}/{name}: Deployment port {port:?}, spec says {:?}", spec["port"]));
            }
        }
        if a.data["status"]["phase"].as_str() != Some("Pending") {
            out.push(format!(
                "{ns}/{name}: phase {:?}, expected Pending (no pod is ever available)",
                a.data["status"]["phase"]
            ));
        }
    }
    let label = ("app.kubernetes.io/part-of", "webapp");
    no_orphans(&deployments, "WebApp", &by_key, label, &mut out);
    no_orphans(&services, "WebApp", &by_key, label, &mut out);
    no_orphans(&secrets, "WebApp", &by_key, label, &mut out);
    Ok(out)
}

/// The myresource example: conditions consistent with the cluster (per child, the
/// dependency, the aggregate), children present and controlled unless waiting, status
/// current, no orphan children.
pub async fn myresource(client: &Client) -> Result<Vec<String>, kube::Error> {
    let all = list(client, &kinds::myresource()).await?;
    let deployments = with_kind(list(client, &kinds::deployment()).await?, &kinds::deployment());
    let services = with_kind(list(client, &kinds::service()).await?, &kinds::service());
    let by_key: BTreeMap<String, &DynamicObject> = all.iter().map(|a| (key(a), a)).collect();
    let mut out = Vec::new();
    let find = |list: &'_ [DynamicObject], ns: &str, name: &str| {
        list.iter().find(|o| o.namespace().as_deref() == Some(ns) && o.name_any() == name).cloned()
    };
    let as_cond = |b: bool| if b { "True" } else { "False" };
    for m in &all {
        if m.metadata.deletion_timestamp.is_some() {
            continue;
        }
        generation_current(m, &mut out);
        let ns = m.namespace().unwrap_or_default();
        let name = m.name_any();
        let uid = m.uid().unwrap_or_default();
        let replicas = m.data["spec"]["replicas"].as_i64().unwrap_or(1);
        let waiting = match spec_str(m, "dependsOn") {
            None => false,
            Some(dep) => {
                by_key.get(&format!("{ns}/{dep}")).and_then(|d| condition(d, "Ready")) != Some("True")
            }
        };
        let d = find(&deployments, &ns, &name);
        let s = find(&services, &ns, &name);
        for (kind, child) in [("Deployment", &d), ("Service", &s)] {
            match child {
                None if !waiting => out.push(format!("{ns}/{name}: {kind} is missing")),
                Some(c) if controller_uid(c) != Some(uid.as_str()) => {
                    out.push(format!("{ns}/{name}: {kind} is not controlled by it"))
                }
                _ => {}
            }
        }
        if let Some(d) = &d
            && d.data["spec"]["replicas"].as_i64() != Some(replicas)
        {
            out.push(format!(
                "{ns}/{name}: Deployment replicas {:?}, spec says {replicas}",
                d.data["spec"]["replicas"]
            ));
        }
        let ready_replicas = d.as_ref().and_then(|d| d.data["status"]["readyReplicas"].as_i64()).unwrap_or(0);
        let deployment_ready = d.is_some() && ready_replicas >= replicas;
        let expect = [
            ("WaitingForDependency", waiting),
            ("Deployment", deployment_ready),
            ("Service", s.is_some()),
            ("Ready", deployment_ready && s.is_some() && !waiting),
        ];
        for (kind, want) in expect {
            let got = condition(m, kind);
            if got != Some(as_cond(want)) {
                out.push(format!("{ns}/{name}: condition {kind} is {got:?}, expected {}", as_cond(want)));
            }
        }
        let want_url = format!(
            "{}://{}",
            spec_str(m, "protocol").unwrap_or("https"),
            spec_str(m, "hostname").unwrap_or_default()
        );
        if m.data["status"]["url"].as_str() != Some(want_url.as_str()) {
            out.push(format!("{ns}/{name}: status.url {:?}, expected {want_url:?}", m.data["status"]["url"]));
        }
    }
    let label = ("app.kubernetes.io/managed-by", "myresource");
    no_orphans(&deployments, "MyResource", &by_key, label, &mut out);
    no_orphans(&services, "MyResource", &by_key, label, &mut out);
    Ok(out)
}

/// The myapp example: each MyApp carries its finalizer, its Deployment is controlled by it
/// and matches its spec; `phase` and `Ready` follow the Deployment (no registry is set, so
/// `registered` is false); no MyApp left terminating; no orphan Deployment.
pub async fn myapp(client: &Client) -> Result<Vec<String>, kube::Error> {
    let apps = list(client, &kinds::myapp()).await?;
    let deployments = with_kind(list(client, &kinds::deployment()).await?, &kinds::deployment());
    let by_key: BTreeMap<String, &DynamicObject> = apps.iter().map(|a| (key(a), a)).collect();
    let mut out = Vec::new();
    for a in &apps {
        let (ns, name) = (a.namespace().unwrap_or_default(), a.name_any());
        if a.metadata.deletion_timestamp.is_some() {
            out.push(format!("{ns}/{name}: MyApp still terminating (finalizers {:?})", a.finalizers()));
            continue;
        }
        generation_current(a, &mut out);
        if a.finalizers() != ["example.com/my-finalizer"] {
            out.push(format!("{ns}/{name}: finalizers {:?}", a.finalizers()));
        }
        let replicas = a.data["spec"]["replicas"].as_i64().unwrap_or(1);
        let d = deployments
            .iter()
            .find(|d| d.namespace().as_deref() == Some(ns.as_str()) && d.name_any() == name);
        let Some(d) = d else {
            out.push(format!("{ns}/{name}: Deployment is missing"));
            continue;
        };
        if controller_uid(d) != a.uid().as_deref() {
            out.push(format!("{ns}/{name}: Deployment is not controlled by it"));
        }
        let pod = &d.data["spec"]["template"]["spec"]["containers"][0];
        let want = (Some(replicas), a.data["spec"]["image"].as_str(), a.data["spec"]["port"].as_i64());
        let got = (
            d.data["spec"]["replicas"].as_i64(),
            pod["image"].as_str(),
            pod["ports"][0]["containerPort"].as_i64(),
        );
        if want != got {
            out.push(format!("{ns}/{name}: Deployment has {got:?}, spec says {want:?}"));
        }
        let failing = d.data["status"]["conditions"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["type"] == "ReplicaFailure" && c["status"] == "True"));
        let ready = d.data["status"]["readyReplicas"].as_i64().unwrap_or(0) >= replicas;
        let phase = if failing {
            "Failed"
        } else if ready {
            "Running"
        } else {
            "Pending"
        };
        let got_phase = a.data["status"]["phase"].as_str();
        if got_phase != Some(phase) {
            out.push(format!("{ns}/{name}: phase {got_phase:?}, expected {phase}"));
        }
        let want_ready = if !failing && ready { "True" } else { "False" };
        if condition(a, "Ready") != Some(want_ready) {
            out.push(format!("{ns}/{name}: Ready is {:?}, expected {want_ready}", condition(a, "Ready")));
        }
        if a.data["status"]["registered"].as_bool() != Some(false) {
            out.push(format!(
                "{ns}/{name}: registered {:?} without a registry",
                a.data["status"]["registered"]
            ));
        }
    }
    no_orphans(&deployments, "MyApp", &by_key, ("app.kubernetes.io/managed-by", "myapp"), &mut out);
    Ok(out)
}

/// The pod-annotator example: every Pod labelled `app=webserver` in `production` carries
/// the summary of its labels; no Pod elsewhere carries it; no Pod is owned by anything.
pub async fn pod_annotator(client: &Client) -> Result<Vec<String>, kube::Error> {
    let pods = list(client, &kinds::pod()).await?;
    let mut out = Vec::new();
    for p in &pods {
        let annotation = p.annotations().get("example.com/pod-labels").cloned();
        let selected = p.namespace().as_deref() == Some("production")
            && p.labels().get("app").map(String::as_str) == Some("webserver");
        if !p.owner_references().is_empty() {
            out.push(format!("{}: Pod has owner references {:?}", key(p), p.owner_references()));
        }
        if p.namespace().as_deref() != Some("production") {
            if annotation.is_some() {
                out.push(format!("{}: annotated outside the watched namespace", key(p)));
            }
            continue;
        }
        if selected {
            let mut labels: Vec<String> = p.labels().iter().map(|(k, v)| format!("{k}={v}")).collect();
            labels.sort();
            let want = labels.join(",");
            if annotation.as_deref() != Some(want.as_str()) {
                out.push(format!("{}: annotation {annotation:?}, expected {want:?}", key(p)));
            }
        }
    }
    Ok(out)
}

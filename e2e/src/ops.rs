//! The random operations of each example: what a writer does in one step.
//!
//! Objects are drawn from small name pools in two namespaces, so that writers collide:
//! creates hit `AlreadyExists`, replaces hit `Conflict`, deletes hit `NotFound`, and the
//! operator sees objects appear, change and vanish under it. Every operation is described
//! in one line for the trace; its outcome is recorded, never asserted.

use kube::Client;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use crate::rng::Rng;

/// The namespaces objects are created in.
pub const NAMESPACES: [&str; 2] = ["default", "mut-b"];
/// Names of Persons.
pub const PERSONS: [&str; 8] = ["p0", "p1", "p2", "p3", "p4", "p5", "p6", "p7"];
/// Names of Greetings.
pub const GREETINGS: [&str; 5] = ["g0", "g1", "g2", "g3", "g4"];
/// Names of WebApps.
pub const WEBAPPS: [&str; 5] = ["w0", "w1", "w2", "w3", "w4"];
/// Names of MyResources.
pub const MYRESOURCES: [&str; 5] = ["m0", "m1", "m2", "m3", "m4"];
/// Names of MyApps.
pub const MYAPPS: [&str; 5] = ["a0", "a1", "a2", "a3", "a4"];
/// Names of Pods.
pub const PODS: [&str; 6] = ["pod0", "pod1", "pod2", "pod3", "pod4", "pod5"];
/// The namespaces Pods are created in: the one the pod-annotator watches, and another.
pub const POD_NAMESPACES: [&str; 2] = ["production", "default"];
const FIRST_NAMES: [&str; 6] = ["Ann", "Bob", "Cid", "Dee", "Eve", "Fay"];
const SURNAMES: [&str; 3] = ["Doe", "Lee", "Roe"];
const IMAGES: [&str; 3] = ["nginx:1.27", "nginx:1.28", "httpd:2.4"];

/// An API resource from its parts.
pub fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: if group.is_empty() { version.into() } else { format!("{group}/{version}") },
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// The kinds the examples use.
pub mod kinds {
    use super::resource;
    use kube::api::ApiResource;

    /// greetings.example.com/v1 Person.
    pub fn person() -> ApiResource {
        resource("greetings.example.com", "v1", "Person", "persons")
    }
    /// greetings.example.com/v1 Greeting.
    pub fn greeting() -> ApiResource {
        resource("greetings.example.com", "v1", "Greeting", "greetings")
    }
    /// apps.example.com/v1 WebApp.
    pub fn webapp() -> ApiResource {
        resource("apps.example.com", "v1", "WebApp", "webapps")
    }
    /// homelab.example.com/v1 MyResource.
    pub fn myresource() -> ApiResource {
        resource("homelab.example.com", "v1", "MyResource", "myresources")
    }
    /// apps/v1 Deployment.
    pub fn deployment() -> ApiResource {
        resource("apps", "v1", "Deployment", "deployments")
    }
    /// v1 Service.
    pub fn service() -> ApiResource {
        resource("", "v1", "Service", "services")
    }
    /// v1 Secret.
    pub fn secret() -> ApiResource {
        resource("", "v1", "Secret", "secrets")
    }
    /// example.com/v1 MyApp.
    pub fn myapp() -> ApiResource {
        resource("example.com", "v1", "MyApp", "myapps")
    }
    /// v1 Pod.
    pub fn pod() -> ApiResource {
        resource("", "v1", "Pod", "pods")
    }
}

/// The outcome of one operation, short: `ok`, `404 NotFound`, `409 Conflict`, ...
pub fn outcome(r: &Result<(), kube::Error>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(kube::Error::Api(s)) => format!("{} {}", s.code, s.reason),
        Err(e) => format!("error: {e}"),
    }
}

fn object(ar: &ApiResource, name: &str, spec: Value) -> Result<DynamicObject, kube::Error> {
    serde_json::from_value(json!({
        "apiVersion": ar.api_version, "kind": ar.kind, "metadata": {"name": name}, "spec": spec,
    }))
    .map_err(kube::Error::SerdeError)
}

/// One step's operation: what it does, and the call that does it.
pub struct Step {
    /// One line for the trace: `create Person default/p3 {..}`.
    pub what: String,
    /// The result of the API call(s).
    pub result: Result<(), kube::Error>,
}

async fn create(api: &Api<DynamicObject>, obj: DynamicObject) -> Result<(), kube::Error> {
    api.create(&PostParams::default(), &obj).await.map(drop)
}

async fn merge(api: &Api<DynamicObject>, name: &str, patch: &Value) -> Result<(), kube::Error> {
    api.patch(name, &PatchParams::default(), &Patch::Merge(patch)).await.map(drop)
}

async fn delete(api: &Api<DynamicObject>, name: &str) -> Result<(), kube::Error> {
    api.delete(name, &DeleteParams::default()).await.map(drop)
}

/// Read-modify-write with the read's resourceVersion: a concurrent change makes it a 409.
async fn replace(
    api: &Api<DynamicObject>,
    name: &str,
    change: impl FnOnce(&mut Value),
) -> Result<(), kube::Error> {
    let mut obj = api.get(name).await?;
    change(&mut obj.data["spec"]);
    api.replace(name, &PostParams::default(), &obj).await.map(drop)
}

/// A random Greeting/Person operation.
pub async fn greeting(client: &Client, rng: &mut Rng) -> Step {
    let ns = *rng.pick(&NAMESPACES);
    let persons = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::person());
    let greetings = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::greeting());
    let p = *rng.pick(&PERSONS);
    let g = *rng.pick(&GREETINGS);
    let first = *rng.pick(&FIRST_NAMES);
    let surname = *rng.pick(&SURNAMES);
    let roll = rng.below(100);
    let (what, result) = match roll {
        0..25 => {
            let spec = json!({"firstName": first, "surname": surname});
            let what = format!("create Person {ns}/{p} {spec}");
            (
                what,
                match object(&kinds::person(), p, spec) {
                    Ok(o) => create(&persons, o).await,
                    Err(e) => Err(e),
                },
            )
        }
        25..40 => {
            let rename = rng.chance(50);
            let what = if rename {
                format!("replace Person {ns}/{p} firstName={first}")
            } else {
                format!("replace Person {ns}/{p} surname={surname}")
            };
            let r = replace(&persons, p, |spec| {
                if rename {
                    spec["firstName"] = first.into();
                } else {
                    spec["surname"] = surname.into();
                }
            })
            .await;
            (what, r)
        }
        40..50 => {
            let patch = json!({"spec": {"surname": surname}});
            (format!("patch Person {ns}/{p} {patch}"), merge(&persons, p, &patch).await)
        }
        50..64 => (format!("delete Person {ns}/{p}"), delete(&persons, p).await),
        64..79 => {
            let spec = if rng.chance(75) { json!({"surname": surname}) } else { json!({"name": first}) };
            let what = format!("create Greeting {ns}/{g} {spec}");
            (
                what,
                match object(&kinds::greeting(), g, spec) {
                    Ok(o) => create(&greetings, o).await,
                    Err(e) => Err(e),
                },
            )
        }
        79..91 => {
            let patch = if rng.chance(75) {
                json!({"spec": {"surname": surname, "name": null}})
            } else {
                json!({"spec": {"name": first, "surname": null}})
            };
            (format!("patch Greeting {ns}/{g} {patch}"), merge(&greetings, g, &patch).await)
        }
        _ => (format!("delete Greeting {ns}/{g}"), delete(&greetings, g).await),
    };
    Step { what, result }
}

/// A random WebApp operation (including deleting one of its children).
pub async fn webapp(client: &Client, rng: &mut Rng) -> Step {
    let ns = *rng.pick(&NAMESPACES);
    let apps = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::webapp());
    let w = *rng.pick(&WEBAPPS);
    let image = *rng.pick(&IMAGES);
    let replicas = rng.range(1, 3);
    let port = *rng.pick(&[80u64, 8080, 3000]);
    let (what, result) = match rng.below(100) {
        0..30 => {
            let spec = json!({"image": image, "replicas": replicas, "port": port});
            let what = format!("create WebApp {ns}/{w} {spec}");
            (
                what,
                match object(&kinds::webapp(), w, spec) {
                    Ok(o) => create(&apps, o).await,
                    Err(e) => Err(e),
                },
            )
        }
        30..50 => {
            let patch = if rng.chance(50) {
                json!({"spec": {"replicas": replicas}})
            } else {
                json!({"spec": {"image": image}})
            };
            (format!("patch WebApp {ns}/{w} {patch}"), merge(&apps, w, &patch).await)
        }
        50..62 => {
            let r = replace(&apps, w, |spec| spec["port"] = port.into()).await;
            (format!("replace WebApp {ns}/{w} port={port}"), r)
        }
        62..80 => (format!("delete WebApp {ns}/{w}"), delete(&apps, w).await),
        _ => {
            let (ar, name) = match rng.below(3) {
                0 => (kinds::deployment(), w.to_owned()),
                1 => (kinds::service(), w.to_owned()),
                _ => (kinds::secret(), format!("{w}-token")),
            };
            let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar);
            (format!("delete child {} {ns}/{name}", ar.kind), delete(&api, &name).await)
        }
    };
    Step { what, result }
}

/// A random MyResource operation, including a "kubelet" that marks Deployments ready.
pub async fn myresource(client: &Client, rng: &mut Rng) -> Step {
    let ns = *rng.pick(&NAMESPACES);
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::myresource());
    let deployments = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::deployment());
    let m = *rng.pick(&MYRESOURCES);
    let other = *rng.pick(&MYRESOURCES);
    let replicas = rng.range(1, 3);
    let (what, result) = match rng.below(100) {
        0..25 => {
            let mut spec = json!({"hostname": format!("{m}.example.com"), "port": *rng.pick(&[80u64, 8080, 3000]),
                "replicas": replicas});
            if rng.chance(50) {
                spec["protocol"] = (*rng.pick(&["http", "https"])).into();
            }
            if rng.chance(30) {
                spec["database"] = json!({"host": "db.local", "name": m});
            }
            if rng.chance(40) && other != m {
                spec["dependsOn"] = other.into();
            }
            let what = format!("create MyResource {ns}/{m} {spec}");
            (
                what,
                match object(&kinds::myresource(), m, spec) {
                    Ok(o) => create(&api, o).await,
                    Err(e) => Err(e),
                },
            )
        }
        25..40 => {
            let patch = json!({"spec": {"replicas": replicas}});
            (format!("patch MyResource {ns}/{m} {patch}"), merge(&api, m, &patch).await)
        }
        40..50 => {
            let dep = if rng.chance(50) && other != m { Value::from(other) } else { Value::Null };
            let patch = json!({"spec": {"dependsOn": dep}});
            (format!("patch MyResource {ns}/{m} {patch}"), merge(&api, m, &patch).await)
        }
        50..58 => {
            let db = rng.chance(50);
            let r = replace(&api, m, |spec| {
                if let Some(s) = spec.as_object_mut() {
                    if db {
                        s.insert(
                            "database".into(),
                            json!({"host": "db2.local", "name": "other", "port": 5433}),
                        );
                    } else {
                        s.remove("database");
                    }
                }
            })
            .await;
            (format!("replace MyResource {ns}/{m} database={db}"), r)
        }
        58..70 => (format!("delete MyResource {ns}/{m}"), delete(&api, m).await),
        70..90 => {
            // The kubelet's part: report the Deployment's pods ready (or only some).
            let r = async {
                let d = deployments.get(m).await?;
                let want = d.data["spec"]["replicas"].as_u64().unwrap_or(1);
                let ready = if rng.chance(70) { want } else { rng.below(want + 1) };
                let patch = json!({"status": {"replicas": want, "readyReplicas": ready}});
                deployments
                    .patch_status(m, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|_| ready)
            }
            .await;
            match r {
                Ok(ready) => (format!("kubelet Deployment {ns}/{m} readyReplicas={ready}"), Ok(())),
                Err(e) => (format!("kubelet Deployment {ns}/{m}"), Err(e)),
            }
        }
        _ => {
            let ar = if rng.chance(50) { kinds::deployment() } else { kinds::service() };
            let child = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &ar);
            (format!("delete child {} {ns}/{m}", ar.kind), delete(&child, m).await)
        }
    };
    Step { what, result }
}

/// A random MyApp operation, including a "kubelet" that reports readiness or a failure.
pub async fn myapp(client: &Client, rng: &mut Rng) -> Step {
    let ns = *rng.pick(&NAMESPACES);
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::myapp());
    let deployments = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::deployment());
    let a = *rng.pick(&MYAPPS);
    let image = *rng.pick(&IMAGES);
    let replicas = rng.range(1, 3);
    let (what, result) = match rng.below(100) {
        0..30 => {
            let spec = json!({"image": image, "replicas": replicas, "port": *rng.pick(&[80u64, 8080])});
            let what = format!("create MyApp {ns}/{a} {spec}");
            (
                what,
                match object(&kinds::myapp(), a, spec) {
                    Ok(o) => create(&api, o).await,
                    Err(e) => Err(e),
                },
            )
        }
        30..50 => {
            let patch = if rng.chance(50) {
                json!({"spec": {"replicas": replicas}})
            } else {
                json!({"spec": {"image": image}})
            };
            (format!("patch MyApp {ns}/{a} {patch}"), merge(&api, a, &patch).await)
        }
        50..65 => (format!("delete MyApp {ns}/{a}"), delete(&api, a).await),
        65..90 => {
            let failing = rng.chance(20);
            let r = async {
                let d = deployments.get(a).await?;
                let want = d.data["spec"]["replicas"].as_u64().unwrap_or(1);
                let ready = if rng.chance(70) { want } else { rng.below(want + 1) };
                let conditions = if failing {
                    json!([{"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate", "message": "quota"}])
                } else {
                    json!([])
                };
                let patch = json!({"status": {"replicas": want, "readyReplicas": ready, "conditions": conditions}});
                deployments.patch_status(a, &PatchParams::default(), &Patch::Merge(&patch)).await.map(|_| ready)
            }
            .await;
            match r {
                Ok(ready) => {
                    (format!("kubelet Deployment {ns}/{a} readyReplicas={ready} failing={failing}"), Ok(()))
                }
                Err(e) => (format!("kubelet Deployment {ns}/{a}"), Err(e)),
            }
        }
        _ => (format!("delete child Deployment {ns}/{a}"), delete(&deployments, a).await),
    };
    Step { what, result }
}

/// A random Pod operation for the pod-annotator: create, relabel, strip the annotation,
/// delete.
pub async fn pod(client: &Client, rng: &mut Rng) -> Step {
    let ns = *rng.pick(&POD_NAMESPACES);
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), ns, &kinds::pod());
    let name = *rng.pick(&PODS);
    let app = *rng.pick(&["webserver", "webserver", "database"]);
    let tier = *rng.pick(&["front", "back"]);
    let (what, result) = match rng.below(100) {
        0..30 => {
            let pod = json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"app": app, "tier": tier}},
                "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}});
            let what = format!("create Pod {ns}/{name} app={app} tier={tier}");
            let r = match serde_json::from_value::<DynamicObject>(pod) {
                Ok(o) => create(&api, o).await,
                Err(e) => Err(kube::Error::SerdeError(e)),
            };
            (what, r)
        }
        30..55 => {
            let patch = if rng.chance(50) {
                json!({"metadata": {"labels": {"app": app}}})
            } else {
                json!({"metadata": {"labels": {"tier": tier}}})
            };
            (format!("label Pod {ns}/{name} {patch}"), merge(&api, name, &patch).await)
        }
        55..75 => {
            let patch = json!({"metadata": {"annotations": {"example.com/pod-labels": null}}});
            (format!("strip annotation Pod {ns}/{name}"), merge(&api, name, &patch).await)
        }
        75..85 => {
            let patch = json!({"metadata": {"annotations": {"note": tier}}});
            (format!("annotate Pod {ns}/{name} note={tier}"), merge(&api, name, &patch).await)
        }
        _ => (format!("delete Pod {ns}/{name}"), delete(&api, name).await),
    };
    Step { what, result }
}

//! The driver's view of the workload: kube-rs watchers of the WebApps and their children
//! that timestamp what they see. Start at [`watch_workload`], which fills a [`Seen`];
//! [`Seen::done_at`] is the convergence check (Deployment, Service, token Secret and the
//! CR's status all seen). With [`Seen::sharded`] it also records each object's shard
//! label, so a sharded run can tell who holds what and whether the children followed.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Secret, Service};
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use kube::{Client, ResourceExt as _};
use parking_lot::Mutex;

use crate::sim::{IMAGE_2, NAMESPACE};

/// Shard labels as the driver last saw them, by CR name.
#[derive(Debug, Default)]
pub struct Shards {
    /// The label key, `shard.ctop.dev/<operator>`.
    pub key: String,
    /// When each CR was first seen carrying the label.
    pub first_labelled: HashMap<String, Instant>,
    /// Each CR's label value now.
    pub crs: HashMap<String, String>,
    /// Each CR's Deployment's label value now.
    pub deployments: HashMap<String, String>,
    /// Each CR's Service's label value now.
    pub services: HashMap<String, String>,
    /// Each CR's token Secret's label value now.
    pub secrets: HashMap<String, String>,
    /// Each CR's token (the Secret's `data.token`) now.
    pub tokens: HashMap<String, Vec<u8>>,
}

impl Shards {
    /// Whether the CR `name` and its three children all carry one label value, and which.
    #[must_use]
    pub fn settled(&self, name: &str) -> Option<&str> {
        let cr = self.crs.get(name)?;
        let same = |m: &HashMap<String, String>| m.get(name) == Some(cr);
        (same(&self.deployments) && same(&self.services) && same(&self.secrets)).then_some(cr.as_str())
    }
}

/// How a burst of creates converged.
#[derive(Debug, Clone, Copy)]
pub struct Convergence {
    /// Per CR, create response → its children and status seen: p50, ms.
    pub latency_p50_ms: f64,
    /// Same, p99.
    pub latency_p99_ms: f64,
    /// First create sent → the last CR done, seconds.
    pub converge_s: f64,
}

/// What the driver's watchers have seen.
#[derive(Debug, Default)]
pub struct Seen {
    /// Deployments: first seen, and the image now.
    pub deployments: HashMap<String, (Instant, String)>,
    /// Deployments first seen with [`IMAGE_2`].
    pub deploy_image2: HashMap<String, Instant>,
    /// Services, first seen.
    pub services: HashMap<String, Instant>,
    /// Token Secrets by their CR's name, first seen.
    pub secrets: HashMap<String, Instant>,
    /// CRs first seen with a status.
    pub status: HashMap<String, Instant>,
    /// CRs that exist.
    pub webapps: HashSet<String>,
    /// Shard labels, when watching a sharded operator.
    pub shards: Option<Shards>,
}

impl Seen {
    /// A view that also records the shard label `key` of the CRs and their children.
    #[must_use]
    pub fn sharded(key: &str) -> Self {
        Self { shards: Some(Shards { key: key.to_owned(), ..Shards::default() }), ..Self::default() }
    }

    /// When the CR `name` had all of its children and its status, if it has.
    #[must_use]
    pub fn done_at(&self, name: &str) -> Option<Instant> {
        let d = self.deployments.get(name)?.0;
        let s = *self.services.get(name)?;
        let t = *self.secrets.get(name)?;
        let st = *self.status.get(name)?;
        Some(d.max(s).max(t).max(st))
    }

    /// Whether every CR of `names` is done.
    #[must_use]
    pub fn all_done(&self, names: &[String]) -> bool {
        names.iter().all(|n| self.done_at(n).is_some())
    }

    /// How the CRs `created` (each with its create response's time; the first create
    /// was sent at `t_create`) converged; an unfinished run's last CR counts as
    /// `timeout_s`.
    #[must_use]
    pub fn convergence(
        &self,
        created: &[(String, Instant)],
        t_create: Instant,
        timeout_s: f64,
    ) -> Convergence {
        let mut lat: Vec<f64> = created
            .iter()
            .filter_map(|(n, t)| Some(self.done_at(n)?.saturating_duration_since(*t).as_secs_f64() * 1000.0))
            .collect();
        lat.sort_by(f64::total_cmp);
        Convergence {
            latency_p50_ms: percentile(&lat, 0.5),
            latency_p99_ms: percentile(&lat, 0.99),
            converge_s: created
                .iter()
                .filter_map(|(n, _)| self.done_at(n))
                .max()
                .map_or(timeout_s, |t| t.saturating_duration_since(t_create).as_secs_f64()),
        }
    }

    /// Record `o`'s shard label under `name` in the map `pick` chooses (or forget it).
    fn label<K: kube::Resource>(
        &mut self,
        name: &str,
        o: &K,
        up: bool,
        pick: fn(&mut Shards) -> &mut HashMap<String, String>,
    ) {
        let Some(shards) = self.shards.as_mut() else { return };
        let value = if up { o.labels().get(&shards.key).cloned() } else { None };
        match value {
            Some(v) => pick(shards).insert(name.to_owned(), v),
            None => pick(shards).remove(name),
        };
    }
}

/// Watch `api` and call `on(state, object, exists)` for each object it reports.
pub fn watch_into<K, T, F>(api: Api<K>, seen: Arc<Mutex<T>>, on: F) -> tokio::task::JoinHandle<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    T: Send + 'static,
    F: Fn(&mut T, &K, bool) + Send + 'static,
{
    tokio::spawn(async move {
        let stream = watcher(api, watcher::Config::default());
        futures::pin_mut!(stream);
        while let Some(event) = stream.next().await {
            let Ok(event) = event else { continue };
            let mut s = seen.lock();
            match event {
                watcher::Event::Apply(o) | watcher::Event::InitApply(o) => on(&mut s, &o, true),
                watcher::Event::Delete(o) => on(&mut s, &o, false),
                _ => {}
            }
        }
    })
}

/// Record when `key` was first seen (or forget it once gone).
pub fn set_once(map: &mut HashMap<String, Instant>, key: &str, present: bool) {
    if present {
        map.entry(key.to_owned()).or_insert_with(Instant::now);
    } else {
        map.remove(key);
    }
}

/// Watch the WebApps (`webapps`) and their Deployments, Services and token Secrets in
/// [`NAMESPACE`] into `seen`, until the handles are aborted.
pub fn watch_workload(
    client: &Client,
    webapps: &Api<DynamicObject>,
    seen: &Arc<Mutex<Seen>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    vec![
        watch_into(Api::<Deployment>::namespaced(client.clone(), NAMESPACE), seen.clone(), |s, d, up| {
            let name = d.name_any();
            s.label(&name, d, up, |sh| &mut sh.deployments);
            if up {
                let image = d
                    .spec
                    .as_ref()
                    .and_then(|s| s.template.spec.as_ref()?.containers.first()?.image.clone())
                    .unwrap_or_default();
                if image == IMAGE_2 {
                    s.deploy_image2.entry(name.clone()).or_insert_with(Instant::now);
                }
                let e = s.deployments.entry(name).or_insert_with(|| (Instant::now(), String::new()));
                e.1 = image;
            } else {
                s.deployments.remove(&name);
            }
        }),
        watch_into(Api::<Service>::namespaced(client.clone(), NAMESPACE), seen.clone(), |s, o, up| {
            let name = o.name_any();
            s.label(&name, o, up, |sh| &mut sh.services);
            set_once(&mut s.services, &name, up);
        }),
        watch_into(
            Api::<Secret>::namespaced(client.clone(), NAMESPACE),
            seen.clone(),
            |s, o: &Secret, up| {
                let name = o.name_any();
                let cr = name.strip_suffix("-token").unwrap_or(&name);
                s.label(cr, o, up, |sh| &mut sh.secrets);
                if let Some(shards) = s.shards.as_mut() {
                    match o.data.as_ref().and_then(|d| d.get("token")).filter(|_| up) {
                        Some(t) => shards.tokens.insert(cr.to_owned(), t.0.clone()),
                        None => shards.tokens.remove(cr),
                    };
                }
                set_once(&mut s.secrets, cr, up);
            },
        ),
        watch_into(webapps.clone(), seen.clone(), |s, o: &DynamicObject, up| {
            let name = o.name_any();
            s.label(&name, o, up, |sh| &mut sh.crs);
            if let Some(shards) = s.shards.as_mut()
                && shards.crs.contains_key(&name)
            {
                shards.first_labelled.entry(name.clone()).or_insert_with(Instant::now);
            }
            if up {
                s.webapps.insert(name.clone());
            } else {
                s.webapps.remove(&name);
            }
            set_once(&mut s.status, &name, up && o.data["status"]["phase"].is_string());
        }),
    ]
}

/// Poll `done` every 20 ms until it holds or `timeout` passes; whether it held.
pub async fn wait_for<F: FnMut() -> bool>(timeout: Duration, mut done: F) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    done()
}

/// The `p` quantile (0–1) of sorted values, nearest rank; 0 when there are none.
#[must_use]
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_needs_the_cr_and_all_three_children_on_one_member() {
        let mut sh = Shards { key: "shard.ctop.dev/webapp".into(), ..Shards::default() };
        let set = |m: &mut HashMap<String, String>, v: &str| m.insert("a".into(), v.into());
        set(&mut sh.crs, "m1");
        set(&mut sh.deployments, "m1");
        set(&mut sh.services, "m1");
        assert_eq!(sh.settled("a"), None, "the Secret is not seen yet");
        set(&mut sh.secrets, "m0");
        assert_eq!(sh.settled("a"), None, "the Secret is still on the old member");
        set(&mut sh.secrets, "m1");
        assert_eq!(sh.settled("a"), Some("m1"));
        assert_eq!(sh.settled("b"), None);
    }

    #[test]
    fn convergence_counts_from_each_create_response() {
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        let mut seen = Seen::default();
        for (name, done) in [("a", 100), ("b", 300)] {
            seen.deployments.insert(name.into(), (at(done - 50), String::new()));
            seen.services.insert(name.into(), at(done - 20));
            seen.secrets.insert(name.into(), at(done));
            seen.status.insert(name.into(), at(done - 10));
        }
        let created = vec![("a".to_owned(), at(10)), ("b".to_owned(), at(20))];
        let c = seen.convergence(&created, t0, 99.0);
        assert_eq!((c.latency_p50_ms.round(), c.latency_p99_ms.round()), (280.0, 280.0));
        assert!((c.converge_s - 0.3).abs() < 1e-9, "{}", c.converge_s);
        assert!(seen.all_done(&["a".into(), "b".into()]));
        assert!(!seen.all_done(&["c".into()]));
    }
}

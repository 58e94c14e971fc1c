//! One wave of the soak ([`run`]): create N WebApps with names no earlier wave used, wait
//! until each has its Deployment, Service, token Secret and status, delete them all, wait
//! until the driver's watches saw every CR and child gone, wait for the implementation to
//! go quiet ([`crate::settle`]), then read its `VmRSS` and `VmHWM`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::bail;
use ctop_bench::procs::{proc_usage, reconciles};
use ctop_bench::seen::{Seen, wait_for};
use ctop_bench::sim;
use futures::{StreamExt as _, TryStreamExt as _};
use kube::api::{Api, DeleteParams, DynamicObject};
use parking_lot::Mutex;

use crate::settle::{Quiet, settle};

/// What a wave measured.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Wave {
    /// 1 for the first wave; 0 is the base (the probe CR only, before any wave).
    pub wave: usize,
    /// First create → every CR of the wave with its children and status, seconds.
    pub create_converge_s: f64,
    /// First delete → every CR and child of the wave gone (the driver's watches), seconds.
    pub delete_gone_s: f64,
    /// Gone → the implementation quiet, seconds.
    pub settle_s: f64,
    /// The implementation went quiet before the RSS was read.
    pub quiet: bool,
    /// `VmRSS` once quiet, MiB.
    pub rss_mb: f64,
    /// `VmHWM` then, MiB.
    pub hwm_mb: f64,
    /// The implementation's user + system CPU seconds since it started.
    pub cpu_s: f64,
    /// Its reconciles since it started.
    pub reconciles: u64,
    /// kubesim's `VmRSS` then, MiB (the API server holds the deleted objects' history).
    pub sim_rss_mb: f64,
}

/// What every wave of one run works on.
pub struct Soak {
    /// The WebApps.
    pub webapps: Api<DynamicObject>,
    /// The driver's watches.
    pub seen: Arc<Mutex<Seen>>,
    /// The implementation's process and its `/metrics` port.
    pub pid: u32,
    /// Its `/metrics` port.
    pub port: u16,
    /// kubesim's process.
    pub sim_pid: u32,
    /// CRs per wave.
    pub size: usize,
    /// How long creation, deletion and the wait for quiet may take each.
    pub timeout: Duration,
    /// What counts as quiet.
    pub quiet: Quiet,
}

impl Soak {
    /// Wait for quiet and read the processes: the figures of wave `wave` after its phases.
    pub async fn measure(&self, wave: usize) -> Wave {
        let settled = settle(self.pid, self.port, self.quiet).await;
        let (cpu_s, rss_mb, hwm_mb) = proc_usage(self.pid);
        Wave {
            wave,
            settle_s: settled.after.as_secs_f64(),
            quiet: settled.quiet,
            rss_mb,
            hwm_mb,
            cpu_s,
            reconciles: reconciles(self.port).await,
            sim_rss_mb: proc_usage(self.sim_pid).1,
            ..Wave::default()
        }
    }
}

/// The CR names of wave `wave`: new in every wave.
#[must_use]
pub fn names(wave: usize, size: usize) -> Vec<String> {
    (0..size).map(|i| format!("w{wave}-{i:05}")).collect()
}

/// Run wave `wave` (from 1) and measure it.
pub async fn run(soak: &Soak, wave: usize) -> anyhow::Result<Wave> {
    let names = names(wave, soak.size);
    let t_create = Instant::now();
    sim::create_all(&soak.webapps, &names).await?;
    if !wait_for(soak.timeout, || soak.seen.lock().all_done(&names)).await {
        bail!("wave {wave}: the CRs did not converge within {} s", soak.timeout.as_secs());
    }
    let create_converge_s = t_create.elapsed().as_secs_f64();

    let t_delete = Instant::now();
    futures::stream::iter(names.iter().cloned())
        .map(|name| {
            let api = soak.webapps.clone();
            async move { api.delete(&name, &DeleteParams::default()).await.map(drop) }
        })
        .buffer_unordered(32)
        .try_collect::<Vec<_>>()
        .await?;
    let gone = wait_for(soak.timeout, || {
        let s = soak.seen.lock();
        names.iter().all(|n| {
            !s.webapps.contains(n)
                && !s.deployments.contains_key(n)
                && !s.services.contains_key(n)
                && !s.secrets.contains_key(n)
        })
    })
    .await;
    if !gone {
        bail!("wave {wave}: the CRs and children were not all gone within {} s", soak.timeout.as_secs());
    }
    let delete_gone_s = t_delete.elapsed().as_secs_f64();
    Ok(Wave { create_converge_s, delete_gone_s, ..soak.measure(wave).await })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_wave_has_names_of_its_own() {
        let (a, b) = (names(1, 3), names(2, 3));
        assert_eq!(a, ["w1-00000", "w1-00001", "w1-00002"]);
        assert!(a.iter().all(|n| !b.contains(n)));
    }
}

//! Memory limits: a container whose processes use more than `resources.limits.memory` is killed,
//! and reported as upstream reports an out-of-memory kill: `OOMKilled`, exit code 137.
//!
//! Kubernetes counterpart: the container cgroup's `memory.max` (`memory.limit_in_bytes` on cgroup
//! v1), set by the runtime from the limit; the kernel's OOM killer sends SIGKILL when the cgroup
//! cannot reclaim below it, and the runtime reports the reason `OOMKilled`
//! (`pkg/kubelet/kuberuntime/kuberuntime_container.go`, containerd's `OOMKilled` flag).
//!
//! minik simplifies: where the machine lets it make a memory cgroup (cgroup v1, writable: see
//! `memory_cgroup.rs`) the kernel enforces the limit; elsewhere (an unprivileged kubelet, no
//! delegated cgroup) this is a watchdog: each usage sample ([`crate::stats`], every second) is
//! compared with the limits of this node's pods, known by list + watch, and a container over its
//! limit has its whole process tree SIGKILLed, with a Warning Event `OOMKilling` (the kubelet's
//! own reason for a system OOM). The kill is remembered by container id, so that the status
//! shows `OOMKilled` (see `status.rs`); a kubelet restart forgets it (the reason becomes
//! `Error`, still with 137). A burst between two samples can overshoot the limit for up to a
//! second, where the kernel would stop it at once.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use minik_api::meta::ObjectMeta;
use minik_client::{reflector, store, watcher, Api, Client, ListParams, Store};
use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::downward::parse_quantity;
use crate::reporter::PodReporter;
use crate::stats::{read_procs, Sampled};

/// Container ids killed for their memory limit (by every kubelet of this process; ids are unique).
static OOM_KILLED: LazyLock<Mutex<HashSet<String>>> = LazyLock::new(Default::default);

/// Whether the watchdog killed this container attempt for its memory limit.
pub fn was_oom_killed(container_id: &str) -> bool {
    let known = OOM_KILLED
        .lock()
        .map(|set| set.contains(container_id))
        .unwrap_or(false);
    known || crate::memory_cgroup::oom_killed(container_id)
}

/// The memory limit, in bytes, of each container of `pod` that has one (by container name).
pub fn limits(pod: &Pod) -> BTreeMap<String, u64> {
    let Some(spec) = &pod.spec else {
        return BTreeMap::new();
    };
    let init = spec.init_containers.iter().flatten();
    spec.containers
        .iter()
        .chain(init)
        .filter_map(|c| {
            let limit = c.resources.as_ref()?.limits.as_ref()?.get("memory")?;
            Some((c.name.clone(), parse_quantity(&limit.0)? as u64))
        })
        .collect()
}

/// The containers of `sampled` over their pod's limit: (container, limit).
pub fn over_limit(
    sampled: &[Sampled],
    limit_of: impl Fn(&str, &str) -> Option<u64>,
) -> Vec<(&Sampled, u64)> {
    sampled
        .iter()
        .filter_map(|s| {
            let limit = limit_of(&s.container.pod_uid, &s.name)?;
            (s.usage.rss_bytes > limit).then_some((s, limit))
        })
        .collect()
}

/// The watchdog's view of this node's pods, kept by list + watch.
#[derive(Clone)]
pub struct Limits {
    pods: Store<Pod>,
    /// The containers the kernel enforces a limit on (in a memory cgroup), by id.
    in_cgroups: Arc<Mutex<BTreeMap<String, Sampled>>>,
}

impl Limits {
    /// Starts watching the pods bound to `node_name`; the watch ends with `shutdown`.
    pub fn watch(
        client: Client,
        node_name: &str,
        shutdown: CancellationToken,
    ) -> (Limits, impl std::future::Future<Output = ()>) {
        let (pods, writer) = store::<Pod>();
        let selector = format!("spec.nodeName={node_name}");
        let events = reflector(
            writer,
            watcher(
                Api::<Pod>::all(client),
                ListParams::default().fields(&selector),
            ),
        );
        let run = async move {
            tokio::pin!(events);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    next = events.next() => if next.is_none() { return },
                }
            }
        };
        let in_cgroups = Arc::default();
        (Limits { pods, in_cgroups }, run)
    }

    fn limit(&self, pod_uid: &str, container: &str) -> Option<u64> {
        let pods = self.pods.state();
        let pod = pods
            .iter()
            .find(|p| p.metadata.uid.as_deref() == Some(pod_uid))?;
        limits(pod).get(container).copied()
    }

    /// Puts each newly seen limited container in a memory cgroup where the machine allows it;
    /// kills every other one over its limit, with an Event on its pod.
    pub fn enforce(&self, sampled: &[Sampled], reporter: &Arc<dyn PodReporter>) {
        self.release_exited(sampled, reporter);
        let in_cgroup = |s: &Sampled| self.attach(s);
        let limit_of = |uid: &str, name: &str| self.limit(uid, name);
        let watched: Vec<Sampled> = sampled
            .iter()
            .filter(|s| limit_of(&s.container.pod_uid, &s.name).is_none() || !in_cgroup(s))
            .cloned()
            .collect();
        for (container, limit) in over_limit(&watched, limit_of) {
            let used = container.usage.rss_bytes;
            warn!(pod = %container.container.pod_key, container = %container.name, used, limit, mechanism = "watchdog", "over its memory limit; killing it");
            if let Ok(mut set) = OOM_KILLED.lock() {
                set.insert(container.id.clone());
            }
            kill_tree(container);
            let message = format!(
                "Memory cgroup out of memory: container {} used {used} bytes, over its limit of {limit} bytes (killed by the kubelet's watchdog)",
                container.name
            );
            reporter.event(
                &pod_of(container),
                Some(&container.name),
                "Warning",
                "OOMKilling",
                &message,
            );
        }
    }
}

impl Limits {
    /// Moves a limited container into its own memory cgroup (once); false where not possible.
    fn attach(&self, sampled: &Sampled) -> bool {
        if crate::memory_cgroup::attached(&sampled.id) {
            return true;
        }
        let Some(limit) = self.limit(&sampled.container.pod_uid, &sampled.name) else {
            return false;
        };
        if !crate::memory_cgroup::available() {
            return false;
        }
        let pids = tree(sampled);
        if !crate::memory_cgroup::attach(&sampled.id, limit, &pids) {
            return false;
        }
        info!(pod = %sampled.container.pod_key, container = %sampled.name, limit, mechanism = "cgroup v1", "memory limit set in a memory cgroup");
        if let Ok(mut all) = self.in_cgroups.lock() {
            all.insert(sampled.id.clone(), sampled.clone());
        }
        true
    }

    /// When the kubelet stops: removes the cgroups whose containers have exited (running ones
    /// stay, as their pods do).
    pub fn release_idle(&self) {
        let ids: Vec<String> = self
            .in_cgroups
            .lock()
            .map(|all| all.keys().cloned().collect())
            .unwrap_or_default();
        ids.iter()
            .for_each(|id| crate::memory_cgroup::remove_if_empty(id));
    }

    /// Removes the cgroups of containers that exited, recording and reporting a kernel OOM kill.
    fn release_exited(&self, sampled: &[Sampled], reporter: &Arc<dyn PodReporter>) {
        let running: HashSet<&str> = sampled.iter().map(|s| s.id.as_str()).collect();
        let exited: Vec<Sampled> = match self.in_cgroups.lock() {
            Ok(mut all) => {
                let gone: Vec<String> = all
                    .keys()
                    .filter(|id| !running.contains(id.as_str()))
                    .cloned()
                    .collect();
                gone.iter().filter_map(|id| all.remove(id)).collect()
            }
            Err(_) => return,
        };
        for container in exited {
            if crate::memory_cgroup::release(&container.id) {
                if let Ok(mut set) = OOM_KILLED.lock() {
                    set.insert(container.id.clone());
                }
                warn!(pod = %container.container.pod_key, container = %container.name, mechanism = "cgroup v1", "the kernel OOM-killed it");
                let message = format!("Memory cgroup out of memory: container {} was killed by the kernel at its memory limit", container.name);
                reporter.event(
                    &pod_of(&container),
                    Some(&container.name),
                    "Warning",
                    "OOMKilling",
                    &message,
                );
            }
        }
    }
}

/// The pids of the container's process tree.
fn tree(container: &Sampled) -> Vec<u32> {
    let procs: Vec<_> = read_procs().into_iter().map(|p| p.proc).collect();
    let one = [crate::pids::RunningContainer {
        pod_uid: "tree".into(),
        ..container.container.clone()
    }];
    crate::pids::pod_processes(&procs, &one)
        .remove("tree")
        .unwrap_or_default()
        .into_iter()
        .collect()
}

/// SIGKILLs the container's process group, then whatever of its tree is left.
fn kill_tree(container: &Sampled) {
    let _ = killpg(
        Pid::from_raw(container.container.pid as i32),
        Signal::SIGKILL,
    );
    for pid in tree(container) {
        let _ = kill(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
}

fn pod_of(sampled: &Sampled) -> Pod {
    let key = &sampled.container.pod_key;
    let (namespace, name) = key.split_once('/').unwrap_or(("default", key.as_str()));
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            uid: Some(sampled.container.pod_uid.clone()),
            ..ObjectMeta::default()
        },
        ..Pod::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pids::RunningContainer;
    use crate::stats::Usage;
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn container(name: &str, memory: Option<&str>) -> Container {
        Container {
            name: name.into(),
            resources: memory.map(|m| ResourceRequirements {
                limits: Some([("memory".to_string(), Quantity(m.into()))].into()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn limits_are_read_per_container_in_bytes() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: vec![container("web", Some("64Mi")), container("log", None)],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            limits(&pod),
            BTreeMap::from([("web".to_string(), 64 << 20)])
        );
    }

    #[test]
    fn only_a_container_above_its_own_limit_is_over() {
        let sampled = |name: &str, rss: u64| Sampled {
            id: format!("u-{name}-0"),
            name: name.into(),
            container: RunningContainer {
                pod_key: "default/p".into(),
                pod_uid: "u".into(),
                pid: 1,
            },
            started_at: jiff::Timestamp::now(),
            usage: Usage {
                cpu_nanos: 0,
                rss_bytes: rss,
            },
            nano_cores: None,
        };
        let all = [
            sampled("web", 100),
            sampled("hog", 300),
            sampled("free", 1 << 40),
        ];
        let limit = |_: &str, name: &str| match name {
            "web" => Some(100),
            "hog" => Some(200),
            _ => None,
        };
        let over: Vec<(&str, u64)> = over_limit(&all, limit)
            .into_iter()
            .map(|(s, l)| (s.name.as_str(), l))
            .collect();
        assert_eq!(over, vec![("hog", 200)]);
    }
}

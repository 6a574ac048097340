//! Fields minik accepts, stores and returns, but does not act on: told to the client as warnings.
//!
//! minik implements a slice of Kubernetes, yet it takes any valid manifest, so that the manifests
//! people already have apply unchanged. A field the cluster then silently ignores is a trap
//! (`hostNetwork: true` that gives the pod its own IP anyway, a `fieldRef` the kubelet cannot
//! resolve), so each create or update of such an object answers with one
//! `Warning: 299 - "minik: spec.hostNetwork is ignored (the pod gets its own IP)"` header per
//! field, which kubectl prints on stderr (docs/real-clients.md#errors: "the right channel for
//! accepted but not implemented"). The warnings are sent whatever `fieldValidation` says: they are
//! not about unknown fields (that is `field_validation.rs`) but about known ones.
//!
//! Kubernetes counterpart: the apiserver's warning mechanism (`k8s.io/apiserver/pkg/warning`:
//! `warning.AddWarning(ctx, "", text)`, turned into `Warning:` headers by the handlers) and its
//! biggest user, `pkg/api/pod/warnings.go` (`GetWarningsForPod`), a hand-written list of "this
//! field is accepted but…" checks (deprecated node labels and volume plugins, duplicate `env`
//! names, fractional memory quantities, …) that the pod strategy's `WarningsOnCreate` runs.
//!
//! How the list works: one declarative table per kind ([`POD`], [`SERVICE`], [`NODE`],
//! [`WORKLOAD`]). Each [`Rule`] names a field by its dotted path, says which values warn
//! ([`When`]) and what minik does instead. The walk only follows `serde_json::Value` lookups — no re-serialization, no typed
//! decoding — and builds a path string only for a field that warns, since it runs on every create
//! and update. Each entry was checked against the component that would act on it (the scheduler,
//! the kubelet, the endpoint controller, the proxy); a comment says why when it is not obvious.
//!
//! Not in the tables, on purpose:
//! - everything minik does implement (see the module tests' "supported" manifests): `nodeName`,
//!   `nodeSelector`, required node affinity, tolerations, cpu/memory requests and `overhead` (the
//!   scheduler); `command`/`args`, `env` values, `valueFrom` and `envFrom`, `workingDir`, ports,
//!   `exec`/`httpGet`/`tcpSocket` probes with their timings, `postStart`/`preStop` hooks,
//!   emptyDir/hostPath/configMap/secret/downwardAPI/projected volumes with `subPath`, sidecars,
//!   `restartPolicy`, `terminationGracePeriodSeconds`
//!   (the kubelet); `selector`, named `targetPort`s, `publishNotReadyAddresses`, selector-less
//!   Services (the endpoint controller); `sessionAffinity: ClientIP` with its timeout (the proxy);
//! - the defaults the apiserver itself fills in (`dnsPolicy: ClusterFirst`,
//!   `enableServiceLinks: true`, `imagePullPolicy`, `terminationMessagePath`, …): a client that
//!   reads an object and writes it back sends them, and warning about every pod helps no one, even
//!   where minik does nothing with them (no image pulls);
//! - fields whose request minik already meets by having no isolation at all (`hostPID`, `hostIPC`,
//!   `shareProcessNamespace`: every process sees the host's).
//!
//! minik simplifies: upstream warns only about deprecated or suspicious values; minik also lists
//! its own gaps. Create, update (PUT) and server-side apply warn about the whole object; merge,
//! JSON and strategic merge patches only about what the patch added (`handlers/write.rs`).

use std::fmt::Write;

use serde_json::Value;

/// The usual ending of a warning: minik stores the field and nothing reads it.
const IGNORED: &str = "is ignored";

/// Which values of a field warn.
#[derive(Clone, Copy, Debug)]
pub enum When {
    /// Any value that asks for something: not null, `false`, `0`, `""`, `[]` or `{}`.
    Set,
    /// One of these values (strings, or `true`/`false`); the warning names the value.
    Is(&'static [&'static str]),
    /// A string or boolean other than these (the defaults, or values minik honours); named too.
    /// An empty string is "unset" in Kubernetes' Go types, and does not warn. An entry ending in
    /// `*` stands for every value that starts with the rest (`metadata.labels['*`).
    IsNot(&'static [&'static str]),
}

/// One line of a table.
#[derive(Clone, Copy, Debug)]
pub enum Rule {
    /// The field at `path` (dotted, below the current object; `""` is the object itself) warns
    /// `minik: <path> [<value>] <says>` when its value matches `when`.
    Field {
        /// Where the field is: `spec.hostNetwork`, `valueFrom.secretKeyRef`.
        path: &'static str,
        /// Which of its values warn.
        when: When,
        /// What minik does with it: `is ignored`, `is not enforced`, …
        says: &'static str,
    },
    /// `rules` apply to the object at `path`, or to each item when it is a list (`containers`).
    In {
        /// Where the object or list is.
        path: &'static str,
        /// The rules for it, or for each of its items, with paths relative to it.
        rules: &'static [Rule],
    },
    /// Every field of the object at `path` except `keep` warns, named `<path>.<field>` (the
    /// source of a volume: `volumes[1].configMap`).
    OtherFields {
        /// Where the object is.
        path: &'static str,
        /// The fields minik implements.
        keep: &'static [&'static str],
        /// What minik does with the others.
        says: &'static str,
    },
    /// Every key of the map at `path` except `keep` warns, named `<path>[<key>]` (resource names:
    /// `resources.requests[nvidia.com/gpu]`).
    OtherKeys {
        /// Where the map is.
        path: &'static str,
        /// The keys minik implements.
        keep: &'static [&'static str],
        /// What minik does with the others.
        says: &'static str,
    },
}

use Rule::{Field, In, OtherFields, OtherKeys};
use When::{Is, IsNot, Set};

/// A [`Rule::Field`]: `field("spec.dnsPolicy", IsNot(&["ClusterFirst"]), "is ignored")`.
const fn field(path: &'static str, when: When, says: &'static str) -> Rule {
    Field { path, when, says }
}

/// The common case: the field is ignored whenever it is set.
const fn ignored(path: &'static str) -> Rule {
    field(path, Set, IGNORED)
}

/// A [`Rule::In`]: `rules` for the object, or each item of the list, at `path`.
const fn within(path: &'static str, rules: &'static [Rule]) -> Rule {
    In { path, rules }
}

/// The `fieldRef` paths the kubelet resolves (`field_value` in `kubelet/src/downward.rs`); any
/// other holds the container in `CreateContainerConfigError`.
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "metadata.labels",
    "metadata.annotations",
    "status.podIP",
    "status.podIPs",
    "status.hostIP",
    "status.hostIPs",
    "spec.nodeName",
    "spec.serviceAccountName",
    "metadata.labels['*",
    "metadata.annotations['*",
];

/// The ending of the warning about a `fieldRef` minik cannot resolve.
const UNRESOLVED: &str = "is not supported (the container cannot start)";

/// `kubelet/src/probes.rs`: `exec`, `httpGet` (always over http) and `tcpSocket`; a gRPC probe
/// has no handler there, so it fails every time.
#[rustfmt::skip]
const PROBE: &[Rule] = &[
    field("grpc",           Set,            "is not supported (the probe always fails)"),
    field("httpGet.scheme", Is(&["HTTPS"]), "is probed over plain HTTP"),
];

/// `kubelet/src/hooks.rs`: `exec`, `httpGet` (over http, like probes) and `sleep`. A `tcpSocket`
/// hook fails, as it does upstream, so it is not listed.
const HOOK: &[Rule] = &[field(
    "httpGet.scheme",
    Is(&["HTTPS"]),
    "is sent over plain HTTP",
)];

/// `env[i]`: `value`, ConfigMap and Secret keys, resources and [`ENV_FIELD_PATHS`] are resolved
/// (`kubelet/src/env.rs`).
const ENV_VAR: &[Rule] = &[field(
    "valueFrom.fieldRef.fieldPath",
    IsNot(ENV_FIELD_PATHS),
    UNRESOLVED,
)];

/// `volumeMounts[i]`: `kubelet/src/volumes.rs` links the volume (or its `subPath`) into the
/// container's tree; without mount namespaces nothing can be made read-only or propagated.
#[rustfmt::skip]
const VOLUME_MOUNT: &[Rule] = &[
    field("readOnly",          Set,                 "is not enforced"),
    field("recursiveReadOnly", IsNot(&["Disabled"]), IGNORED),
    field("mountPropagation",  IsNot(&["None"]),     IGNORED),
    field("subPathExpr",       Set,                 "is ignored (the whole volume is mounted)"),
];

/// `ports[i]` of a container: it binds its pod IP; nothing maps a node port to it.
const CONTAINER_PORT: &[Rule] = &[ignored("hostPort"), ignored("hostIP")];

/// A container, app or init: what the kubelet's `container_config`, probes and hooks read, and
/// what they do not.
#[rustfmt::skip]
const CONTAINER: &[Rule] = &[
    within("env", ENV_VAR),
    within("ports", CONTAINER_PORT),
    // Requests feed the scheduler (cpu and memory only); nothing enforces limits (no cgroups).
    field("resources.limits", Set, "is not enforced"),
    OtherKeys { path: "resources.requests", keep: &["cpu", "memory"], says: IGNORED },
    ignored("resources.claims"),
    ignored("resizePolicy"),
    // Processes run as the kubelet's user, with its capabilities.
    ignored("securityContext"),
    field("stdin", Set, "is ignored (stdin is /dev/null)"),
    ignored("stdinOnce"),
    ignored("tty"),
    ignored("volumeDevices"),
    within("volumeMounts", VOLUME_MOUNT),
    // The kubelet never reads a termination message; only non-default values are worth a word.
    field("terminationMessagePath",   IsNot(&["/dev/termination-log"]), IGNORED),
    field("terminationMessagePolicy", IsNot(&["File"]),                 IGNORED),
    field("lifecycle.stopSignal", Set, "is ignored (SIGTERM is sent)"),
    within("lifecycle.postStart", HOOK),
    within("lifecycle.preStop", HOOK),
    within("livenessProbe", PROBE),
    within("readinessProbe", PROBE),
    within("startupProbe", PROBE),
];

/// An init container: a container (`restartPolicy: Always`, a sidecar, is run as upstream does,
/// `kubelet/src/plan.rs`).
const INIT_CONTAINER: &[Rule] = &[within("", CONTAINER)];

/// What the kubelet mounts in place of a volume source it does not implement.
const EMPTY_DIRECTORY: &str = "is mounted as an empty directory";

/// `volumes[i]`: `kubelet/src/volumes.rs` implements `emptyDir` and `hostPath` (with its `type`),
/// `kubelet/src/projection.rs` configMap, secret, downwardAPI and projected; every other source
/// becomes an empty per-pod directory.
#[rustfmt::skip]
const VOLUME: &[Rule] = &[
    OtherFields {
        path: "",
        keep: &["name", "emptyDir", "hostPath", "configMap", "secret", "downwardAPI", "projected"],
        says: EMPTY_DIRECTORY,
    },
    ignored("emptyDir.medium"),
    ignored("emptyDir.sizeLimit"),
];

/// Pods: the scheduler (`scheduler/src/algorithm.rs`) filters on `nodeSelector`, required node
/// affinity, taints and tolerations and cpu/memory requests (with `overhead`); the kubelet runs the
/// rest of what is not listed here.
#[rustfmt::skip]
pub const POD: &[Rule] = &[
    // Scheduling: no scoring by preference, no inter-pod rules, no gates, FIFO without priority.
    ignored("spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution"),
    ignored("spec.affinity.podAffinity"),
    ignored("spec.affinity.podAntiAffinity"),
    ignored("spec.topologySpreadConstraints"),
    field("spec.schedulingGates", Set, "is ignored (the pod is scheduled at once)"),
    ignored("spec.priorityClassName"),
    ignored("spec.priority"),
    // `Never` is what minik does anyway: it never preempts.
    field("spec.preemptionPolicy", IsNot(&["Never"]), IGNORED),
    ignored("spec.resources"),
    ignored("spec.resourceClaims"),
    ignored("spec.runtimeClassName"),
    // The kubelet: no users, namespaces, DNS or /etc/hosts (it honours activeDeadlineSeconds and
    // readinessGates).
    ignored("spec.securityContext"),
    field("spec.hostNetwork", Set, "is ignored (the pod gets its own IP)"),
    field("spec.hostUsers", Is(&["false"]), IGNORED),
    ignored("spec.hostname"),
    ignored("spec.subdomain"),
    ignored("spec.setHostnameAsFQDN"),
    ignored("spec.hostAliases"),
    field("spec.dnsPolicy", IsNot(&["ClusterFirst"]), "is ignored (minik has no cluster DNS)"),
    ignored("spec.dnsConfig"),
    field("spec.imagePullSecrets", Set, "is ignored (minik pulls no images)"),
    within("spec.initContainers", INIT_CONTAINER),
    within("spec.containers", CONTAINER),
    within("spec.volumes", VOLUME),
];

/// `ports[i]` of a Service: the endpoint controller lists every protocol, but the proxy opens
/// TCP listeners only.
#[rustfmt::skip]
const SERVICE_PORT: &[Rule] = &[
    field("protocol", Is(&["UDP", "SCTP"]), "is not proxied (TCP only)"),
];

/// Services: the apiserver allocates one IPv4 cluster IP (`registry/services.rs`), the endpoint
/// controller fills Endpoints from the selector (named target ports, `publishNotReadyAddresses`),
/// and the proxy listens on `clusterIP:port` for TCP ports with `sessionAffinity`
/// (`proxy/src/service_port.rs`). NodePort and LoadBalancer Services get node ports
/// (`registry/node_ports.rs`) but nothing listens on them; `minik loadbalancer` serves
/// LoadBalancer Services on an address of their own. There is no DNS.
#[rustfmt::skip]
pub const SERVICE: &[Rule] = &[
    field("spec.type", Is(&["NodePort"]), "gets a node port, but nothing listens on it (minik has no node network)"),
    field("spec.type", Is(&["ExternalName"]), "is ignored (minik has no cluster DNS)"),
    ignored("spec.externalIPs"),
    field("spec.externalTrafficPolicy", Is(&["Local"]), IGNORED),
    field("spec.internalTrafficPolicy", Is(&["Local"]),
          "is ignored (every ready endpoint is used)"),
    ignored("spec.trafficDistribution"),
    ignored("spec.loadBalancerIP"),
    ignored("spec.loadBalancerSourceRanges"),
    ignored("spec.loadBalancerClass"),
    ignored("spec.healthCheckNodePort"),
    // The registry overwrites both with a single IPv4 family.
    field("spec.ipFamilyPolicy", IsNot(&["SingleStack"]), "is served as SingleStack"),
    within("spec.ipFamilies", &[field("", IsNot(&["IPv4"]), "is served as IPv4")]),
    within("spec.ports", SERVICE_PORT),
];

/// Nodes: the scheduler honours `unschedulable` and `NoSchedule`/`NoExecute` taints when it
/// places a pod; no controller evicts running pods, and there is no soft scoring.
#[rustfmt::skip]
pub const NODE: &[Rule] = &[within("spec.taints", &[
    field("effect", Is(&["NoExecute"]),        "does not evict running pods"),
    field("effect", Is(&["PreferNoSchedule"]), IGNORED),
])];

/// Deployments and ReplicaSets: the controllers honour every field of their own spec; the pods
/// they stamp from `spec.template` are pods, with a pod's gaps (`spec.template.spec.hostNetwork`).
pub const WORKLOAD: &[Rule] = &[within("spec.template", POD)];

/// Ingresses: minik's ingress controller routes HTTP to Services (`ingress/src/routes.rs`); it
/// terminates no TLS and routes to no other kind of backend.
#[rustfmt::skip]
pub const INGRESS: &[Rule] = &[
    field("spec.tls", Set, "is ignored (minik's ingress controller serves plain HTTP)"),
    field("spec.defaultBackend.resource", Set, "is not routed (minik's ingress controller routes to Services)"),
];

/// The table of a kind (none for the kinds minik implements entirely).
pub fn table(kind: &str) -> &'static [Rule] {
    match kind {
        "Pod" => POD,
        "Service" => SERVICE,
        "Node" => NODE,
        "Deployment"
        | "ReplicaSet"
        | "Job"
        | "ReplicationController"
        | "DaemonSet"
        | "StatefulSet" => WORKLOAD,
        "Ingress" => INGRESS,
        _ => &[],
    }
}

/// The warnings for an object of `kind` as the client sent it, in table order:
/// `minik: spec.containers[0].envFrom is ignored`.
pub fn warnings(kind: &str, object: &Value) -> Vec<String> {
    let mut walk = Walk {
        path: String::new(),
        found: Vec::new(),
    };
    walk.rules(table(kind), object);
    walk.found
}

/// The state of one walk: the path of the current object and the warnings so far.
struct Walk {
    path: String,
    found: Vec<String>,
}

impl Walk {
    /// Applies each rule of a table to `object`.
    fn rules(&mut self, rules: &[Rule], object: &Value) {
        for rule in rules {
            match *rule {
                Field { path, when, says } => self.check(object, path, when, says),
                In { path, rules } => self.nested(object, path, rules),
                OtherFields { path, keep, says } => self.others(object, path, keep, says, false),
                OtherKeys { path, keep, says } => self.others(object, path, keep, says, true),
            }
        }
    }

    /// Warns if the field at `path` is there with a value that matches `when`.
    fn check(&mut self, object: &Value, path: &str, when: When, says: &str) {
        let Some(value) = lookup(object, path) else {
            return;
        };
        let warning = match when {
            Set if is_set(value) => format!("minik: {} {says}", self.join(path)),
            Set => return,
            Is(values) => match as_text(value) {
                Some(text) if values.contains(&text) => {
                    format!("minik: {} {text} {says}", self.join(path))
                }
                _ => return,
            },
            IsNot(values) => match as_text(value) {
                Some(text) if is_set(value) && !values.iter().any(|v| allows(v, text)) => {
                    format!("minik: {} {text} {says}", self.join(path))
                }
                _ => return,
            },
        };
        self.found.push(warning);
    }

    /// Runs `rules` on the object at `path`, or on each item of the list there.
    fn nested(&mut self, object: &Value, path: &str, rules: &[Rule]) {
        let Some(inner) = lookup(object, path) else {
            return;
        };
        let mark = self.path.len();
        self.push_field(path);
        match inner {
            Value::Array(items) => {
                let base = self.path.len();
                for (index, item) in items.iter().enumerate() {
                    self.path.truncate(base);
                    let _ = write!(self.path, "[{index}]");
                    self.rules(rules, item);
                }
            }
            Value::Object(_) => self.rules(rules, inner),
            _ => {}
        }
        self.path.truncate(mark);
    }

    /// Warns for each field (or map key) at `path` that is not in `keep`.
    fn others(&mut self, object: &Value, path: &str, keep: &[&str], says: &str, as_key: bool) {
        let Some(Value::Object(fields)) = lookup(object, path) else {
            return;
        };
        for name in fields.keys().filter(|name| !keep.contains(&name.as_str())) {
            let at = self.join(path);
            self.found.push(if as_key {
                format!("minik: {at}[{name}] {says}")
            } else if at.is_empty() {
                format!("minik: {name} {says}")
            } else {
                format!("minik: {at}.{name} {says}")
            });
        }
    }

    /// Appends `path` to the current path, as `.path`.
    fn push_field(&mut self, path: &str) {
        if !path.is_empty() {
            if !self.path.is_empty() {
                self.path.push('.');
            }
            self.path.push_str(path);
        }
    }

    /// The full path of a field below the current object.
    fn join(&self, path: &str) -> String {
        match (self.path.is_empty(), path.is_empty()) {
            (_, true) => self.path.clone(),
            (true, false) => path.to_string(),
            (false, false) => format!("{}.{path}", self.path),
        }
    }
}

/// The value at a dotted path (`""` is the object itself).
fn lookup<'v>(object: &'v Value, path: &str) -> Option<&'v Value> {
    if path.is_empty() {
        return Some(object);
    }
    path.split('.')
        .try_fold(object, |value, key| value.get(key))
}

/// Whether a field asks for something: not null, false, 0, "" or empty.
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::Bool(true) => true,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64() != Some(0.0),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Whether an [`When::IsNot`] entry covers `text`: equal, or a `prefix*` it starts with.
fn allows(entry: &str, text: &str) -> bool {
    match entry.strip_suffix('*') {
        Some(prefix) => text.starts_with(prefix),
        None => entry == text,
    }
}

/// A string or boolean value as text, for [`When::Is`] and [`When::IsNot`].
fn as_text(value: &Value) -> Option<&str> {
    match value {
        Value::String(s) => Some(s),
        Value::Bool(true) => Some("true"),
        Value::Bool(false) => Some("false"),
        _ => None,
    }
}

#[cfg(test)]
#[path = "ignored_fields_tests.rs"]
mod tests;

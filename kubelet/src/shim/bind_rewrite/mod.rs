//! Bind rewriting: each pod's wildcard listeners land on its own IP, so two pods can both serve
//! `0.0.0.0:8080`, and nothing they listen on appears on the host's other addresses.
//!
//! Kubernetes counterpart: the pod's network namespace, set up by the runtime and its CNI plugin
//! (`RunPodSandbox`; `containernetworking/plugins:plugins/main/bridge`). minik cannot use one: a
//! network namespace has its own loopback device, and minik's pod and Service addresses live in
//! 127.0.0.0/8, which inside a namespace is always local to it. So minik keeps the host's network
//! and rewrites addresses instead (issue 18, point 6): each container's processes run under a
//! seccomp filter that passes their `bind(2)` and `connect(2)` calls to a supervisor thread of
//! their shim (`filter.rs`), which decides (`decision.rs`, pure) and acts (`supervisor.rs`):
//!
//! - `bind(0.0.0.0:P)` or `bind(127.0.0.1:P)` becomes `bind(POD_IP:P)`; a dual-stack IPv6
//!   `bind([::]:P)` becomes `bind([::ffff:POD_IP]:P)`; an IPv6-only one is refused
//!   (`EADDRNOTAVAIL`);
//! - `connect(127.0.0.1:P)` becomes `connect(POD_IP:P)` when the pod listens there, so the
//!   containers of a pod reach each other on localhost;
//! - everything else runs unchanged. Static binaries are covered too (this is why seccomp and
//!   not `LD_PRELOAD`), and so are the children of the process: the filter is inherited.
//!
//! Where the kernel lacks seccomp user notification (Linux < 5.9 for `pidfd_getfd`, or seccomp
//! disabled), [`support`] says why, the kubelet starts containers as before (a wildcard bind
//! takes the port on every host address) and says so in each pod's events.
//!
//! minik simplifies: only `bind` and `connect` (not `sendto`/`sendmsg` of unconnected UDP to
//! 127.0.0.1), IPv4 pod addresses only, and the rewriting is a convenience, not isolation.

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::OwnedFd;
use std::process::Command;
use std::sync::OnceLock;

mod binder;
pub mod decision;
mod filter;
mod supervisor;

pub use binder::Binder;
use filter::ListenerChannel;

/// Whether this machine can rewrite binds (`Err` says why not), checked once per process.
pub fn support() -> &'static Result<(), String> {
    static SUPPORT: OnceLock<Result<(), String>> = OnceLock::new();
    SUPPORT.get_or_init(filter::detect)
}

/// One line for `minik version --verbose` and the kubelet's start log.
pub fn describe() -> String {
    match support() {
        Ok(()) => "wildcard binds rewritten to the pod IP (seccomp user notification)".into(),
        Err(why) => format!("unavailable ({why}): pods bind on the host's addresses"),
    }
}

/// A process about to be spawned with its binds rewritten to `pod_ip`.
pub struct BindRewrite {
    pod_ip: Ipv4Addr,
    channel: ListenerChannel,
    /// Binds privileged ports from the host's user namespace (`binder.rs`).
    binder: Option<Binder>,
}

impl BindRewrite {
    /// The spawn-path hook: when `pod_ip` is set, makes `cmd`'s process install the filter.
    pub fn prepare(cmd: &mut Command, pod_ip: Option<Ipv4Addr>) -> io::Result<Option<Self>> {
        let Some(pod_ip) = pod_ip else {
            return Ok(None);
        };
        let channel = ListenerChannel::new()?;
        channel.attach(cmd);
        Ok(Some(BindRewrite {
            pod_ip,
            channel,
            binder: None,
        }))
    }

    /// The same for tokio's `Command` (the kubelet's exec probes and hooks).
    pub fn prepare_tokio(
        cmd: &mut tokio::process::Command,
        pod_ip: Option<Ipv4Addr>,
    ) -> io::Result<Option<Self>> {
        let Some(pod_ip) = pod_ip else {
            return Ok(None);
        };
        let channel = ListenerChannel::new()?;
        channel.attach_tokio(cmd);
        Ok(Some(BindRewrite {
            pod_ip,
            channel,
            binder: None,
        }))
    }

    /// Privileged binds go through `binder` when this process is in a user namespace of its own.
    pub fn with_binder(mut self, binder: Option<Binder>) -> Self {
        self.binder = binder;
        self
    }

    /// After the spawn succeeded: receives the filter's listener and starts the supervisor
    /// thread, which ends by itself once the process and all its children are gone.
    /// `on_error` hears why it stopped early (the calls then fail with `ENOSYS`).
    pub fn supervise(self, on_error: fn(&str)) -> io::Result<()> {
        let listener: OwnedFd = self.channel.receive()?;
        let (pod_ip, binder) = (self.pod_ip, self.binder);
        std::thread::Builder::new()
            .name("bind-rewrite".into())
            .spawn(move || {
                if let Err(errno) = supervisor::run(listener, pod_ip, binder.as_ref()) {
                    on_error(&format!("bind rewriting stopped: {errno}"));
                }
            })?;
        Ok(())
    }
}

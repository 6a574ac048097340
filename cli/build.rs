//! Links the `minik` binary as a fixed-address (non-PIE) executable.
//!
//! Kubernetes counterpart: `hack/lib/golang.sh` builds the statically linked control-plane binaries
//! (kube-apiserver, kube-scheduler, kube-controller-manager, kube-proxy) as plain, non-PIE
//! executables; only the dynamically linked kubelet is PIE (kubernetes/kubernetes#102323).
//!
//! Why: `minik up` runs ten processes of this one binary. As a PIE, each process relocates its
//! own copy of `.data.rel.ro` at start (95,000 relative relocations: vtables, string tables),
//! which turns 1.6 MB of file pages into private dirty memory per process — 16 MB for an idle
//! one-node cluster, a fifth of its proportional set size. At a fixed address the linker resolves
//! those pointers once, and the pages stay clean and shared. The objects are still compiled as
//! position-independent code (no dependency is rebuilt); only the final link changes. The cost is
//! that the executable's own segments are not randomised (shared libraries, heap and stacks still
//! are).

fn main() {
    // Only on Linux with a GNU-style linker driver; other targets keep rustc's default.
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    let env = std::env::var("CARGO_CFG_TARGET_ENV").unwrap_or_default();
    if os == "linux" && env == "gnu" {
        println!("cargo:rustc-link-arg-bins=-no-pie");
    }
    println!("cargo:rerun-if-changed=build.rs");
}

//! minik-kubelet: placeholder while the crate is being built.

//! minik-endpoint-controller: placeholder while the crate is being built.

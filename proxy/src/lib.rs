//! minik-proxy: placeholder while the crate is being built.

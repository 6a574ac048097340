//! minik-client: placeholder while the crate is being built.

//! minik-scheduler: placeholder while the crate is being built.

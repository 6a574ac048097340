//! minik-tests: placeholder while the crate is being built.

//! minik-apiserver: placeholder while the crate is being built.
pub mod storage;

//! The `minik` binary: placeholder while the CLI is being built.
fn main() {}

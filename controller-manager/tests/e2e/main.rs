//! The controller manager against a real minik apiserver (in memory, on 127.0.0.1:0).
//!
//! - `leader`: two candidates on one Lease; one leads, the other takes over when it stops.

mod cluster;
mod leader;

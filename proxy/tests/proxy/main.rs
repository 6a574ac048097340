//! Integration tests of the proxy's core, driven without an apiserver: the tests build Service and
//! Endpoints objects, hand them to a real `Proxier` (or to the sync loop through channels), and send
//! real TCP traffic to real backends on 127.244.9.x (any 127.0.0.0/8 address binds on Linux).

// Test fixtures: backends that answer with their own address, object builders, a proxier harness.
mod support;
// Round robin, dead backends, no endpoints, fallback listeners, endpoint changes.
mod routing;
// Node ports: served on the node address, following the Service, conflicts reported.
mod node_ports;
// The sync delay holds Endpoints changes back without blocking Service changes.
mod sync_delay;
// /metrics, /proxies and /applied over HTTP.
mod http;
// The whole proxy (`serve`) against a real in-process apiserver: watches, listeners, Events.
mod cluster;
// One connection's byte path: small exchanges copied, bulk spliced, half-closes passed on.
mod forwarding;
// Throughput and added latency against a direct connection (`#[ignore]`: run with --ignored).
mod bench;

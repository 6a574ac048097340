//! The node count during `minik demo rollout --max-nodes N`: small nodes, a cluster autoscaler,
//! and a line of Nodes over time under the pods' chart.
//!
//! Kubernetes counterpart: seed 002's cost of long shutdowns: 40 replicas with a 120 s preStop
//! leave 80 pods for two minutes, "which might trigger the cluster autoscaler and create new
//! nodes; the same nodes must be removed and the cluster downscaled" afterwards. With
//! `--max-nodes`, the demo's private cluster has nodes just big enough for the replicas (each pod
//! asks for [`POD_CPU`]), and runs the cluster autoscaler (`cluster-autoscaler/`): the old pods
//! lingering in their preStop make the new ones Unschedulable, nodes are added, and removed again
//! once the old pods are gone.
//!
//! What it simplifies: the Nodes are listed every 200 ms (a sample, not every change); the
//! scale-down is waited for a bounded time and reported as found.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use minik_api::core::Node;
use minik_client::{Api, Client, ListParams};
use tokio_util::sync::CancellationToken;

/// The cpu each demo pod asks for when the nodes are small.
pub const POD_CPU: &str = "100m";
const POD_MILLIS: u64 = 100;
/// The demo's private cluster starts with this many nodes.
pub const START_NODES: usize = 2;

/// The kubelets' size: room for half the largest run's replicas per node, plus a little, so the
/// starting nodes hold one release and a rollout's surge of old and new pods does not fit.
pub fn node_cpu(largest_run: usize) -> String {
    let per_node = largest_run.div_ceil(START_NODES).max(1) as u64;
    format!("{}m", per_node * POD_MILLIS + POD_MILLIS / 2)
}

/// The autoscaler of a rollout demo: quick scans and a scale-down time of 60 s divided by the
/// speed. Its utilisation threshold is 0.9 rather than upstream's 0.5: nodes this small are
/// never half empty with a pod on them, and an added node must go once the old pods are gone.
pub fn autoscaler(max_nodes: u8, speed: f64) -> minik_cluster_autoscaler::Config {
    let unneeded = Duration::from_secs_f64(60.0 / speed).max(Duration::from_secs(3));
    minik_cluster_autoscaler::Config {
        max_nodes_total: max_nodes.into(),
        scan_interval: Duration::from_millis(500),
        scale_down_unneeded_time: unneeded,
        scale_down_utilization_threshold: 0.9,
        ..Default::default()
    }
}

/// Node counts over time, ms after a start.
pub type NodeSamples = Arc<Mutex<Vec<(f64, usize)>>>;

/// Lists the Nodes every 200 ms until `stop`, recording their count when it changes.
pub fn sample(client: &Client, started: Instant, stop: CancellationToken) -> NodeSamples {
    let samples: NodeSamples = Arc::default();
    let nodes: Api<Node> = Api::all(client.clone());
    let out = samples.clone();
    tokio::spawn(async move {
        loop {
            if let Ok(list) = nodes.list(&ListParams::default()).await {
                let count = list.items.len();
                let mut samples = out.lock().expect("node samples");
                if samples.last().map(|&(_, c)| c) != Some(count) {
                    samples.push((started.elapsed().as_secs_f64() * 1000.0, count));
                }
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    });
    samples
}

/// The most nodes in `samples`, and the count of the last one.
pub fn peak_and_last(samples: &[(f64, usize)]) -> (usize, usize) {
    let peak = samples.iter().map(|&(_, c)| c).max().unwrap_or(0);
    (peak, samples.last().map_or(0, |&(_, c)| c))
}

/// Waits up to `bound` for the node count to be back to `target`; when it happened (ms after
/// the samples' start), if it did.
pub async fn wait_back(samples: &NodeSamples, target: usize, bound: Duration) -> Option<f64> {
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        let last = samples.lock().ok()?.last().copied();
        if let Some((at, _)) = last.filter(|&(_, c)| c <= target) {
            return Some(at);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    None
}

/// A step line of the node count, on the pods' chart's time axis (`start_ms` to `end_ms`).
pub fn svg(samples: &[(f64, usize)], start_ms: f64, end_ms: f64) -> String {
    const WIDTH: f64 = 1100.0;
    const LEFT: f64 = 60.0;
    const HEIGHT: f64 = 120.0;
    let end = end_ms.max(start_ms + 1000.0);
    let x = |t: f64| {
        LEFT + (t.clamp(start_ms, end) - start_ms) / (end - start_ms) * (WIDTH - LEFT - 20.0)
    };
    let most = samples.iter().map(|&(_, c)| c).max().unwrap_or(1).max(1) as f64;
    let y = |c: usize| 20.0 + (1.0 - c as f64 / most) * (HEIGHT - 50.0);
    let mut path = String::new();
    for (i, &(t, count)) in samples.iter().enumerate() {
        if i == 0 {
            path.push_str(&format!("M{:.1},{:.1}", x(t), y(count)));
        } else {
            path.push_str(&format!(" H{:.1} V{:.1}", x(t), y(count)));
        }
    }
    if let Some(&(_, count)) = samples.last() {
        path.push_str(&format!(" H{:.1} V{:.1}", x(end), y(count)));
    }
    let labels: String = samples
        .iter()
        .map(|&(t, c)| {
            format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"11\">{c}</text>",
                x(t) + 2.0,
                y(c) - 3.0
            )
        })
        .collect();
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" width=\"100%\" style=\"max-width:{WIDTH}px\" class=\"chart\" data-series=\"nodes\">\
<text x=\"4\" y=\"14\" font-size=\"12\">Nodes (the cluster autoscaler's, most {most})</text>\
<path d=\"{path}\" fill=\"none\" stroke=\"#2d3748\" stroke-width=\"2\"><title>nodes</title></path>{labels}\
<line x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" stroke=\"#a0aec0\"/></svg>",
        HEIGHT - 30.0,
        WIDTH - 20.0,
        HEIGHT - 30.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_hold_half_the_replicas_and_a_little() {
        assert_eq!(node_cpu(3), "250m");
        assert_eq!(node_cpu(40), "2050m");
    }

    #[test]
    fn the_line_has_a_step_per_change() {
        let samples = [(0.0, 2), (1000.0, 4), (5000.0, 2)];
        assert_eq!(peak_and_last(&samples), (4, 2));
        let svg = svg(&samples, 0.0, 6000.0);
        assert_eq!(svg.matches(" V").count(), 3);
        assert!(svg.contains("data-series=\"nodes\""));
    }
}

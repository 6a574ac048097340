//! A watch on the pods of a Deployment (or two), tallied by ReplicaSet and state as they change.
//!
//! Kubernetes counterpart: `kubectl get pods -l app=web -w`, with client-go's informer pattern
//! (list, then watch from the list's resourceVersion, so nothing is missed in between). The
//! rollout and rainbow demos wait on it ("until every new pod is Ready and every old one gone")
//! and draw the [`Census`] it fills; the live view is redrawn while it waits.

use std::time::{Duration, Instant};

use futures::stream::{BoxStream, StreamExt};
use minik_api::core::Pod;
use minik_api::WatchEvent;
use minik_client::{Api, Client, ListParams};

use super::census::Census;
use super::live::LiveView;
use super::load::Tally;
/// A watch on the pods of a label selector, feeding a [`Census`].
pub struct PodWatch {
    stream: BoxStream<'static, minik_client::Result<WatchEvent<Pod>>>,
    origin: Instant,
    /// The pods seen so far.
    pub census: Census,
}

impl PodWatch {
    /// Lists the pods of `selector` and watches them from there.
    pub async fn start(
        client: &Client,
        namespace: &str,
        selector: &str,
    ) -> crate::Result<PodWatch> {
        let api = Api::<Pod>::namespaced(client.clone(), namespace);
        let params = ListParams::default().labels(selector);
        let list = api.list(&params).await?;
        let version = list.metadata.resource_version.unwrap_or_default();
        let stream = api.watch(&params.clone().timeout(900), &version).await?;
        let mut census = Census::default();
        for pod in &list.items {
            census.apply(pod, 0.0);
        }
        Ok(PodWatch {
            stream,
            origin: Instant::now(),
            census,
        })
    }

    /// Counts time from `origin` on; the samples so far collapse into one at 0.
    pub fn restart(&mut self, origin: Instant) {
        self.origin = origin;
        let mut now = self.census.current();
        now.t_ms = 0.0;
        self.census.samples = vec![now];
    }

    /// Applies events until `done(census)` holds.
    pub async fn until(
        &mut self,
        bound: Duration,
        waiting_for: &str,
        mut done: impl FnMut(&Census) -> bool,
    ) -> crate::Result<()> {
        let mut live = LiveView::new(false);
        let tally = Tally::default();
        self.until_live(bound, waiting_for, &mut live, &tally, |census, _| {
            done(census)
        })
        .await
    }

    /// Applies events, redrawing `live`, until `done(census, t_ms)` holds.
    pub async fn until_live(
        &mut self,
        bound: Duration,
        waiting_for: &str,
        live: &mut LiveView,
        tally: &Tally,
        mut done: impl FnMut(&Census, f64) -> bool,
    ) -> crate::Result<()> {
        let deadline = tokio::time::Instant::now() + bound;
        let mut redraw = tokio::time::interval(Duration::from_millis(100));
        while !done(&self.census, ms_since(self.origin)) {
            tokio::select! {
                _ = tokio::time::sleep_until(deadline) => {
                    crate::error::bail!("timed out after {bound:?} waiting for {waiting_for}")
                }
                _ = redraw.tick() => live.update(&self.census, ms_since(self.origin), &tally.summary()),
                event = self.stream.next() => {
                    let t_ms = ms_since(self.origin);
                    match event {
                        Some(Ok(WatchEvent::Added(pod) | WatchEvent::Modified(pod))) => { self.census.apply(&pod, t_ms); }
                        Some(Ok(WatchEvent::Deleted(pod))) => { self.census.remove(&pod, t_ms); }
                        Some(_) => {}
                        None => crate::error::bail!("the pod watch ended while waiting for {waiting_for}"),
                    }
                }
            }
        }
        Ok(())
    }
}

pub fn ms_since(origin: Instant) -> f64 {
    origin.elapsed().as_secs_f64() * 1000.0
}

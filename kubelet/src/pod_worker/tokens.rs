//! The pod worker's ServiceAccount tokens: the `serviceAccountToken` sources of projected volumes.
//!
//! Kubernetes counterpart: the token manager (`pkg/kubelet/token/token_manager.go`) and the
//! projected volume's `collectData` for `serviceAccountToken` (`pkg/volume/projected/
//! projected.go`). The kubelet asks the TokenRequest API for a token bound to the pod
//! (docs/security.md, "The token volume"), writes it at the source's `path` with the volume's
//! files (atomically, `atomic_writer.rs`), and asks again once 80 % of its life has passed (or
//! after a day); a failed refresh keeps the old token (S9). A plain-http cluster has no
//! TokenRequest API (404): the file is left empty, as documented.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Volume};
use tokio::time::Instant;
use tracing::{info, warn};

use crate::pod_worker::PodWorker;
use crate::projection::{FileProjection, Payload, DEFAULT_MODE};

/// A token the worker holds for one `serviceAccountToken` source.
#[derive(Clone, Debug)]
pub struct HeldToken {
    pub value: String,
    /// When to ask again: 80 % of its life, at most a day.
    pub refresh_at: Timestamp,
}

/// When to refresh a token issued at `issued` that expires at `expires` (upstream
/// `requiresRefresh`: past 80 % of the TTL, or older than 24 h).
pub fn refresh_at(issued: Timestamp, expires: Timestamp) -> Timestamp {
    let life = expires.duration_since(issued).unsigned_abs();
    let wait = life.mul_f64(0.8).min(Duration::from_secs(24 * 3600));
    issued + jiff::SignedDuration::try_from(wait).unwrap_or_default()
}

/// `(volume, path, audience, expirationSeconds)` of every token source in the pod.
fn sources(pod: &Pod) -> Vec<(String, String, Option<String>, i64)> {
    let volumes = pod.spec.iter().flat_map(|s| s.volumes.iter().flatten());
    volumes
        .flat_map(|v: &Volume| {
            let projections = v.projected.iter().flat_map(|p| p.sources.iter().flatten());
            projections
                .filter_map(|p| p.service_account_token.clone())
                .map(|t| {
                    let expiration = t.expiration_seconds.unwrap_or(3600);
                    (v.name.clone(), t.path, t.audience, expiration)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

impl PodWorker {
    /// Requests the tokens that are missing or due for a refresh; wakes the worker for the next.
    pub(crate) async fn refresh_tokens(&mut self, pod: &Pod) {
        let now = Timestamp::now();
        for (volume, path, audience, expiration) in sources(pod) {
            let key = format!("{volume}/{path}");
            if self.tokens.get(&key).is_some_and(|t| t.refresh_at > now) {
                continue;
            }
            let audiences: Vec<String> = audience.into_iter().collect();
            match self
                .ctx
                .reporter
                .request_token(pod, &audiences, expiration)
                .await
            {
                Ok(Some((value, expires))) => {
                    info!(pod = %self.key, %volume, %expires, "service account token issued");
                    let refresh_at = refresh_at(now, expires);
                    self.tokens.insert(key, HeldToken { value, refresh_at });
                }
                Ok(None) => {
                    // No TokenRequest API (plain http): an empty file, asked again in a minute.
                    let refresh_at = now + jiff::SignedDuration::from_secs(60);
                    let value = String::new();
                    self.tokens
                        .entry(key)
                        .or_insert(HeldToken { value, refresh_at })
                        .refresh_at = refresh_at;
                }
                Err(error) => {
                    warn!(pod = %self.key, %volume, %error, "token request failed; keeping the old one");
                    let retry = now + jiff::SignedDuration::from_secs(5);
                    if let Some(held) = self.tokens.get_mut(&key) {
                        held.refresh_at = retry;
                    }
                }
            }
        }
        if let Some(next) = self.tokens.values().map(|t| t.refresh_at).min() {
            let wait = next.duration_since(Timestamp::now()).unsigned_abs();
            self.wake_at(Instant::now() + wait.max(Duration::from_secs(1)));
        }
    }

    /// Adds the held tokens of `volume` to its files (mode: the volume's `defaultMode`).
    pub(crate) fn add_tokens(&self, volume: &Volume, files: &mut Payload) {
        let Some(projected) = &volume.projected else {
            return;
        };
        let mode = projected.default_mode.map_or(DEFAULT_MODE, |m| m as u32);
        for source in projected.sources.iter().flatten() {
            let Some(token) = &source.service_account_token else {
                continue;
            };
            let key = format!("{}/{}", volume.name, token.path);
            if let Some(held) = self.tokens.get(&key) {
                let data = held.value.clone().into_bytes();
                files.insert(token.path.clone(), FileProjection { data, mode });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_refreshed_at_80_percent_of_its_life_or_after_a_day() {
        let issued: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let hour = issued + jiff::SignedDuration::from_secs(3600);
        assert_eq!(refresh_at(issued, hour).to_string(), "2026-01-01T00:48:00Z");
        let year = issued + jiff::SignedDuration::from_hours(24 * 365);
        assert_eq!(refresh_at(issued, year).to_string(), "2026-01-02T00:00:00Z");
    }
}

//! `--storage`: which backend the apiserver keeps its objects in.
//!
//! Kubernetes counterpart: kube-apiserver's `--storage-backend` and `--etcd-servers` /
//! `--etcd-prefix` (`k8s.io/apiserver/pkg/server/options/etcd.go`), folded into one flag:
//! `sled` (durable, embedded; the default), `memory` (nothing on disk: `minik up --ephemeral`) or
//! `etcd://HOST:PORT[/PREFIX]` (an etcd v3 cluster, several apiservers may share it).

use std::fmt;
use std::str::FromStr;

/// The parsed value of `--storage`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum StorageSpec {
    /// The embedded durable store in `DATA_DIR/sled`.
    #[default]
    Sled,
    /// In memory only: lost when the server stops.
    Memory,
    /// An etcd v3 endpoint (`http://host:port` for the gRPC client) and the key prefix every
    /// key is stored under (empty: keys are `/registry/...` as upstream's default prefix).
    Etcd {
        /// `http://127.0.0.1:2379`.
        endpoint: String,
        /// `/minik-a` for `etcd://127.0.0.1:2379/minik-a`; empty by default.
        prefix: String,
    },
}

/// A `--storage` value that is none of the three forms.
#[derive(Debug, thiserror::Error)]
#[error("--storage {0:?}: expected sled, memory or etcd://HOST:PORT[/PREFIX]")]
pub struct BadStorageSpec(String);

impl FromStr for StorageSpec {
    type Err = BadStorageSpec;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "sled" => return Ok(StorageSpec::Sled),
            "memory" => return Ok(StorageSpec::Memory),
            _ => {}
        }
        let rest = text
            .strip_prefix("etcd://")
            .filter(|rest| !rest.is_empty())
            .ok_or_else(|| BadStorageSpec(text.into()))?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(BadStorageSpec(text.into()));
        }
        let path = path.trim_end_matches('/');
        Ok(StorageSpec::Etcd {
            endpoint: format!("http://{authority}"),
            prefix: if path.is_empty() {
                String::new()
            } else {
                format!("/{path}")
            },
        })
    }
}

impl fmt::Display for StorageSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StorageSpec::Sled => f.write_str("sled"),
            StorageSpec::Memory => f.write_str("memory"),
            StorageSpec::Etcd { endpoint, prefix } => {
                let authority = endpoint.trim_start_matches("http://");
                write!(f, "etcd://{authority}{prefix}")
            }
        }
    }
}

#[cfg(test)]
mod unit {
    use super::*;

    #[test]
    fn parses_the_three_forms_and_prints_them_back() {
        for text in [
            "sled",
            "memory",
            "etcd://127.0.0.1:2379",
            "etcd://127.0.0.1:2379/a/b",
        ] {
            let spec: StorageSpec = text.parse().expect(text);
            assert_eq!(spec.to_string(), text);
        }
        assert_eq!(
            "etcd://127.0.0.1:2379/x/".parse::<StorageSpec>().unwrap(),
            StorageSpec::Etcd {
                endpoint: "http://127.0.0.1:2379".into(),
                prefix: "/x".into()
            }
        );
    }

    #[test]
    fn refuses_anything_else() {
        for text in ["", "etcd://", "etcd:///x", "postgres://db", "SLED"] {
            assert!(text.parse::<StorageSpec>().is_err(), "{text:?}");
        }
    }
}

//! `minik logs POD [-c CONTAINER] [-f] [--tail N] [--previous] [--timestamps]`.
//!
//! Kubernetes counterpart: `kubectl logs` (`staging/src/k8s.io/kubectl/pkg/cmd/logs/logs.go`). The
//! apiserver's `pods/{name}/log` proxies to the kubelet of the pod's node, which reads the
//! container's log file. Like kubectl, minik picks the container when none is named: the one in the
//! `kubectl.kubernetes.io/default-container` annotation, else the first, saying so on stderr.

use std::io::Write;

use anyhow::{bail, Context};
use futures::StreamExt;

use minik_api::core::Pod;
use minik_client::{Api, LogParams};

use super::resources::GlobalFlags;

/// Flags of `minik logs`.
#[derive(clap::Args, Debug)]
pub struct LogsArgs {
    /// The pod (`web` or `pod/web`).
    pub pod: String,
    /// The container (needed only when the pod has several).
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Keep streaming new lines until the container's log ends.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// Only the last N lines (-1: all).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub tail: i64,
    /// The logs of the previous instance of the container (after a restart).
    #[arg(short = 'p', long)]
    pub previous: bool,
    /// Prefix each line with its timestamp.
    #[arg(long)]
    pub timestamps: bool,
}

/// Runs `minik logs`.
pub async fn logs(args: LogsArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let name = match args.pod.split_once('/') {
        Some(("pod" | "pods" | "po", name)) => name.to_string(),
        Some((kind, _)) => bail!("cannot get the logs of a {kind}: only pods have logs in minik"),
        None => args.pod.clone(),
    };
    let pods: Api<Pod> = Api::namespaced(flags.client()?, flags.namespace());
    let container = match args.container.clone() {
        Some(container) => container,
        None => default_container(&pods.get(&name).await?)?,
    };
    let params = LogParams {
        container: Some(container),
        follow: args.follow,
        tail_lines: (args.tail >= 0).then_some(args.tail),
        previous: args.previous,
        timestamps: args.timestamps,
    };
    let mut stdout = std::io::stdout();
    if !args.follow {
        stdout.write_all(pods.logs(&name, &params).await?.as_bytes())?;
        return Ok(());
    }
    let mut stream = pods.log_stream(&name, &params).await?;
    while let Some(chunk) = stream.next().await {
        stdout.write_all(&chunk?).context("writing to stdout")?;
        stdout.flush()?;
    }
    Ok(())
}

/// The container kubectl would pick: the annotated default, else the only or first one.
fn default_container(pod: &Pod) -> anyhow::Result<String> {
    let names: Vec<String> = pod
        .spec
        .as_ref()
        .map(|spec| spec.containers.iter().map(|c| c.name.clone()).collect())
        .unwrap_or_default();
    let annotated = pod
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("kubectl.kubernetes.io/default-container"))
        .cloned();
    if let Some(annotated) = annotated.filter(|name| names.contains(name)) {
        return Ok(annotated);
    }
    match names.as_slice() {
        [] => bail!(
            "pod {:?} has no containers",
            pod.metadata.name.clone().unwrap_or_default()
        ),
        [only] => Ok(only.clone()),
        [first, ..] => {
            eprintln!(
                "Defaulted container \"{first}\" out of: {}",
                names.join(", ")
            );
            Ok(first.clone())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_annotated_container_is_the_default_else_the_first() {
        let mut pod: Pod = serde_json::from_value(json!({"metadata": {"name": "web"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}]}})).unwrap();
        assert_eq!(default_container(&pod).unwrap(), "a");
        pod.metadata.annotations = Some(
            [(
                "kubectl.kubernetes.io/default-container".to_string(),
                "b".to_string(),
            )]
            .into(),
        );
        assert_eq!(default_container(&pod).unwrap(), "b");
    }
}

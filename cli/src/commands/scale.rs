//! `minik scale deployment/NAME --replicas=N` (and `rs`): a write of the `scale` subresource.
//!
//! Kubernetes counterpart: `kubectl scale` (`staging/src/k8s.io/kubectl/pkg/cmd/scale/scale.go`),
//! which PATCHes `…/deployments/NAME/scale` (an `autoscaling/v1` Scale) with the merge patch
//! `{"spec":{"replicas":N}}`, so that only the replica count is written, never the rest of the
//! spec. `--current-replicas` is a precondition, checked against the Scale read first (kubectl
//! sends it as a resourceVersion-guarded update; minik reads then patches). minik simplifies: no
//! `--timeout` wait, no `-f`, no `-l`/`--all`.

use anyhow::bail;
use reqwest::Method;
use serde_json::{json, Value};

use minik_api::ResourceInfo;
use minik_client::Patch;

use super::resources::{object_path, targets, GlobalFlags};
use crate::printers::kind_prefix;

/// Flags of `minik scale`.
#[derive(clap::Args, Debug)]
pub struct ScaleArgs {
    /// KIND NAME…, or KIND/NAME…
    #[arg(required = true, value_name = "KIND [NAME]")]
    pub args: Vec<String>,
    /// The new number of replicas.
    #[arg(long)]
    pub replicas: i32,
    /// Scale only if the current count is this (-1: whatever it is).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub current_replicas: i32,
}

/// Runs `minik scale`.
pub async fn scale(args: ScaleArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    if args.replicas < 0 {
        bail!(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0"
        );
    }
    let client = flags.client()?;
    for (info, name) in targets(&args.args)? {
        let Some(name) = name else {
            bail!("resource(s) were provided, but no name was specified");
        };
        check_scalable(info)?;
        let path = format!("{}/scale", object_path(info, flags.namespace(), &name));
        if args.current_replicas >= 0 {
            let scale = client.request_json(Method::GET, &path, None).await?;
            check_current(&scale, args.current_replicas)?;
        }
        client
            .patch_json(&path, &Patch::Merge(replicas_patch(args.replicas)))
            .await?;
        println!("{}/{name} scaled", kind_prefix(info));
    }
    Ok(())
}

/// The patch kubectl sends to the Scale.
pub fn replicas_patch(replicas: i32) -> Value {
    json!({"spec": {"replicas": replicas}})
}

fn check_scalable(info: &ResourceInfo) -> anyhow::Result<()> {
    if !matches!(info.kind, "Deployment" | "ReplicaSet") {
        bail!(
            "cannot scale {}: minik scales deployments and replicasets",
            info.plural
        );
    }
    Ok(())
}

/// kubectl's precondition message when `--current-replicas` does not match.
fn check_current(scale: &Value, expected: i32) -> anyhow::Result<()> {
    let actual = scale
        .pointer("/spec/replicas")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if actual != i64::from(expected) {
        bail!("Expected replicas to be {expected}, was {actual}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::resources::kind;

    #[test]
    fn scale_patches_only_the_replicas_and_checks_the_precondition() {
        assert_eq!(replicas_patch(3), json!({"spec": {"replicas": 3}}));
        let scale = json!({"kind": "Scale", "spec": {"replicas": 2}});
        assert!(check_current(&scale, 2).is_ok());
        assert_eq!(
            check_current(&scale, 5).unwrap_err().to_string(),
            "Expected replicas to be 5, was 2"
        );
        assert!(check_scalable(kind("rs").unwrap()).is_ok());
        assert!(check_scalable(kind("po").unwrap()).is_err());
    }
}

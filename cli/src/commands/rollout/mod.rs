//! `minik rollout status|history|undo|pause|resume|restart deployment/NAME`.
//!
//! Kubernetes counterpart: `kubectl rollout` (`staging/src/k8s.io/kubectl/pkg/cmd/rollout/`) and
//! the Deployment helpers it calls (`pkg/polymorphichelpers/`: `rollout_status.go`,
//! `history.go`, `rollback.go`, `objectpauser.go`, `objectresumer.go`, `objectrestarter.go`).
//! Each verb is a read, a decision made by a pure function, then one PATCH; `status` follows the
//! Deployment on a watch. minik simplifies: Deployments only (no DaemonSets or StatefulSets, which
//! minik does not serve), no `--dry-run`, no `-o` for `history`.

mod history;
mod patch;
mod status;

use std::time::Duration;

use anyhow::bail;

use minik_api::apps::Deployment;
use minik_api::ResourceInfo;
use minik_client::Api;

use super::resources::GlobalFlags;
use super::workloads::kind_and_name;

/// Flags of `minik rollout`.
#[derive(clap::Args, Debug)]
pub struct RolloutArgs {
    #[command(subcommand)]
    pub verb: RolloutVerb,
}

/// The rollout verbs.
#[derive(clap::Subcommand, Debug)]
pub enum RolloutVerb {
    /// Follow a Deployment's rollout until it is complete (or fails its progress deadline).
    Status(StatusArgs),
    /// List a Deployment's revisions (or show one with `--revision N`).
    History(HistoryArgs),
    /// Go back to the previous revision (or `--to-revision N`).
    Undo(UndoArgs),
    /// Stop the Deployment controller from rolling out template changes.
    Pause(TargetArgs),
    /// Let a paused Deployment roll out again.
    Resume(TargetArgs),
    /// Replace every pod, by stamping the template with `kubectl.kubernetes.io/restartedAt`.
    Restart(TargetArgs),
}

/// `deployment/NAME` or `deployment NAME`.
#[derive(clap::Args, Debug)]
pub struct TargetArgs {
    /// KIND/NAME, or KIND NAME.
    #[arg(required = true, value_name = "KIND/NAME")]
    pub args: Vec<String>,
}

/// Flags of `rollout status`.
#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// KIND/NAME, or KIND NAME.
    #[arg(required = true, value_name = "KIND/NAME")]
    pub args: Vec<String>,
    /// Keep watching until the rollout is done (`--watch=false`: print the status once).
    #[arg(short = 'w', long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub watch: bool,
    /// Give up after this long (`0s`: wait as long as it takes).
    #[arg(long, default_value = "0s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// Flags of `rollout history`.
#[derive(clap::Args, Debug)]
pub struct HistoryArgs {
    /// KIND/NAME, or KIND NAME.
    #[arg(required = true, value_name = "KIND/NAME")]
    pub args: Vec<String>,
    /// Show this revision's pod template instead of the list (0: the list).
    #[arg(long, default_value_t = 0)]
    pub revision: i64,
}

/// Flags of `rollout undo`.
#[derive(clap::Args, Debug)]
pub struct UndoArgs {
    /// KIND/NAME, or KIND NAME.
    #[arg(required = true, value_name = "KIND/NAME")]
    pub args: Vec<String>,
    /// The revision to go back to (0: the one before the current).
    #[arg(long, default_value_t = 0)]
    pub to_revision: i64,
}

/// Runs `minik rollout VERB`.
pub async fn rollout(args: RolloutArgs, flags: &GlobalFlags) -> anyhow::Result<()> {
    let client = flags.client()?;
    let api: Api<Deployment> = Api::namespaced(client, flags.namespace());
    match args.verb {
        RolloutVerb::Status(args) => {
            let name = deployment_name(&args.args, "status")?;
            status::status(&api, &name, args.watch, args.timeout).await
        }
        RolloutVerb::History(args) => {
            let name = deployment_name(&args.args, "history")?;
            history::history(&api, &name, args.revision).await
        }
        RolloutVerb::Undo(args) => {
            let name = deployment_name(&args.args, "undo")?;
            history::undo(&api, &name, args.to_revision).await
        }
        RolloutVerb::Pause(args) => {
            patch::pause(&api, &deployment_name(&args.args, "pause")?).await
        }
        RolloutVerb::Resume(args) => {
            patch::resume(&api, &deployment_name(&args.args, "resume")?).await
        }
        RolloutVerb::Restart(args) => {
            patch::restart(&api, &deployment_name(&args.args, "restart")?).await
        }
    }
}

/// The Deployment's name, or kubectl's error for a kind that has no rollouts.
fn deployment_name(args: &[String], verb: &str) -> anyhow::Result<String> {
    let (info, name) = kind_and_name(args)?;
    check_kind(info, verb)?;
    Ok(name)
}

fn check_kind(info: &ResourceInfo, verb: &str) -> anyhow::Result<()> {
    if info.kind != "Deployment" {
        bail!(
            "{verb} is not supported for {}.{}: minik rolls out deployments only",
            info.plural,
            info.group()
        );
    }
    Ok(())
}

/// `deployment.apps/NAME`, how kubectl names the object in its answers.
fn named(name: &str) -> String {
    format!("deployment.apps/{name}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(line: &str) -> RolloutVerb {
        let args = std::iter::once("minik").chain(line.split_whitespace());
        match crate::commands::Cli::try_parse_from(args).map(|cli| cli.command) {
            Ok(crate::commands::Command::Rollout(args)) => args.verb,
            other => panic!("{line}: {other:?}"),
        }
    }

    #[test]
    fn rollout_verbs_parse_as_kubectls() {
        assert!(matches!(
            parse("rollout status deployment/web --timeout=90s"),
            RolloutVerb::Status(StatusArgs { timeout, watch: true, .. }) if timeout == Duration::from_secs(90)
        ));
        assert!(matches!(
            parse("rollout status deploy web --watch=false"),
            RolloutVerb::Status(StatusArgs { watch: false, .. })
        ));
        assert!(matches!(
            parse("rollout undo deployment/web --to-revision=2"),
            RolloutVerb::Undo(UndoArgs { to_revision: 2, .. })
        ));
        assert!(matches!(
            parse("rollout restart deploy/web"),
            RolloutVerb::Restart(_)
        ));
        assert!(deployment_name(&["rs/web".to_string()], "status").is_err());
        assert_eq!(
            deployment_name(&["deployments/web".to_string()], "status").unwrap(),
            "web"
        );
    }
}

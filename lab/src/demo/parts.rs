//! Each part of the demo run on its cluster: its flags, its narration header, its JSON result
//! and its sections of the HTML report.
//!
//! Kubernetes counterpart: none (the tour's table of contents). The parts themselves are in
//! `create.rs`, `race.rs`, `hooks.rs`, `rollout.rs` and `rainbow.rs`; this file only wires their
//! options in and their results out.

use std::time::Duration;

use serde_json::json;

use super::cluster::{DemoCluster, Flags};
use super::report::{self, Section};
use super::{
    chart, create, hooks, job, nodes, predict, race, rainbow, rainbow_report, rollout, DemoOptions,
    Part,
};

/// The flags a part's private cluster runs with: the race's slow, non-retrying proxy, quick
/// ingress and batched load balancer; defaults otherwise.
pub fn cluster_flags(part: Part, args: &DemoOptions) -> Flags {
    match part {
        Part::Race => Flags {
            proxy: vec![
                "--sync-delay".into(),
                fmt(args.sync_delay),
                "--dial-attempts".into(),
                "1".into(),
            ],
            ingress: vec!["--sync-delay".into(), fmt(args.ingress_delay)],
            loadbalancer: vec!["--batch-period".into(), fmt(args.batch_period)],
            ..Flags::default()
        },
        Part::Rollout if args.max_nodes.is_some() => {
            let largest = args.replicas.unwrap_or(10).max(args.large_replicas);
            let speed = args.speed.unwrap_or(4.0);
            Flags {
                kubelet: vec!["--cpu".into(), nodes::node_cpu(largest)],
                autoscaler: args.max_nodes.map(|max| nodes::autoscaler(max, speed)),
                ..Flags::default()
            }
        }
        _ => Flags::default(),
    }
}

type Results = serde_json::Map<String, serde_json::Value>;

/// Runs one part, adding its JSON result and its report sections.
pub async fn run_part(
    part: Part,
    args: &DemoOptions,
    cluster: &DemoCluster,
    narrate: bool,
    results: &mut Results,
    sections: &mut Vec<Section>,
) -> crate::Result<()> {
    let client = &cluster.client;
    match part {
        Part::Create => {
            if narrate {
                println!("\n== create: apply a pod and a service, and follow the pipeline (times since the apply)");
            }
            let result = create::run(client, "default", narrate).await?;
            let origin_ms = result.timeline.origin.map(|at| at.as_millisecond());
            let timeline = json!({"timeline": result.timeline.marks, "origin_ms": origin_ms});
            results.insert("create".into(), timeline);
            sections.push(Section {
                title: "create".into(),
                caption: "From apply to the first request routed to the new pod.".into(),
                svg: report::timeline_svg(&result.timeline, &[]),
            });
        }
        Part::Race => race_part(args, cluster, narrate, results, sections).await?,
        Part::Hooks => hooks_part(args, cluster, narrate, results, sections).await?,
        Part::Job => job_part(args, cluster, narrate, results, sections).await?,
        Part::Rollout => {
            let options = rollout::RolloutOptions {
                speed: args.speed.unwrap_or(4.0),
                replicas: args.replicas.unwrap_or(10),
                large_replicas: args.large_replicas,
                rate: args.rate.min(100),
                small_nodes: args.max_nodes.is_some(),
            };
            if narrate {
                println!(
                    "\n== rollout: seed 002's rolling updates, every duration divided by {}",
                    options.speed
                );
            }
            let runs = rollout::run(client, "default", &options, narrate).await?;
            results.insert(
                "rollout".into(),
                json!({"speed": options.speed, "runs": runs}),
            );
            for run in runs {
                // With nodes, the axis runs on to the scale-down.
                let end_ms =
                    (run.finished_ms + 500.0).max(run.nodes_back_ms.unwrap_or(0.0) + 500.0);
                let mut svg =
                    chart::svg(&run.groups, &run.samples, &run.outcomes, end_ms, "requests");
                let mut caption = format!(
                    "Times after the image was changed. Peak: {} pods ({} old, {} new; {} Ready, {} Terminating). {} requests through the Service, {} failed.",
                    run.peak.pods, run.peak.old, run.peak.new, run.peak.ready, run.peak.terminating, run.requests, run.failed
                );
                if let Some(peak) = run.node_peak {
                    let start = run.samples.first().map_or(0.0, |s| s.t_ms).min(0.0);
                    svg.push_str(&nodes::svg(&run.node_samples, start, end_ms));
                    caption.push_str(&format!(
                        " Nodes: {} at the start, {peak} at the peak, {} at the end.",
                        nodes::START_NODES,
                        run.nodes_after.unwrap_or(peak)
                    ));
                }
                sections.push(Section {
                    title: format!("rollout: {}", run.name),
                    caption,
                    svg,
                });
            }
        }
        Part::Rainbow => {
            let options = rainbow::RainbowOptions {
                speed: args.speed.unwrap_or(4.0),
                replicas: args.replicas.unwrap_or(4),
                connections: args.connections,
                ingress: cluster.consumers.map(|c| c.ingress),
            };
            if narrate {
                println!("\n== rainbow: {} long-lived connections through the ingress, every duration divided by {}", options.connections, options.speed);
            }
            let result = rainbow::run(client, "default", &options, narrate).await?;
            results.insert("rainbow".into(), serde_json::to_value(&result)?);
            sections.extend(rainbow_report::sections(&result));
        }
    }
    Ok(())
}

async fn race_part(
    args: &DemoOptions,
    cluster: &DemoCluster,
    narrate: bool,
    results: &mut Results,
    sections: &mut Vec<Section>,
) -> crate::Result<()> {
    if narrate {
        println!(
            "\n== race: delete a pod under load; the proxy applies endpoint changes {} late, the ingress {}, the load balancer every {} (none retries but the ingress)",
            fmt(args.sync_delay), fmt(args.ingress_delay), fmt(args.batch_period)
        );
    }
    let options = race::RaceOptions {
        replicas: args.replicas.unwrap_or(3),
        rate: args.rate,
        warmup: Duration::from_secs(1),
        sync_delay: args.sync_delay,
        pre_stop: args.race_pre_stop(),
        batch_period: args.batch_period,
        consumers: cluster.consumers,
    };
    let variants = race::run(&cluster.client, "default", &options, narrate).await?;
    if narrate {
        race::print_table(&variants);
    }
    results.insert("race".into(), json!({"variants": variants}));
    for variant in variants {
        let per_consumer: Vec<String> = variant
            .consumers
            .iter()
            .map(|c| format!("{} failed via {}", c.failed, c.name))
            .collect();
        let caption = format!(
            "{} requests, {} failed ({}). Times are relative to the delete; only what followed it is drawn.",
            variant.requests,
            variant.failed,
            per_consumer.join(", ")
        );
        let names: Vec<String> = variant
            .outcomes
            .iter()
            .map(|(n, _)| format!("via {n}"))
            .collect();
        let series: Vec<report::Series<'_>> = names
            .iter()
            .zip(&variant.outcomes)
            .map(|(name, (_, list))| (name.as_str(), list.as_slice()))
            .collect();
        sections.push(Section {
            title: format!("race: {}", variant.name),
            caption,
            svg: report::timeline_svg(&variant.timeline, &series),
        });
    }
    Ok(())
}

async fn hooks_part(
    args: &DemoOptions,
    cluster: &DemoCluster,
    narrate: bool,
    results: &mut Results,
    sections: &mut Vec<Section>,
) -> crate::Result<()> {
    let hooks = predict::Hooks {
        post_start: args.post_start,
        pre_stop: args.hooks_pre_stop(),
        grace: args.grace,
        shutdown: Some(args.shutdown),
    };
    if narrate {
        println!(
            "\n== hooks: postStart {}, preStop {}, grace {}, app shutdown {}",
            fmt(hooks.post_start),
            fmt(hooks.pre_stop),
            fmt(hooks.grace),
            fmt(args.shutdown)
        );
    }
    let result = hooks::run(&cluster.client, "default", &hooks, narrate).await?;
    if narrate {
        hooks::print_comparison(&result.comparison);
    }
    results.insert("hooks".into(), serde_json::to_value(&result)?);
    sections.push(Section {
        title: "hooks: start".into(),
        caption: "Relative to the process start.".into(),
        svg: report::timeline_svg(&result.start, &[]),
    });
    sections.push(Section {
        title: "hooks: termination".into(),
        caption: "Relative to the delete.".into(),
        svg: report::timeline_svg(&result.termination, &[]),
    });
    Ok(())
}

async fn job_part(
    args: &DemoOptions,
    cluster: &DemoCluster,
    narrate: bool,
    results: &mut Results,
    sections: &mut Vec<Section>,
) -> crate::Result<()> {
    let options = job::JobOptions {
        speed: args.speed.unwrap_or(4.0),
        units: 20,
        delete_after: 8,
    };
    if narrate {
        println!(
            "\n== job: a Job of {} units of work, its pod deleted after unit {}; every duration divided by {}",
            options.units, options.delete_after, options.speed
        );
    }
    let runs = job::run(&cluster.client, "default", &options, narrate).await?;
    if narrate {
        job::print_table(&runs);
    }
    results.insert("job".into(), json!({"speed": options.speed, "runs": runs}));
    for run in runs {
        sections.push(Section {
            title: format!("job: {}", run.name),
            caption: format!(
                "Times after the Job was created. Pod 1 stopped after unit {}; pod 2 started at unit {}: {} units ({:.0} ms) lost, {}/{} units run, succeeded {}, failed {}, complete after {:.0} ms.",
                run.cost.done_by_first, run.cost.resumed_from, run.cost.units_lost, run.work_lost_ms,
                run.cost.units_run, run.units, run.succeeded, run.failed, run.completed_ms
            ),
            svg: report::timeline_svg(&run.timeline, &[]),
        });
    }
    Ok(())
}

fn fmt(duration: Duration) -> String {
    humantime::format_duration(duration).to_string()
}

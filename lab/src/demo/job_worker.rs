//! The batch worker of `minik demo job`: its Job manifest, and what its log says it did.
//!
//! Kubernetes counterpart: a batch Job (`batch/v1`, `restartPolicy: Never`) whose container
//! works through `UNITS` units of work and keeps its progress in a volume. With
//! `CHECKPOINT=yes` it traps SIGTERM, writes how far it got and exits inside the grace period;
//! a replacement pod then resumes from that checkpoint. Without it, SIGTERM's default action
//! ends the process and the progress dies with it. The Job asks for
//! `podReplacementPolicy: Failed` (upstream's JobPodReplacementPolicy): the replacement starts
//! only once the old pod has stopped, so it never reads a checkpoint still being written and two
//! workers never run at once.
//!
//! What it simplifies: the volume is a `hostPath` directory (both demo nodes are the same
//! machine), not a PersistentVolumeClaim; the worker is a shell loop of `sleep`s (the `busybox`
//! image is the host's shell). Every line it prints is `event=NAME t=RFC3339 n=UNITS`.

use std::path::Path;
use std::time::Duration;

use jiff::Timestamp;
use minik_api::batch::Job;
use serde::Serialize;
use serde_json::json;

/// The worker: counts units, prints one line per unit, checkpoints on SIGTERM if asked.
const SCRIPT: &str = r#"now() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
n=0
if [ "$CHECKPOINT" = yes ] && [ -f /progress/units ]; then n=$(cat /progress/units); fi
echo "event=started t=$(now) n=$n"
if [ "$CHECKPOINT" = yes ]; then
  trap 'echo $n > /progress/units; echo "event=checkpoint t=$(now) n=$n"; exit 143' TERM
fi
while [ "$n" -lt "$UNITS" ]; do
  sleep "$UNIT_SECONDS"
  n=$((n+1))
  echo "event=unit t=$(now) n=$n"
done
echo "event=done t=$(now) n=$n"
"#;

/// How the demo's Job is built.
pub struct WorkerJob<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// Units of work to finish.
    pub units: u32,
    /// How long one unit takes.
    pub unit: Duration,
    /// Whether the worker checkpoints on SIGTERM.
    pub checkpoint: bool,
    /// The host directory its progress is kept in.
    pub progress_dir: &'a Path,
    /// `terminationGracePeriodSeconds`.
    pub grace_seconds: i64,
}

impl WorkerJob<'_> {
    /// The Job object.
    pub fn build(&self) -> Job {
        let job = json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": self.name},
            "spec": {
                "completions": 1,
                "parallelism": 1,
                "backoffLimit": 6,
                "podReplacementPolicy": "Failed",
                "template": {"spec": {
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": self.grace_seconds,
                    "containers": [{
                        "name": "worker",
                        "image": "busybox",
                        "command": ["sh", "-c", SCRIPT],
                        "env": [
                            {"name": "UNITS", "value": self.units.to_string()},
                            {"name": "UNIT_SECONDS", "value": format!("{:.3}", self.unit.as_secs_f64())},
                            {"name": "CHECKPOINT", "value": if self.checkpoint { "yes" } else { "no" }},
                        ],
                        "volumeMounts": [{"name": "progress", "mountPath": "/progress"}],
                    }],
                    "volumes": [{"name": "progress", "hostPath": {
                        "path": self.progress_dir.display().to_string(),
                        "type": "DirectoryOrCreate",
                    }}],
                }},
            },
        });
        serde_json::from_value(job).expect("the demo's Job manifest is a valid Job")
    }
}

/// One line of the worker's log: what, when, and how many units were done then.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkerLine {
    /// `started`, `unit`, `checkpoint`, `done`.
    pub event: String,
    /// When the worker printed it.
    pub at: Timestamp,
    /// Units done at that moment.
    pub units: u32,
}

/// Reads one `event=NAME t=RFC3339 n=UNITS` line; anything else is `None`.
pub fn parse_line(line: &str) -> Option<WorkerLine> {
    let (mut event, mut at, mut units) = (None, None, None);
    for field in line.split_whitespace() {
        if let Some(value) = field.strip_prefix("event=") {
            event = Some(value.to_string());
        } else if let Some(value) = field.strip_prefix("t=") {
            at = value.parse::<Timestamp>().ok();
        } else if let Some(value) = field.strip_prefix("n=") {
            units = value.parse().ok();
        }
    }
    Some(WorkerLine {
        event: event?,
        at: at?,
        units: units?,
    })
}

/// Every worker line of a log.
pub fn parse_log(log: &str) -> Vec<WorkerLine> {
    log.lines().filter_map(parse_line).collect()
}

/// What one interrupted run cost, from the logs of the deleted pod and of its replacement.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Cost {
    /// Units the first pod had finished when it stopped.
    pub done_by_first: u32,
    /// The units its checkpoint recorded (`None`: it wrote none).
    pub checkpoint: Option<u32>,
    /// Where the replacement started.
    pub resumed_from: u32,
    /// Finished units done again: `done_by_first − resumed_from`.
    pub units_lost: u32,
    /// Units run in all, by both pods (the Job needed `units`).
    pub units_run: u32,
    /// Times the work was reported done (a Job completes once).
    pub done_lines: usize,
}

/// The cost of the interruption, read from both logs.
pub fn cost(first: &[WorkerLine], second: &[WorkerLine]) -> Cost {
    let last_units = |lines: &[WorkerLine]| lines.iter().map(|l| l.units).max().unwrap_or(0);
    let done_by_first = last_units(first);
    let checkpoint = first
        .iter()
        .find(|line| line.event == "checkpoint")
        .map(|line| line.units);
    let resumed_from = second
        .iter()
        .find(|line| line.event == "started")
        .map_or(0, |line| line.units);
    let done_lines = first
        .iter()
        .chain(second)
        .filter(|line| line.event == "done")
        .count();
    Cost {
        done_by_first,
        checkpoint,
        resumed_from,
        units_lost: done_by_first.saturating_sub(resumed_from),
        units_run: done_by_first + last_units(second).saturating_sub(resumed_from),
        done_lines,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(text: &str) -> Vec<WorkerLine> {
        parse_log(text)
    }

    #[test]
    fn a_worker_line_gives_its_event_time_and_units() {
        let line = parse_line("event=unit t=2026-11-26T01:00:00.250Z n=3").unwrap();
        assert_eq!(line.event, "unit");
        assert_eq!(line.units, 3);
        assert_eq!(
            line.at,
            "2026-11-26T01:00:00.25Z".parse::<Timestamp>().unwrap()
        );
        assert_eq!(parse_line("sh: something else"), None);
    }

    #[test]
    fn without_a_checkpoint_the_replacement_starts_over_and_the_work_is_lost() {
        let first = lines(
            "event=started t=2026-11-26T01:00:00Z n=0\nevent=unit t=2026-11-26T01:00:01Z n=1\nevent=unit t=2026-11-26T01:00:02Z n=2\n",
        );
        let second = lines(
            "event=started t=2026-11-26T01:00:05Z n=0\nevent=unit t=2026-11-26T01:00:06Z n=1\nevent=unit t=2026-11-26T01:00:07Z n=2\nevent=unit t=2026-11-26T01:00:08Z n=3\nevent=done t=2026-11-26T01:00:08Z n=3\n",
        );
        let cost = cost(&first, &second);
        assert_eq!(cost.done_by_first, 2);
        assert_eq!(cost.checkpoint, None);
        assert_eq!((cost.resumed_from, cost.units_lost), (0, 2));
        assert_eq!((cost.units_run, cost.done_lines), (5, 1));
    }

    #[test]
    fn with_a_checkpoint_the_replacement_resumes_and_nothing_is_lost() {
        let first = lines(
            "event=started t=2026-11-26T01:00:00Z n=0\nevent=unit t=2026-11-26T01:00:01Z n=1\nevent=unit t=2026-11-26T01:00:02Z n=2\nevent=checkpoint t=2026-11-26T01:00:02.1Z n=2\n",
        );
        let second = lines(
            "event=started t=2026-11-26T01:00:05Z n=2\nevent=unit t=2026-11-26T01:00:06Z n=3\nevent=done t=2026-11-26T01:00:06Z n=3\n",
        );
        let cost = cost(&first, &second);
        assert_eq!((cost.checkpoint, cost.resumed_from), (Some(2), 2));
        assert_eq!(
            (cost.units_lost, cost.units_run, cost.done_lines),
            (0, 3, 1)
        );
    }

    #[test]
    fn the_job_waits_for_the_old_pod_and_mounts_the_progress_directory() {
        let job = WorkerJob {
            name: "job-demo",
            units: 20,
            unit: Duration::from_millis(250),
            checkpoint: true,
            progress_dir: Path::new("/tmp/progress"),
            grace_seconds: 5,
        }
        .build();
        let spec = job.spec.unwrap();
        assert_eq!(spec.pod_replacement_policy.as_deref(), Some("Failed"));
        let pod = spec.template.spec.unwrap();
        let env = pod.containers[0].env.clone().unwrap();
        assert_eq!(env[1].value.as_deref(), Some("0.250"));
        assert_eq!(env[2].value.as_deref(), Some("yes"));
        let volume = &pod.volumes.unwrap()[0];
        assert_eq!(volume.host_path.as_ref().unwrap().path, "/tmp/progress");
    }
}

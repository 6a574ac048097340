//! The ratios of `minik bench --compare`: one figure of minik over the same figure of a peer (or of
//! the goal), turned into a report [`Row`].
//!
//! Kubernetes counterpart: none; perf-tests compares a run with thresholds, not with other programs.
//! A ratio ≥ 1.0× always means "minik is at least as good": for throughputs it is minik ÷ peer, for
//! costs (memory, latency) it is peer ÷ minik. A peer that is not installed or failed gives a row
//! that says so and has no verdict, never an error for the whole run.

use super::super::report::Row;

/// What the peer's side of a comparison came to.
#[derive(Clone, Debug, PartialEq)]
pub enum Peer {
    /// The peer ran and gave this figure.
    Measured(f64),
    /// The peer's program is not on this machine (`which` found nothing): the row says so.
    NotInstalled(String),
    /// The peer ran but the measurement failed.
    Failed(String),
}

/// Whether a bigger figure is better (throughput) or worse (memory, latency).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Better {
    Higher,
    Lower,
}

/// One comparison: minik's figure against a peer's (or a goal's) figure.
#[derive(Clone, Debug)]
pub struct Comparison {
    /// The row id (`compare_creates_vs_etcd`, …).
    pub id: &'static str,
    /// What is compared, for people.
    pub measurement: &'static str,
    /// Who minik is compared with (`etcd 3.4 bare puts`, `goal`).
    pub peer_name: &'static str,
    /// The unit both figures are in (`/s`, ` MB`, ` ms`, ` req/s`).
    pub unit: &'static str,
    /// Which direction is better.
    pub better: Better,
    /// minik's figure, or why there is none (its section did not run or failed).
    pub minik: Result<f64, String>,
    /// The peer's figure.
    pub peer: Peer,
}

/// The ratio every comparison is held to: parity.
pub const TARGET: f64 = 1.0;

impl Comparison {
    /// The ratio, ≥ 1.0 when minik is at least as good; `None` when a side is missing or zero.
    pub fn ratio(&self) -> Option<f64> {
        let minik = *self.minik.as_ref().ok()?;
        let Peer::Measured(peer) = self.peer else {
            return None;
        };
        let (top, bottom) = match self.better {
            Better::Higher => (minik, peer),
            Better::Lower => (peer, minik),
        };
        (bottom > 0.0 && top.is_finite()).then(|| top / bottom)
    }

    /// The report row: `0.45× (minik 4,807/s, etcd 10,612/s)`, or what is missing.
    pub fn row(&self) -> Row {
        let row = Row::new(self.id, self.measurement, "≥ 1.0×", self.peer_name);
        let minik = match &self.minik {
            Ok(value) => format!("minik {}", figure(*value, self.unit)),
            Err(why) => format!("minik not measured: {why}"),
        };
        let peer = match &self.peer {
            Peer::Measured(value) => format!("{} {}", self.peer_name, figure(*value, self.unit)),
            Peer::NotInstalled(program) => format!("{program} not installed"),
            Peer::Failed(why) => format!("{} failed: {why}", self.peer_name),
        };
        let row = match (&self.minik, &self.peer) {
            (Ok(value), _) => row.value("minik", *value),
            _ => row,
        };
        let row = match &self.peer {
            Peer::Measured(value) => row.value("peer", *value),
            _ => row,
        };
        match self.ratio() {
            Some(ratio) => row
                .result(format!("{ratio:.2}× ({minik}, {peer})"))
                .value("ratio", ratio)
                .met(ratio >= TARGET),
            None => row.result(format!("– ({minik}; {peer})")),
        }
    }
}

/// `4,807/s`, `67.9 MB`, `0.412 ms`: the figure in its unit.
fn figure(value: f64, unit: &str) -> String {
    if unit == " ms" {
        return super::super::report::ms(value);
    }
    if value >= 100.0 {
        format!(
            "{}{unit}",
            super::super::report::thousands(value.round() as u64)
        )
    } else {
        format!("{value:.1}{unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn creates(minik: Result<f64, String>, peer: Peer) -> Comparison {
        Comparison {
            id: "compare_creates_vs_etcd",
            measurement: "creates vs etcd puts",
            peer_name: "etcd",
            unit: "/s",
            better: Better::Higher,
            minik,
            peer,
        }
    }

    /// Throughputs divide minik by the peer: 4 807 creates/s against 10 612 puts/s is 0.45×.
    #[test]
    fn throughput_ratio_is_minik_over_peer() {
        let row = creates(Ok(4807.0), Peer::Measured(10612.0)).row();
        assert_eq!(row.result, "0.45× (minik 4,807/s, etcd 10,612/s)");
        assert_eq!(row.met, Some(false));
        assert_eq!(row.values["ratio"], serde_json::json!(0.453));
    }

    /// Costs divide the peer (or goal) by minik, so that ≥ 1.0× still means "as good or better".
    #[test]
    fn cost_ratio_is_peer_over_minik() {
        let rss = Comparison {
            id: "compare_idle_rss",
            measurement: "idle RSS",
            peer_name: "goal",
            unit: " MB",
            better: Better::Lower,
            minik: Ok(40.0),
            peer: Peer::Measured(50.0),
        };
        assert_eq!(rss.ratio(), Some(1.25));
        assert_eq!(rss.row().met, Some(true));
        assert_eq!(rss.row().result, "1.25× (minik 40.0 MB, goal 50.0 MB)");
    }

    /// A missing peer is reported, without a verdict and without failing anything.
    #[test]
    fn a_missing_peer_says_not_installed() {
        let row = creates(Ok(4807.0), Peer::NotInstalled("etcd".into())).row();
        assert_eq!(row.result, "– (minik 4,807/s; etcd not installed)");
        assert_eq!(row.met, None);
        assert!(row.values.get("ratio").is_none());
    }

    /// A section that did not run leaves minik's side empty; a zero peer gives no ratio.
    #[test]
    fn missing_or_zero_sides_give_no_ratio() {
        let row = creates(Err("section api not run".into()), Peer::Measured(9000.0)).row();
        assert_eq!(
            row.result,
            "– (minik not measured: section api not run; etcd 9,000/s)"
        );
        assert_eq!(creates(Ok(1.0), Peer::Measured(0.0)).ratio(), None);
        let failed = creates(Ok(1.0), Peer::Failed("exit 1".into())).row();
        assert!(failed.result.contains("etcd failed: exit 1"));
    }
}

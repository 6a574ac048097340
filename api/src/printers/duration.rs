//! AGE: Kubernetes' `HumanDuration`, the short, rounded ages kubectl prints (`45s`, `3m2s`, `5h`, `12d`).
//!
//! Kubernetes counterpart: `staging/src/k8s.io/apimachinery/pkg/util/duration/duration.go`
//! (`HumanDuration`). The thresholds matter: below 2 minutes seconds are shown, below 10 minutes
//! minutes and seconds, below 3 hours minutes only, and so on; humantime's `1m 30s` is not what
//! users of kubectl expect.

use jiff::Timestamp;

/// `HumanDuration` of `seconds` (negative ages come from clock skew).
pub fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    let minutes = seconds / 60;
    let hours = seconds / 3600;
    let days = hours / 24;
    let years = days / 365;
    if seconds < 60 * 2 {
        format!("{seconds}s")
    } else if minutes < 10 {
        match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        }
    } else if minutes < 60 * 3 {
        format!("{minutes}m")
    } else if hours < 8 {
        match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        }
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        match hours % 24 {
            0 => format!("{days}d"),
            h => format!("{days}d{h}h"),
        }
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        match days % 365 {
            0 => format!("{years}y"),
            d => format!("{years}y{d}d"),
        }
    } else {
        format!("{years}y")
    }
}

/// The age of a timestamp at `now`, or `<unknown>` when there is none (kubectl's `translateTimestampSince`).
pub fn age(since: Option<Timestamp>, now: Timestamp) -> String {
    match since {
        Some(since) => human_duration(now.as_second() - since.as_second()),
        None => "<unknown>".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_follow_the_human_duration_thresholds() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (185, "3m5s"),
            (599, "9m59s"),
            (600, "10m"),
            (3 * 3600 - 1, "179m"),
            (3 * 3600, "3h"),
            (3 * 3600 + 25 * 60, "3h25m"),
            (8 * 3600, "8h"),
            (47 * 3600, "47h"),
            (48 * 3600, "2d"),
            (7 * 86400 + 5 * 3600, "7d5h"),
            (8 * 86400, "8d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (3 * 365 * 86400 + 10 * 86400, "3y10d"),
            (8 * 365 * 86400, "8y"),
        ];
        for (seconds, expected) in cases {
            assert_eq!(human_duration(seconds), expected, "{seconds}s");
        }
    }
}

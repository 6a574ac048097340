//! Cron schedules as CronJobs write them: five fields or a macro, and the next time they fire.
//!
//! Kubernetes counterpart: `github.com/robfig/cron/v3`'s `ParseStandard` and `SpecSchedule.Next`,
//! which the CronJob controller and its validation use. Fields are minute, hour, day of month,
//! month (1–12 or JAN–DEC) and day of week (0–6 or SUN–SAT, 7 is Sunday too); each is `*` (or
//! `?` for the two day fields), a value, a range `a-b`, a step `*/n`, `a-b/n` or `a/n`, or a comma
//! list of those. The macros are `@yearly` (`@annually`), `@monthly`, `@weekly`, `@daily`
//! (`@midnight`) and `@hourly`. As in robfig, when both day fields are restricted a day matches if
//! either does; when one is `*`, both must.
//!
//! minik simplifies: `@every` and `TZ=`/`CRON_TZ=` prefixes are refused (upstream refuses the
//! prefixes too since 1.27, in favour of `spec.timeZone`).

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A parsed schedule: one bit per allowed value of each field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether the day-of-month or day-of-week field was `*` (robfig's `starBit`).
    any_day: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl Schedule {
    /// Parses a standard schedule; the error reads as upstream's validation message.
    pub fn parse(text: &str) -> Result<Schedule, String> {
        let text = text.trim();
        let expanded = match text {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other if other.starts_with('@') => {
                return Err(format!("unrecognized descriptor: {other}"))
            }
            other => other,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let days = field(fields[2], 1, 31, &[])?;
        let weekdays = field(fields[4], 0, 7, &WEEKDAYS)?;
        Ok(Schedule {
            minutes: field(fields[0], 0, 59, &[])?,
            hours: field(fields[1], 0, 23, &[])?,
            days,
            months: field(fields[3], 1, 12, &MONTHS)?,
            // 7 is Sunday as well.
            weekdays: (weekdays | (weekdays >> 7)) & 0x7f,
            any_day: is_star(fields[2]) || is_star(fields[4]),
        })
    }

    fn day_matches(&self, time: DateTime) -> bool {
        let day = self.days & (1 << time.day()) != 0;
        let weekday = self.weekdays & (1 << time.weekday().to_sunday_zero_offset()) != 0;
        if self.any_day {
            day && weekday
        } else {
            day || weekday
        }
    }

    /// The first time after `after` (strictly) that the schedule fires, in `tz`; `None` when none
    /// comes within five years (`0 0 30 2 *`).
    pub fn next_after(&self, after: Timestamp, tz: &TimeZone) -> Option<Timestamp> {
        let start = after.to_zoned(tz.clone()).datetime();
        // The next whole minute.
        let mut time = start
            .with()
            .second(0)
            .subsec_nanosecond(0)
            .build()
            .ok()?
            .checked_add(jiff::SignedDuration::from_mins(1))
            .ok()?;
        let limit = start.year() + 5;
        while time.year() <= limit {
            if self.months & (1 << time.month()) == 0 {
                time = time
                    .first_of_month()
                    .checked_add(jiff::Span::new().months(1))
                    .ok()?;
                time = time.with().hour(0).minute(0).build().ok()?;
                continue;
            }
            if !self.day_matches(time) {
                time = time
                    .tomorrow()
                    .ok()?
                    .with()
                    .hour(0)
                    .minute(0)
                    .build()
                    .ok()?;
                continue;
            }
            if self.hours & (1 << time.hour()) == 0 {
                time = time.with().minute(0).build().ok()?;
                time = time.checked_add(jiff::SignedDuration::from_hours(1)).ok()?;
                continue;
            }
            if self.minutes & (1 << time.minute()) == 0 {
                time = time.checked_add(jiff::SignedDuration::from_mins(1)).ok()?;
                continue;
            }
            let fired = time.to_zoned(tz.clone()).ok()?.timestamp();
            if fired > after {
                return Some(fired);
            }
            time = time.checked_add(jiff::SignedDuration::from_mins(1)).ok()?;
        }
        None
    }
}

fn is_star(text: &str) -> bool {
    text == "*" || text == "?"
}

/// One field as a bit set of the values in `min..=max`.
fn field(text: &str, min: u32, max: u32, names: &[&str]) -> Result<u64, String> {
    let mut bits = 0;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step
                    .parse()
                    .map_err(|_| format!("failed to parse int from {step}"))?;
                if step == 0 {
                    return Err(format!("step of range should be a positive number: {part}"));
                }
                (range, step)
            }
            None => (part, 1),
        };
        let (low, high) = if is_star(range) {
            (min, max)
        } else if let Some((low, high)) = range.split_once('-') {
            (value(low, names, min)?, value(high, names, min)?)
        } else {
            let low = value(range, names, min)?;
            // `a/n` runs from a to the field's end.
            (
                low,
                if step > 1 || part.contains('/') {
                    max
                } else {
                    low
                },
            )
        };
        if low < min || high > max || low > high {
            return Err(format!(
                "end of range ({high}) above maximum ({max}): {part}"
            ));
        }
        for value in (low..=high).step_by(step as usize) {
            bits |= 1 << value;
        }
    }
    Ok(bits)
}

fn value(text: &str, names: &[&str], offset: u32) -> Result<u32, String> {
    if let Some(index) = names.iter().position(|n| n.eq_ignore_ascii_case(text)) {
        return Ok(index as u32 + offset);
    }
    text.parse()
        .map_err(|_| format!("failed to parse int from {text}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn next(schedule: &str, after: &str) -> String {
        let schedule = Schedule::parse(schedule).unwrap();
        let after: Timestamp = after.parse().unwrap();
        schedule
            .next_after(after, &TimeZone::UTC)
            .map(|t| t.to_string())
            .unwrap_or_default()
    }

    #[test]
    fn the_next_time_steps_field_by_field() {
        assert_eq!(
            next("*/15 * * * *", "2026-11-22T02:05:00Z"),
            "2026-11-22T02:15:00Z"
        );
        assert_eq!(
            next("0 * * * *", "2026-11-22T02:00:00Z"),
            "2026-11-22T03:00:00Z"
        );
        assert_eq!(
            next("@daily", "2026-11-22T02:05:00Z"),
            "2026-11-23T00:00:00Z"
        );
        assert_eq!(
            next("30 6 * * MON-FRI", "2026-11-21T10:00:00Z"),
            "2026-11-23T06:30:00Z"
        );
        assert_eq!(
            next("0 0 1 jan *", "2026-11-22T00:00:00Z"),
            "2027-01-01T00:00:00Z"
        );
        assert_eq!(
            next("0 0 29 2 *", "2026-03-01T00:00:00Z"),
            "2028-02-29T00:00:00Z"
        );
        assert_eq!(next("0 0 30 2 *", "2026-03-01T00:00:00Z"), "");
    }

    #[test]
    fn two_restricted_day_fields_match_either_and_seven_is_sunday() {
        // The 1st of the month or any Sunday: 2026-11-22 is a Sunday.
        assert_eq!(
            next("0 9 1 * 7", "2026-11-21T12:00:00Z"),
            "2026-11-22T09:00:00Z"
        );
        assert_eq!(
            next("0 9 1 * 7", "2026-11-29T12:00:00Z"),
            "2026-12-01T09:00:00Z"
        );
        assert_eq!(
            next("0 9 * * 0", "2026-11-21T12:00:00Z"),
            "2026-11-22T09:00:00Z"
        );
    }

    #[test]
    fn a_time_zone_moves_the_firing_instant() {
        let schedule = Schedule::parse("0 9 * * *").unwrap();
        let tz = TimeZone::get("Asia/Tokyo").unwrap();
        let after: Timestamp = "2026-11-22T02:05:00Z".parse().unwrap();
        let fired = schedule.next_after(after, &tz).unwrap();
        assert_eq!(fired.to_string(), "2026-11-23T00:00:00Z");
    }

    #[test]
    fn bad_schedules_say_why() {
        assert!(Schedule::parse("* * * *")
            .unwrap_err()
            .contains("exactly 5 fields"));
        assert!(Schedule::parse("61 * * * *").is_err());
        assert!(Schedule::parse("*/0 * * * *").is_err());
        assert!(Schedule::parse("@every 5m").is_err());
        assert!(Schedule::parse("TZ=UTC 0 * * * *").is_err());
        assert!(Schedule::parse("0 0 ? * sat,SUN").is_ok());
    }
}

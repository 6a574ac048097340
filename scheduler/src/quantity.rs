//! Resource quantities ("500m", "1", "128Mi", "1Gi", "1e3") turned into integers the scheduler can add.
//!
//! Kubernetes counterpart: `k8s.io/apimachinery/pkg/api/resource/quantity.go`. There a `Quantity` is
//! an exact decimal with a suffix; `MilliValue()` gives millicores and `Value()` gives bytes, both
//! rounded *up*. In k8s-openapi a `Quantity` is just the string, so minik parses it here.
//!
//! minik simplifies: the arithmetic is done in `i128` (exact for every quantity a pod spec plausibly
//! carries), and an unparsable quantity is reported as `None` so the caller decides what it means.
//!
//! Grammar (as upstream): `<sign><digits>[.<digits>]<suffix>`, where the suffix is a binary SI one
//! (`Ki Mi Gi Ti Pi Ei`), a decimal SI one (`n u m "" k M G T P E`) or an exponent (`e3`, `E-2`).

/// How a suffix scales the number in front of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Suffix {
    /// `× 1024^k` (`Ki` = 1, `Mi` = 2 …).
    Binary(u32),
    /// `× 10^k` (`m` = -3, `k` = 3, `e6` = 6 …).
    Decimal(i32),
}

/// Parses a quantity and returns `ceil(value × 10^scale)`: `scale = 3` gives milli-units (CPU),
/// `scale = 0` gives whole units (bytes, pods). `None` if the text is not a quantity or overflows.
pub fn parse_scaled(text: &str, scale: i32) -> Option<i64> {
    let text = text.trim();
    let (negative, unsigned) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    // Split the number from its suffix: the number is digits with at most one dot.
    let number_end = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(number_end);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    // The number as an integer mantissa and a power of ten: "1.25" = 125 × 10^-2.
    let digits = format!("{whole}{fraction}");
    if digits.len() > 30 {
        return None;
    }
    let mantissa: i128 = digits.parse().ok()?;
    let mut exponent10 = -(fraction.len() as i32) + scale;
    let mut value = mantissa;
    match parse_suffix(suffix)? {
        Suffix::Binary(power) => value = value.checked_mul(1i128.checked_shl(10 * power)?)?,
        Suffix::Decimal(power) => exponent10 += power,
    }
    let scaled = apply_power_of_ten_ceil(value, exponent10)?;
    let scaled = if negative { -scaled } else { scaled };
    i64::try_from(scaled).ok()
}

/// Millicores of a CPU quantity ("500m" → 500, "2" → 2000, "0.1" → 100).
pub fn cpu_millis(text: &str) -> Option<i64> {
    parse_scaled(text, 3)
}

/// Bytes of a memory quantity ("128Mi" → 134217728, "1G" → 1000000000).
pub fn bytes(text: &str) -> Option<i64> {
    parse_scaled(text, 0)
}

fn parse_suffix(suffix: &str) -> Option<Suffix> {
    let decimal = |power| Some(Suffix::Decimal(power));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => Some(Suffix::Binary(1)),
        "Mi" => Some(Suffix::Binary(2)),
        "Gi" => Some(Suffix::Binary(3)),
        "Ti" => Some(Suffix::Binary(4)),
        "Pi" => Some(Suffix::Binary(5)),
        "Ei" => Some(Suffix::Binary(6)),
        // An exponent: "e3", "E-2", "e+6".
        _ if suffix.starts_with(['e', 'E']) => suffix[1..].parse::<i32>().ok().map(Suffix::Decimal),
        _ => None,
    }
}

/// `ceil(value × 10^exponent)` for a non-negative value, rounding up as `Quantity.MilliValue` does.
fn apply_power_of_ten_ceil(value: i128, exponent: i32) -> Option<i128> {
    if exponent >= 0 {
        return value.checked_mul(10i128.checked_pow(exponent.unsigned_abs())?);
    }
    // Below 10^-38 everything non-zero rounds up to 1.
    let Some(divisor) = 10i128.checked_pow(exponent.unsigned_abs()) else {
        return Some(i128::from(value > 0));
    };
    Some((value + divisor - 1) / divisor)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_quantities_become_millicores() {
        assert_eq!(cpu_millis("500m"), Some(500));
        assert_eq!(cpu_millis("1"), Some(1000));
        assert_eq!(cpu_millis("2.5"), Some(2500));
        assert_eq!(cpu_millis("0.1"), Some(100));
        assert_eq!(cpu_millis(".5"), Some(500));
        assert_eq!(cpu_millis("1e3"), Some(1_000_000));
    }

    #[test]
    fn memory_quantities_become_bytes() {
        assert_eq!(bytes("128Mi"), Some(128 * 1024 * 1024));
        assert_eq!(bytes("1Gi"), Some(1 << 30));
        assert_eq!(bytes("1G"), Some(1_000_000_000));
        assert_eq!(bytes("64k"), Some(64_000));
        assert_eq!(bytes("1.5Gi"), Some(3 << 29));
        assert_eq!(bytes("1024"), Some(1024));
    }

    #[test]
    fn fractions_round_up_as_upstream_does() {
        // Upstream: resource.MustParse("1.5m").MilliValue() == 2, and "100n" of CPU is 1m.
        assert_eq!(cpu_millis("1.5m"), Some(2));
        assert_eq!(cpu_millis("100n"), Some(1));
        assert_eq!(bytes("0.5"), Some(1));
    }

    #[test]
    fn garbage_is_not_a_quantity() {
        for text in ["", "abc", "1Qi", "m", "1..2", "--1", "1e", "1 Gi"] {
            assert_eq!(bytes(text), None, "{text:?} should not parse");
        }
    }

    #[test]
    fn overflow_is_reported_not_wrapped() {
        assert_eq!(bytes("100Ei"), None);
        assert_eq!(bytes("9999999999999999999999999999999"), None);
    }
}

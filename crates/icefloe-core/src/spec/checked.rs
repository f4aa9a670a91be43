//! Checked arithmetic on numbers read from files: a negative count or an overflow is an error
//! naming the field, never a wrapped value.

/// `a + b` for numbers read from a file; an overflow is an error naming `what`.
pub fn add(a: i64, b: i64, what: &str) -> Result<i64, String> {
    a.checked_add(b)
        .ok_or_else(|| format!("{what} overflows a long ({a} + {b})"))
}

/// A count or sequence number read from a file must not be negative.
pub fn non_negative(v: i64, what: &str) -> Result<(), String> {
    if v < 0 {
        Err(format!("{what} is negative ({v})"))
    } else {
        Ok(())
    }
}

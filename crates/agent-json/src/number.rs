//! [`Number`]: a JSON number kept as the text it means (R3, D20: numbers keep their text).

use std::fmt;
use std::str::FromStr;

/// A JSON number, exactly as written: any integer of any size, any
/// exponent. Two numbers are equal when their texts are (`1.0` is not
/// `1`), as R3 keeps them apart.
///
/// The text is the one the parser keeps: the input's digits with its
/// exponent written `e+N` or `e-N` (`1E5` is kept as `1e+5`), the form
/// serde_json's exact numbers used, so logs written before keep their
/// bytes and digests. An integer that fits `i64` and is written the way
/// `i64` prints is held inline, without a heap string.
///
/// ```
/// use agent_json::Number;
/// let big: Number = "123456789012345678901234567890".parse()?;
/// assert_eq!(big.to_string(), "123456789012345678901234567890");
/// assert_eq!(big.as_u64(), None);
/// assert_eq!(Number::from(7).as_i64(), Some(7));
/// assert_eq!("1E5".parse::<Number>()?.to_string(), "1e+5");
/// # Ok::<(), agent_json::ParseError>(())
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Number(Repr);

/// Invariant: `Int(n)` exactly when the text is `n.to_string()`, so the
/// derived equality is the equality of texts.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    Int(i64),
    Text(Box<str>),
}

impl Number {
    /// Builds a number from text already checked against the JSON grammar
    /// and normalised (the parser's output).
    pub(crate) fn from_normalised(text: &str) -> Number {
        match text.parse::<i64>() {
            Ok(n) if itoa::Buffer::new().format(n) == text => Number(Repr::Int(n)),
            _ => Number(Repr::Text(text.into())),
        }
    }

    /// A finite `f64` as the shortest text that reads back as it (`1.0`,
    /// `1e+20`); `None` for NaN and the infinities, which JSON cannot write.
    pub fn from_f64(value: f64) -> Option<Number> {
        if !value.is_finite() {
            return None;
        }
        let shortest = zmij::Buffer::new().format_finite(value).to_owned();
        // zmij writes `1e20`; the kept form spells the exponent's sign.
        Some(Number::from_normalised(&normalise_exponent(&shortest)))
    }

    /// A finite `f32` as the shortest text that reads back as that `f32`
    /// (`0.1`, not the `f64` widening's `0.10000000149011612`).
    pub fn from_f32(value: f32) -> Option<Number> {
        if !value.is_finite() {
            return None;
        }
        let shortest = zmij::Buffer::new().format_finite(value).to_owned();
        Some(Number::from_normalised(&normalise_exponent(&shortest)))
    }

    /// The number as `i64`, when it is an integer written without fraction
    /// or exponent that fits (`-0` is 0).
    pub fn as_i64(&self) -> Option<i64> {
        match &self.0 {
            Repr::Int(n) => Some(*n),
            Repr::Text(text) => text.parse().ok(),
        }
    }

    /// The number as `u64`, when it is a non-negative integer written
    /// without fraction or exponent that fits.
    pub fn as_u64(&self) -> Option<u64> {
        match &self.0 {
            Repr::Int(n) => u64::try_from(*n).ok(),
            Repr::Text(text) => text.parse().ok(),
        }
    }

    /// The number as the nearest `f64` (`None` when it is too large for
    /// one, like `1e+400`).
    pub fn as_f64(&self) -> Option<f64> {
        match &self.0 {
            Repr::Int(n) => Some(*n as f64),
            Repr::Text(text) => text.parse::<f64>().ok().filter(|f| f.is_finite()),
        }
    }

    /// True when [`as_i64`](Self::as_i64) is `Some`.
    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// True when [`as_u64`](Self::as_u64) is `Some`.
    pub fn is_u64(&self) -> bool {
        self.as_u64().is_some()
    }

    /// True when the number is written with a fraction or an exponent and
    /// is within `f64`'s range (serde_json's rule: an integer beyond 64
    /// bits, or `1e400`, is none of `i64`, `u64` and `f64`).
    pub fn is_f64(&self) -> bool {
        match &self.0 {
            Repr::Int(_) => false,
            Repr::Text(text) => {
                text.contains(['.', 'e', 'E']) && text.parse::<f64>().is_ok_and(f64::is_finite)
            }
        }
    }

    /// The integer held inline: the number is exactly its `i64` text.
    pub(crate) fn inline(&self) -> Option<i64> {
        match &self.0 {
            Repr::Int(n) => Some(*n),
            Repr::Text(_) => None,
        }
    }

    /// Appends the number's text to `out`.
    pub(crate) fn push_to(&self, out: &mut String) {
        match &self.0 {
            Repr::Int(n) => out.push_str(itoa::Buffer::new().format(*n)),
            Repr::Text(text) => out.push_str(text),
        }
    }
}

/// `1e20` → `1e+20`: the exponent's sign spelled, as the parser keeps it.
fn normalise_exponent(text: &str) -> String {
    match text.find(['e', 'E']) {
        Some(at) => {
            let (mantissa, exponent) = text.split_at(at);
            let digits = &exponent[1..];
            if digits.starts_with(['+', '-']) {
                format!("{mantissa}e{digits}")
            } else {
                format!("{mantissa}e+{digits}")
            }
        }
        None => text.to_owned(),
    }
}

impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Int(n) => f.write_str(itoa::Buffer::new().format(*n)),
            Repr::Text(text) => f.write_str(text),
        }
    }
}

impl fmt::Debug for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Number({self})")
    }
}

impl FromStr for Number {
    type Err = super::ParseError;

    /// Reads one JSON number, nothing around it, normalised as the parser
    /// keeps it.
    fn from_str(text: &str) -> Result<Number, Self::Err> {
        super::parse::number_only(text)
    }
}

macro_rules! from_signed {
    ($($t:ty)*) => {$(
        impl From<$t> for Number {
            fn from(n: $t) -> Number {
                Number(Repr::Int(i64::from(n)))
            }
        }
    )*};
}
from_signed!(i8 i16 i32 i64 u8 u16 u32);

impl From<u64> for Number {
    fn from(n: u64) -> Number {
        match i64::try_from(n) {
            Ok(small) => Number(Repr::Int(small)),
            Err(_) => Number(Repr::Text(itoa::Buffer::new().format(n).into())),
        }
    }
}

impl From<usize> for Number {
    fn from(n: usize) -> Number {
        Number::from(n as u64)
    }
}

impl From<isize> for Number {
    fn from(n: isize) -> Number {
        Number(Repr::Int(n as i64))
    }
}

//! A [`Value`] as a serde deserializer: typed data read out of a value
//! already parsed with the library's own reader, exactly.
//!
//! serde_json's reader would lose a number's text (without its exact
//! feature, which agentctx no longer asks for) and stops at its own depth
//! limit; reading with [`from_str_within`](super::from_str_within) first
//! and then [`from_value`] keeps both rules the library's own.

use serde::de::value::{Error, MapAccessDeserializer, MapDeserializer, SeqDeserializer};
use serde::de::{self, Deserialize, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;

use super::{Number, Value};
use crate::serde_impl::NUMBER_TOKEN;

/// Reads a `T` out of `value`, as `serde_json::from_value` does. A
/// [`Value`] inside `T` receives its numbers exactly.
///
/// # Errors
///
/// What `T`'s `Deserialize` refuses: a missing field, a wrong type.
///
/// ```
/// #[derive(serde::Deserialize)]
/// struct Point { x: i64, label: agent_json::Value }
/// let value = agent_json::from_str(r#"{"x": 3, "label": 1.50}"#)?;
/// let p: Point = agent_json::from_value(value)?;
/// assert_eq!(p.x, 3);
/// assert_eq!(p.label.to_string(), "1.50");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn from_value<'de, T: Deserialize<'de>>(value: Value) -> Result<T, Error> {
    T::deserialize(value)
}

/// A number as serde sees it: an integer when it is one, else serde_json's
/// private exact-number form, which [`Value`]'s own visitor reads back.
fn visit_number<'de, V: Visitor<'de>>(number: Number, visitor: V) -> Result<V::Value, Error> {
    // Only a number that *is* its integer's text: `-0` is not 0 (R3).
    if let Some(n) = number.inline() {
        return visitor.visit_i64(n);
    }
    if let Some(n) = number.as_u64()
        && itoa::Buffer::new().format(n) == number.to_string()
    {
        return visitor.visit_u64(n);
    }
    let token = std::iter::once((NUMBER_TOKEN, number.to_string()));
    visitor.visit_map(MapDeserializer::new(token))
}

impl<'de> de::Deserializer<'de> for Value {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(items) => {
                let mut seq = SeqDeserializer::new(items.into_iter());
                let read = visitor.visit_seq(&mut seq)?;
                seq.end()?;
                Ok(read)
            }
            Value::Object(map) => {
                let mut members = MapDeserializer::new(map.into_iter());
                let read = visitor.visit_map(&mut members)?;
                members.end()?;
                Ok(read)
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match &self {
            Value::Number(n) => match n.as_f64() {
                Some(f) => visitor.visit_f64(f),
                None => self.deserialize_any(visitor),
            },
            _ => self.deserialize_any(visitor),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self {
            Value::String(s) => visitor.visit_enum(s.into_deserializer()),
            Value::Object(map) => visitor.visit_enum(MapAccessDeserializer::new(
                MapDeserializer::new(map.into_iter()),
            )),
            other => Err(de::Error::invalid_type(unexpected(&other), &"an enum")),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// What serde's errors call a value of this kind.
fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

impl<'de> IntoDeserializer<'de, Error> for Value {
    type Deserializer = Value;

    fn into_deserializer(self) -> Value {
        self
    }
}

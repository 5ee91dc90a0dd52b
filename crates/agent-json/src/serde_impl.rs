//! serde for [`Value`], and the conversions to and from serde_json's
//! value that the layers still speaking serde_json use.
//!
//! A number is written to serde_json exactly (as raw text when it is not a
//! 64-bit integer); to another format, as that format's raw-value struct,
//! which only serde_json understands. Reading through serde is exact from
//! serde_json with its exact or raw numbers; from any other format, a
//! fraction arrives as `f64` and keeps what `f64` kept. Read text with
//! [`from_str`](super::from_str) to be exact everywhere.

use std::fmt;

use serde::de::{self, MapAccess, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Array, Map, Number, Value};

/// serde_json's private names for an exact number and a raw value.
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";
pub(crate) const RAW_TOKEN: &str = "$serde_json::private::RawValue";

impl Serialize for Number {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let Some(n) = self.inline() {
            return serializer.serialize_i64(n);
        }
        let text = self.to_string();
        if let Ok(n) = text.parse::<u64>()
            && itoa::Buffer::new().format(n) == text
        {
            return serializer.serialize_u64(n);
        }
        match serde_json::value::RawValue::from_string(text) {
            Ok(raw) => raw.serialize(serializer),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Null => serializer.serialize_unit(),
            Value::Bool(b) => serializer.serialize_bool(*b),
            Value::Number(n) => n.serialize(serializer),
            Value::String(s) => serializer.serialize_str(s),
            Value::Array(items) => items.serialize(serializer),
            Value::Object(map) => map.serialize(serializer),
        }
    }
}

/// Serialises a held container without reading it in place (D85: held objects; D86: held arrays):
/// its compact text is walked, any other text read apart and dropped.
/// The serializer back for a container that is not held, or already read.
fn serialize_held<S: Serializer>(
    compact: Option<(&str, usize)>,
    read_apart: impl FnOnce() -> Option<Value>,
    serializer: S,
) -> Result<Result<S::Ok, S::Error>, S> {
    if let Some((text, _)) = compact {
        return Ok(super::held_serde::Outline::new(text)
            .root()
            .serialize(serializer));
    }
    match read_apart() {
        Some(read) => {
            let written = read.serialize(serializer);
            super::drop_deep(read);
            Ok(written)
        }
        None => Err(serializer),
    }
}

impl Serialize for Array {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let read_apart = || self.read_apart().map(Value::Array);
        let serializer = match serialize_held(self.compact_text(), read_apart, serializer) {
            Ok(written) => return written,
            Err(serializer) => serializer,
        };
        let mut seq = serializer.serialize_seq(Some(self.len()))?;
        for item in self.iter() {
            seq.serialize_element(item)?;
        }
        seq.end()
    }
}

impl Serialize for Map {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let read_apart = || self.read_apart().map(Value::Object);
        let serializer = match serialize_held(self.compact_text(), read_apart, serializer) {
            Ok(written) => return written,
            Err(serializer) => serializer,
        };
        let mut out = serializer.serialize_map(Some(self.len()))?;
        for (key, value) in self {
            out.serialize_entry(key, value)?;
        }
        out.end()
    }
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::from(n))
    }
    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Number::from_f64(f)
            .map(Value::Number)
            .ok_or_else(|| E::custom(format_args!("{f} is not a JSON number")))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Value::deserialize(d)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items.into()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut access: A) -> Result<Value, A::Error> {
        let mut map = Map::new();
        let Some(first) = access.next_key::<String>()? else {
            return Ok(Value::Object(map));
        };
        // serde_json hands an exact number or a raw value as a one-member
        // map under its private name.
        if first == NUMBER_TOKEN {
            let text: String = access.next_value()?;
            return text
                .parse::<Number>()
                .map(Value::Number)
                .map_err(de::Error::custom);
        }
        if first == RAW_TOKEN {
            let text: String = access.next_value()?;
            return super::from_str(&text).map_err(de::Error::custom);
        }
        map.insert(first, access.next_value()?);
        while let Some((key, value)) = access.next_entry()? {
            map.insert(key, value);
        }
        Ok(Value::Object(map))
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(ValueVisitor)
    }
}

impl<'de> Deserialize<'de> for Map {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Map, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Object(map) => Ok(map),
            other => Err(de::Error::custom(format_args!(
                "expected a JSON object, found {}",
                other.type_name()
            ))),
        }
    }
}

impl<'de> Deserialize<'de> for Array {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Array, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::Array(items) => Ok(items),
            other => Err(de::Error::custom(format_args!(
                "expected a JSON array, found {}",
                other.type_name()
            ))),
        }
    }
}

/// Exact: serde_json's number text, read again (`1E5` becomes `1e+5`).
/// Recursive, as deep as the value.
impl From<serde_json::Value> for Value {
    fn from(value: serde_json::Value) -> Value {
        match value {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(b),
            serde_json::Value::Number(n) => match n.to_string().parse::<Number>() {
                Ok(n) => Value::Number(n),
                Err(_) => Value::Null,
            },
            serde_json::Value::String(s) => Value::String(s),
            serde_json::Value::Array(items) => {
                Value::Array(items.into_iter().map(Value::from).collect())
            }
            serde_json::Value::Object(map) => {
                Value::Object(map.into_iter().map(|(k, v)| (k, Value::from(v))).collect())
            }
        }
    }
}

/// Exact while serde_json keeps number text (its `arbitrary_precision`);
/// otherwise a number becomes the nearest `f64`, past `f64`'s range the
/// largest finite `f64` of its sign. serde_json's default map sorts keys.
/// Recursive, as deep as the value.
impl From<Value> for serde_json::Value {
    fn from(value: Value) -> serde_json::Value {
        serde_json::Value::from(&value)
    }
}

/// As the owned conversion, without taking the value (a schema validator
/// reads serde_json's value; the view it checks stays where it is).
impl From<&Value> for serde_json::Value {
    fn from(value: &Value) -> serde_json::Value {
        match value {
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => {
                let exact = n.to_string().parse::<serde_json::Number>().ok();
                exact
                    .or_else(|| serde_json::Number::from_f64(nearest_f64(n)))
                    .map_or(serde_json::Value::Null, serde_json::Value::Number)
            }
            Value::String(s) => serde_json::Value::String(s.clone()),
            Value::Array(items) => serde_json::Value::Array(items.iter().map(Into::into).collect()),
            Value::Object(map) => serde_json::Value::Object(
                map.iter().map(|(k, v)| (k.to_owned(), v.into())).collect(),
            ),
        }
    }
}

/// The `f64` nearest `number`: past `f64`'s range, the largest finite one
/// of its sign (a validator comparing `1e400` with a limit still sees a
/// very large number, not a missing one).
fn nearest_f64(number: &Number) -> f64 {
    match number.as_f64() {
        Some(f) => f,
        None if number.to_string().starts_with('-') => f64::MIN,
        None => f64::MAX,
    }
}

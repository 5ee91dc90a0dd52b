//! Any `Serialize` as a [`Value`]: what [`json!`](crate::json!) does with
//! an interpolated expression, and [`to_value`].
//!
//! Struct fields and map entries keep the order they are serialised in;
//! a [`Number`] that is not a 64-bit integer arrives as serde_json's raw
//! value and is read back exactly.

use serde::de::value::Error;
use serde::ser::{self, Serialize};

use super::serde_impl::RAW_TOKEN;
use super::{Map, Number, Value};

/// `value` as a [`Value`], as `serde_json::to_value` does, with struct
/// fields in declaration order and numbers kept exactly.
///
/// # Errors
///
/// A map whose keys are not strings, numbers, booleans or characters, or
/// what `T`'s `Serialize` reports.
///
/// ```
/// #[derive(serde::Serialize)]
/// struct Point { y: i64, x: i64 }
/// let v = agent_json::to_value(&Point { y: 1, x: 2 })?;
/// assert_eq!(v.to_string(), r#"{"y":1,"x":2}"#);
/// # Ok::<(), serde::de::value::Error>(())
/// ```
pub fn to_value<T: Serialize + ?Sized>(value: &T) -> Result<Value, Error> {
    value.serialize(Serializer)
}

/// What `json!` expands an expression to: [`to_value`], failing as
/// serde_json's `json!` does.
///
/// # Panics
///
/// When [`to_value`] fails: a map with keys that are not strings.
#[doc(hidden)]
#[allow(clippy::panic)] // `json!`'s contract, as serde_json's
pub fn __to_value<T: Serialize + ?Sized>(value: &T) -> Value {
    match to_value(value) {
        Ok(value) => value,
        Err(error) => panic!("json!: {error}"),
    }
}

/// The serializer whose output is a [`Value`].
struct Serializer;

fn custom(message: impl std::fmt::Display) -> Error {
    ser::Error::custom(message)
}

impl ser::Serializer for Serializer {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Items;
    type SerializeTuple = Items;
    type SerializeTupleStruct = Items;
    type SerializeTupleVariant = Variant<Items>;
    type SerializeMap = Members;
    type SerializeStruct = Fields;
    type SerializeStructVariant = Variant<Members>;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Ok(Value::Bool(v))
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        v.to_string()
            .parse::<Number>()
            .map(Value::Number)
            .map_err(custom)
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        v.to_string()
            .parse::<Number>()
            .map(Value::Number)
            .map_err(custom)
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        Ok(Number::from_f32(v).map_or(Value::Null, Value::Number))
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Ok(Value::from(v))
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Ok(Value::String(v.to_string()))
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        Ok(Value::String(v.to_owned()))
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Ok(Value::Array(v.iter().map(|&b| Value::from(b)).collect()))
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<Value, Error> {
        Ok(Value::Null)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        Ok(Value::String(variant.to_owned()))
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        let mut map = Map::new();
        map.insert(variant.to_owned(), to_value(value)?);
        Ok(Value::Object(map))
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Items, Error> {
        Ok(Items(Vec::with_capacity(len.unwrap_or(0).min(4096))))
    }
    fn serialize_tuple(self, len: usize) -> Result<Items, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Items, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Variant<Items>, Error> {
        Ok(Variant(variant, self.serialize_seq(Some(len))?))
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Members, Error> {
        Ok(Members {
            map: Map::new(),
            key: None,
        })
    }
    fn serialize_struct(self, name: &'static str, _len: usize) -> Result<Fields, Error> {
        if name == RAW_TOKEN {
            return Ok(Fields::Raw(None));
        }
        Ok(Fields::Object(Map::new()))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Variant<Members>, Error> {
        Ok(Variant(
            variant,
            Members {
                map: Map::new(),
                key: None,
            },
        ))
    }
}

/// An array being serialised.
struct Items(Vec<Value>);

impl ser::SerializeSeq for Items {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.0.push(to_value(value)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Array(self.0.into()))
    }
}

impl ser::SerializeTuple for Items {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Items {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }
    fn end(self) -> Result<Value, Error> {
        ser::SerializeSeq::end(self)
    }
}

/// An enum variant with content: `{"Variant": content}`.
struct Variant<T>(&'static str, T);

impl<T> Variant<T> {
    fn wrap(variant: &'static str, content: Value) -> Value {
        let mut map = Map::new();
        map.insert(variant.to_owned(), content);
        Value::Object(map)
    }
}

impl ser::SerializeTupleVariant for Variant<Items> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(&mut self.1, value)
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Self::wrap(self.0, Value::Array(self.1.0.into())))
    }
}

impl ser::SerializeStructVariant for Variant<Members> {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        self.1.map.insert(key.to_owned(), to_value(value)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Self::wrap(self.0, Value::Object(self.1.map)))
    }
}

/// A map being serialised, and the key waiting for its value.
struct Members {
    map: Map,
    key: Option<String>,
}

impl ser::SerializeMap for Members {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(match to_value(key)? {
            Value::String(s) => s,
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                return Err(custom(format_args!(
                    "key must be a string, not {}",
                    other.type_name()
                )));
            }
        });
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self
            .key
            .take()
            .ok_or_else(|| custom("a map value was serialised before its key"))?;
        self.map.insert(key, to_value(value)?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.map))
    }
}

/// A struct being serialised: an object, or serde_json's raw value (the
/// form an exact [`Number`] is serialised in), read back with the
/// library's reader.
enum Fields {
    Object(Map),
    Raw(Option<Value>),
}

impl ser::SerializeStruct for Fields {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self {
            Fields::Object(map) => {
                map.insert(key.to_owned(), to_value(value)?);
            }
            Fields::Raw(raw) => {
                let Value::String(text) = to_value(value)? else {
                    return Err(custom("a raw value that is not text"));
                };
                *raw = Some(super::from_str(&text).map_err(custom)?);
            }
        }
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        match self {
            Fields::Object(map) => Ok(Value::Object(map)),
            Fields::Raw(Some(value)) => Ok(value),
            Fields::Raw(None) => Err(custom("a raw value without its text")),
        }
    }
}

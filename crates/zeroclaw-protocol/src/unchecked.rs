//! [`Unchecked<T>`]: a params field kept as the JSON the peer sent, whose schema is `T`'s.
//!
//! Used where the daemon checks entries one at a time so each error can name its entry
//! (`file/attach` files, `config/set-many` sets), or where it reads only part of a value
//! and accepts whatever else is there (`initialize` `clientInfo`, `clientCapabilities`).
//! Decoding the params never fails on such a field; [`Unchecked::check`] decodes it.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::decode::{ParamsError, decode_value};

/// A `T` as sent: any JSON value until [`check`](Unchecked::check)ed.
pub struct Unchecked<T> {
    value: Value,
    of: PhantomData<fn() -> T>,
}

impl<T> Unchecked<T> {
    /// The value as the peer sent it.
    pub fn as_value(&self) -> &Value {
        &self.value
    }

    pub fn into_value(self) -> Value {
        self.value
    }
}

impl<T: DeserializeOwned> Unchecked<T> {
    /// The value decoded as a `T` (its keys in either spelling, as params are).
    pub fn check(self) -> Result<T, ParamsError> {
        decode_value(self.value)
    }
}

impl<T: Serialize> From<T> for Unchecked<T> {
    /// A `T` to send (a value that cannot be serialized becomes `null`).
    fn from(t: T) -> Self {
        Unchecked {
            value: serde_json::to_value(t).unwrap_or(Value::Null),
            of: PhantomData,
        }
    }
}

impl<T> Clone for Unchecked<T> {
    fn clone(&self) -> Self {
        Unchecked {
            value: self.value.clone(),
            of: PhantomData,
        }
    }
}

impl<T> PartialEq for Unchecked<T> {
    fn eq(&self, other: &Self) -> bool {
        self.value == other.value
    }
}

impl<T> Eq for Unchecked<T> {}

impl<T> fmt::Debug for Unchecked<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.value.fmt(f)
    }
}

impl<T> Serialize for Unchecked<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<'de, T> Deserialize<'de> for Unchecked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Unchecked {
            value: Value::deserialize(d)?,
            of: PhantomData,
        })
    }
}

impl<T: JsonSchema> JsonSchema for Unchecked<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn schema_id() -> Cow<'static, str> {
        T::schema_id()
    }

    fn inline_schema() -> bool {
        T::inline_schema()
    }

    fn json_schema(g: &mut SchemaGenerator) -> Schema {
        T::json_schema(g)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::FileInput;
    use serde_json::json;

    #[test]
    fn any_value_decodes_and_checks_later() {
        let u: Unchecked<FileInput> = serde_json::from_value(json!(5)).expect("any value");
        assert!(u.check().is_err());
        let u: Unchecked<FileInput> =
            serde_json::from_value(json!({"data_b64": "eA==", "dataB64": "eQ=="})).expect("obj");
        assert_eq!(u.check().expect("both").data_b64.as_deref(), Some("eQ=="));
        let sent = Unchecked::from(FileInput {
            path: Some("/x".into()),
            ..Default::default()
        });
        assert_eq!(
            serde_json::to_value(&sent).expect("json"),
            json!({"path": "/x"})
        );
    }

    #[test]
    fn the_schema_is_the_checked_type() {
        let mut g = schemars::SchemaGenerator::default();
        assert_eq!(
            g.subschema_for::<Unchecked<FileInput>>(),
            g.subschema_for::<FileInput>()
        );
    }
}

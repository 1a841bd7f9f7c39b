//! The ids of sessions and turns as types of their own ([`SessionId`], [`TurnId`]): on the
//! wire each is a plain JSON string (serde and the schema see through them), in the code
//! a session id cannot be passed where a turn id is wanted. Each reads as a `&str`
//! (`Deref`, `Borrow`, `AsRef`), prints as itself, and is made from a `String` or `&str`.

use std::borrow::{Borrow, Cow};
use std::fmt;
use std::ops::Deref;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};

macro_rules! id_type {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        #[derive(
            Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(String);

        /// Exactly a string's schema, inlined: the published schema does not change.
        impl JsonSchema for $name {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> Cow<'static, str> {
                String::schema_name()
            }

            fn schema_id() -> Cow<'static, str> {
                String::schema_id()
            }

            fn json_schema(generator: &mut SchemaGenerator) -> Schema {
                String::json_schema(generator)
            }
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<String> for $name {
            fn from(s: String) -> $name {
                $name(s)
            }
        }

        impl From<&str> for $name {
            fn from(s: &str) -> $name {
                $name(s.to_owned())
            }
        }

        impl From<&String> for $name {
            fn from(s: &String) -> $name {
                $name(s.clone())
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                &self.0 == other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }
    };
}

id_type!(
    /// A session's id (`sessionId`), unique within its mode.
    SessionId
);

id_type!(
    /// A turn's id (`turnId`), unique within its session.
    TurnId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_a_plain_string_on_the_wire_and_in_the_schema() {
        let id = SessionId::from("s-1");
        assert_eq!(serde_json::to_string(&id).unwrap(), r#""s-1""#);
        assert_eq!(serde_json::from_str::<SessionId>(r#""s-1""#).unwrap(), id);
        assert!(serde_json::from_str::<TurnId>("5").is_err());
        let mut g = schemars::SchemaGenerator::default();
        assert_eq!(g.subschema_for::<SessionId>(), g.subschema_for::<String>());
        assert_eq!(&*id, "s-1");
        assert_eq!(id.to_string(), "s-1");
        let set: std::collections::HashSet<SessionId> = [id.clone()].into();
        assert!(set.contains("s-1"));
    }
}

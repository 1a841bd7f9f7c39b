//! The typed shape of one OpenAI streaming chunk (`chat.completion.chunk`), read straight
//! from the event's data: only the members the provider uses are kept, strings borrowed
//! from the event where they hold no escapes, everything else skipped without building a
//! tree. `error`, `tool_calls` and `usage` (rare, and lenient about their shapes) are
//! kept as [`Value`]s. A member holding another type than expected is ignored, as a walk
//! over the JSON tree would.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

#[derive(Deserialize)]
pub(super) struct Chunk<'a> {
    #[serde(default)]
    pub error: Option<Value>,
    #[serde(default, borrow)]
    pub choices: FirstChoice<'a>,
    #[serde(default)]
    pub usage: Option<Value>,
}

#[derive(Deserialize, Default)]
pub(super) struct Choice<'a> {
    #[serde(default, borrow)]
    pub delta: Option<Delta<'a>>,
    #[serde(default)]
    pub finish_reason: Option<IgnoredAny>,
}

#[derive(Deserialize, Default)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Text<'a>,
    #[serde(default, borrow)]
    pub reasoning_content: Text<'a>,
    #[serde(default, borrow)]
    pub reasoning: Text<'a>,
    #[serde(default)]
    pub tool_calls: Option<Value>,
}

/// A string member; `None` when absent, `null` or of another type.
#[derive(Default)]
pub(super) struct Text<'a>(pub Option<Cow<'a, str>>);

impl<'a> Text<'a> {
    /// The text when present and not empty.
    pub fn non_empty(&self) -> Option<&str> {
        self.0.as_deref().filter(|t| !t.is_empty())
    }
}

/// The first element of `choices`; `None` when absent, empty or not an array.
#[derive(Default)]
pub(super) struct FirstChoice<'a>(pub Option<Choice<'a>>);

/// Skips whatever a visitor was not looking for.
macro_rules! skip_others {
    ($ret:expr) => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok($ret)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($ret)
        }
    };
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Borrowed(s))))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(s.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Some(Cow::Owned(s))))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'de>, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            skip_others!(Text(None));
        }
        d.deserialize_any(V)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for FirstChoice<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FirstChoice<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstChoice<'de>, A::Error> {
                let first = seq.next_element::<Choice<'de>>()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(FirstChoice(first))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<FirstChoice<'de>, E> {
                Ok(FirstChoice(None))
            }
            skip_others!(FirstChoice(None));
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_are_borrowed_and_others_skipped() {
        let data = r#"{"id":"x","object":"chat.completion.chunk","created":0,"model":"m",
            "choices":[{"index":0,"delta":{"role":"assistant","content":"hi "},"finish_reason":null},{"index":1}]}"#;
        let c: Chunk = serde_json::from_str(data).unwrap();
        let choice = c.choices.0.unwrap();
        let delta = choice.delta.unwrap();
        assert!(matches!(delta.content.0, Some(Cow::Borrowed("hi "))));
        assert!(choice.finish_reason.is_none());
        assert!(c.error.is_none() && c.usage.is_none());
    }

    #[test]
    fn other_types_are_ignored() {
        let data = r#"{"choices":{"a":1},"usage":null,"error":null}"#;
        let c: Chunk = serde_json::from_str(data).unwrap();
        assert!(c.choices.0.is_none());
        let data = r#"{"choices":[{"delta":{"content":[1,{"a":2}],"reasoning":5},"finish_reason":"stop"}]}"#;
        let c: Chunk = serde_json::from_str(data).unwrap();
        let choice = c.choices.0.unwrap();
        let delta = choice.delta.unwrap();
        assert!(delta.content.0.is_none() && delta.reasoning.0.is_none());
        assert!(choice.finish_reason.is_some());
        let c: Chunk =
            serde_json::from_str(r#"{"choices":[{"delta":{"content":"a\"b"}}]}"#).unwrap();
        assert_eq!(
            c.choices.0.unwrap().delta.unwrap().content.non_empty(),
            Some("a\"b")
        );
    }
}

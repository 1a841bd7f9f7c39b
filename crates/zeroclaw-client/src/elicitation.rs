//! The daemon's `elicitation/create` questions (the agent's `ask_user` tool, SPEC §7.4,
//! §13): the request (the vocabulary's [`ElicitationParams`] with its JSON-RPC id), its
//! `requestedSchema` (free text, one choice, several choices) and the `accept` / `decline`
//! answer ([`ElicitationResult`]) built from what the user typed.

use serde_json::{Map, Value, json};
use zeroclaw_protocol::update::{ElicitationParams, ElicitationResult};
use zeroclaw_protocol::{ELICITATION_CREATE, ElicitationAction};

/// An `elicitation/create` request from the daemon: a question for the user. It must be
/// answered ([`ClientHandle::answer_elicitation`]) or the turn waits up to its timeout.
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitationRequest {
    /// The JSON-RPC id to answer.
    pub id: Value,
    pub session_id: String,
    pub mode: String,
    pub message: String,
    pub requested_schema: Value,
    /// The question's id, the same in every copy (`ask_user_resolved` names it when the
    /// question was settled, possibly by another connection).
    pub request_id: Option<String>,
}

/// One option of a multiple-choice question.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    /// What goes into the answer (`const`).
    pub value: Value,
    /// What the user sees (`title`, else the value).
    pub title: String,
}

/// The options of a multiple-choice question and the property the answer goes into.
#[derive(Debug, Clone, PartialEq)]
pub struct ChoiceSet {
    pub property: String,
    /// Several options may be picked (the property is an array).
    pub multiple: bool,
    pub options: Vec<Choice>,
}

/// The answer to an `elicitation/create` request.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitationAnswer {
    /// `content` holds the requested properties.
    Accept(Value),
    Decline,
    Cancel,
}

impl ElicitationAnswer {
    /// Accepts with a free-text `answer`.
    pub fn text(answer: &str) -> Self {
        ElicitationAnswer::Accept(json!({ "answer": answer }))
    }

    /// The `result` sent back, typed.
    pub fn to_result(&self) -> ElicitationResult {
        let (action, content) = match self {
            ElicitationAnswer::Accept(content) => {
                (ElicitationAction::Accept, Some(content.clone()))
            }
            ElicitationAnswer::Decline => (ElicitationAction::Decline, None),
            ElicitationAnswer::Cancel => (ElicitationAction::Cancel, None),
        };
        ElicitationResult { action, content }
    }

    /// The `result` sent back: `{action, content?}`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self.to_result()).unwrap_or(Value::Null)
    }
}

impl ElicitationRequest {
    /// Parses an `elicitation/create` request's params ([`ElicitationParams`]).
    pub fn parse(id: Value, params: &Value) -> Result<ElicitationRequest, String> {
        let params: ElicitationParams = serde_json::from_value(params.clone())
            .map_err(|e| format!("{ELICITATION_CREATE}: {e}"))?;
        Ok(ElicitationRequest {
            id,
            session_id: params.session_id.into(),
            mode: params.mode,
            message: params.message,
            requested_schema: params.requested_schema,
            request_id: params.request_id,
        })
    }

    /// The params the request came with.
    pub fn params(&self) -> ElicitationParams {
        ElicitationParams {
            session_id: self.session_id.clone().into(),
            mode: self.mode.clone(),
            message: self.message.clone(),
            requested_schema: self.requested_schema.clone(),
            request_id: self.request_id.clone(),
        }
    }

    fn properties(&self) -> Option<&Map<String, Value>> {
        self.requested_schema.get("properties")?.as_object()
    }

    /// The options when the schema asks to pick from a list (`oneOf`/`anyOf` of
    /// `{const, title}`, or `enum`, directly or under `items` for several picks).
    pub fn choices(&self) -> Option<ChoiceSet> {
        self.properties()?.iter().find_map(|(name, schema)| {
            if let Some(options) = options_of(schema) {
                return Some(ChoiceSet {
                    property: name.clone(),
                    multiple: false,
                    options,
                });
            }
            let items = schema.get("items")?;
            options_of(items).map(|options| ChoiceSet {
                property: name.clone(),
                multiple: true,
                options,
            })
        })
    }

    /// The property a free-text answer goes into: `answer` when the schema has it (or has
    /// no properties), else its first string property.
    pub fn text_property(&self) -> String {
        let Some(props) = self.properties() else {
            return "answer".to_string();
        };
        if props.contains_key("answer") || props.is_empty() {
            return "answer".to_string();
        }
        props
            .iter()
            .find(|(_, s)| s.get("type").and_then(Value::as_str) == Some("string"))
            .or_else(|| props.iter().next())
            .map(|(name, _)| name.clone())
            .unwrap_or_else(|| "answer".to_string())
    }

    /// Turns what the user typed into an answer: empty input declines; for a choice
    /// question a number (1-based), several numbers separated by commas or spaces when
    /// several may be picked, or an option's title or value; otherwise the text itself.
    /// `Err` explains input that picks nothing valid (ask again).
    pub fn answer_from_input(&self, input: &str) -> Result<ElicitationAnswer, String> {
        let input = input.trim();
        if input.is_empty() {
            return Ok(ElicitationAnswer::Decline);
        }
        let Some(set) = self.choices() else {
            let mut content = Map::new();
            content.insert(self.text_property(), Value::String(input.to_string()));
            return Ok(ElicitationAnswer::Accept(Value::Object(content)));
        };
        let pick = |token: &str| -> Option<Value> {
            if let Ok(n) = token.parse::<usize>()
                && (1..=set.options.len()).contains(&n)
            {
                return Some(set.options[n - 1].value.clone());
            }
            set.options
                .iter()
                .find(|c| {
                    c.title.eq_ignore_ascii_case(token)
                        || c.value
                            .as_str()
                            .is_some_and(|v| v.eq_ignore_ascii_case(token))
                })
                .map(|c| c.value.clone())
        };
        let invalid = || {
            format!(
                "pick {} between 1 and {}",
                if set.multiple { "numbers" } else { "a number" },
                set.options.len()
            )
        };
        let value = if let Some(v) = pick(input) {
            if set.multiple {
                Value::Array(vec![v])
            } else {
                v
            }
        } else if set.multiple {
            let picked: Option<Vec<Value>> = input
                .split(|c: char| c == ',' || c.is_whitespace())
                .filter(|t| !t.is_empty())
                .map(pick)
                .collect();
            Value::Array(picked.ok_or_else(invalid)?)
        } else {
            return Err(invalid());
        };
        let mut content = Map::new();
        content.insert(set.property, value);
        Ok(ElicitationAnswer::Accept(Value::Object(content)))
    }
}

/// `oneOf`/`anyOf` of `{const, title?}`, or `enum` (with `enumNames` as titles).
fn options_of(schema: &Value) -> Option<Vec<Choice>> {
    for key in ["oneOf", "anyOf"] {
        if let Some(list) = schema.get(key).and_then(Value::as_array) {
            let options: Vec<Choice> = list
                .iter()
                .filter_map(|o| {
                    let value = o.get("const")?.clone();
                    let title = o
                        .get("title")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                        .unwrap_or_else(|| display_value(&value));
                    Some(Choice { value, title })
                })
                .collect();
            if !options.is_empty() {
                return Some(options);
            }
        }
    }
    let values = schema.get("enum")?.as_array()?;
    let names = schema.get("enumNames").and_then(Value::as_array);
    let options: Vec<Choice> = values
        .iter()
        .enumerate()
        .map(|(i, value)| Choice {
            value: value.clone(),
            title: names
                .and_then(|n| n.get(i))
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| display_value(value)),
        })
        .collect();
    (!options.is_empty()).then_some(options)
}

fn display_value(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elicitation(schema: Value) -> ElicitationRequest {
        ElicitationRequest::parse(
            json!(3),
            &json!({"sessionId": "s1", "mode": "form", "message": "Q?", "requestedSchema": schema}),
        )
        .unwrap()
    }

    #[test]
    fn free_text_elicitation() {
        let req = elicitation(json!({"type": "object",
            "properties": {"answer": {"type": "string"}}, "required": ["answer"]}));
        assert_eq!(req.choices(), None);
        assert_eq!(
            req.answer_from_input("  blue  ").unwrap().to_value(),
            json!({"action": "accept", "content": {"answer": "blue"}})
        );
        assert_eq!(
            req.answer_from_input("   \n").unwrap().to_value(),
            json!({"action": "decline"})
        );
        assert_eq!(
            ElicitationAnswer::Cancel.to_value(),
            json!({"action": "cancel"})
        );
        assert_eq!(
            ElicitationAnswer::text("x").to_value(),
            json!({"action": "accept", "content": {"answer": "x"}})
        );
        let other = elicitation(json!({"properties": {"reply": {"type": "string"}}}));
        assert_eq!(other.text_property(), "reply");
        let bare = ElicitationRequest::parse(
            json!(1),
            &json!({"sessionId": "s", "mode": "form", "message": "hi", "requestedSchema": {}}),
        )
        .unwrap();
        assert_eq!(bare.text_property(), "answer");
        assert_eq!(
            serde_json::to_value(bare.params()).unwrap(),
            json!({"sessionId": "s", "mode": "form", "message": "hi", "requestedSchema": {}})
        );
        // The vocabulary's shape: every field is required.
        assert!(ElicitationRequest::parse(json!(1), &json!({"message": "hi"})).is_err());
        assert!(ElicitationRequest::parse(json!(1), &json!({"sessionId": "s"})).is_err());
    }

    #[test]
    fn single_choice_elicitation() {
        let req = elicitation(json!({"type": "object", "properties": {"choice": {
            "type": "string",
            "oneOf": [{"const": "red", "title": "Red"}, {"const": "green", "title": "Green"}]
        }}}));
        let set = req.choices().unwrap();
        assert_eq!(set.property, "choice");
        assert!(!set.multiple);
        assert_eq!(set.options.len(), 2);
        assert_eq!(set.options[1].title, "Green");
        let accept = |content: Value| json!({"action": "accept", "content": content});
        assert_eq!(
            req.answer_from_input("2").unwrap().to_value(),
            accept(json!({"choice": "green"}))
        );
        assert_eq!(
            req.answer_from_input("red").unwrap().to_value(),
            accept(json!({"choice": "red"}))
        );
        assert_eq!(
            req.answer_from_input("GREEN").unwrap().to_value(),
            accept(json!({"choice": "green"}))
        );
        assert!(req.answer_from_input("3").is_err());
        assert!(req.answer_from_input("1,2").is_err());
        assert_eq!(
            req.answer_from_input("").unwrap(),
            ElicitationAnswer::Decline
        );
    }

    #[test]
    fn multiple_choice_elicitation() {
        let req = elicitation(json!({"type": "object", "properties": {"choices": {
            "type": "array",
            "items": {"anyOf": [{"const": "a", "title": "Apple"}, {"const": "b", "title": "Banana"},
                                {"const": "c"}]}
        }}}));
        let set = req.choices().unwrap();
        assert!(set.multiple);
        assert_eq!(set.options[2].title, "c");
        let accept = |content: Value| json!({"action": "accept", "content": content});
        assert_eq!(
            req.answer_from_input("1, 3").unwrap().to_value(),
            accept(json!({"choices": ["a", "c"]}))
        );
        assert_eq!(
            req.answer_from_input("banana").unwrap().to_value(),
            accept(json!({"choices": ["b"]}))
        );
        assert_eq!(
            req.answer_from_input("2 apple").unwrap().to_value(),
            accept(json!({"choices": ["b", "a"]}))
        );
        assert!(req.answer_from_input("1 9").is_err());
        let with_enum = elicitation(json!({"properties": {"pick": {
            "type": "string", "enum": ["x", "y"], "enumNames": ["Ex", "Why"]}}}));
        let set = with_enum.choices().unwrap();
        assert_eq!(
            (set.property.as_str(), set.options[1].title.as_str()),
            ("pick", "Why")
        );
    }
}

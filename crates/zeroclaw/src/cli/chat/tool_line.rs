//! How `zeroclaw chat` names a tool call on its line (SPEC §22): the command for `bash`,
//! the path for the file tools, else the tool and a one-line summary of its arguments
//! (`key: value, …`) — never raw JSON.

use serde_json::Value;

/// Characters of the summary of a call's arguments.
const SUMMARY_CHARS: usize = 200;

/// The call as its line shows it: `bash: ls -la`, `write_file: src/a.rs (120 bytes)`,
/// `search: query: rust, limit: 5`.
pub fn describe(name: &str, input: &Value) -> String {
    let text = |key: &str| input.get(key).and_then(Value::as_str);
    let what = match (name, text("command"), text("path")) {
        ("bash", Some(command), _) => one_line(command),
        ("write_file", _, Some(path)) => {
            let len = text("content").map_or(0, str::len);
            format!("{path} ({len} bytes)")
        }
        ("read_file", _, Some(path)) => path.to_owned(),
        _ => arguments(input),
    };
    let what = clip(&what);
    if what.is_empty() {
        name.to_owned()
    } else {
        format!("{name}: {what}")
    }
}

/// `key: value, …` of an object's members (strings unquoted, nested values compact); a
/// string given instead of an object is shown as it is.
fn arguments(input: &Value) -> String {
    match input {
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}: {}", one_line(s)),
                other => format!("{k}: {other}"),
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Null => String::new(),
        Value::String(s) => one_line(s),
        other => other.to_string(),
    }
}

/// Newlines shown as `⏎`.
fn one_line(s: &str) -> String {
    s.trim_end().replace('\n', " ⏎ ")
}

fn clip(s: &str) -> String {
    if s.chars().count() > SUMMARY_CHARS {
        let mut cut: String = s.chars().take(SUMMARY_CHARS - 1).collect();
        cut.push('…');
        cut
    } else {
        s.to_owned()
    }
}

/// A long text as lines of at most `width` characters, each indented by `indent`, broken
/// between words where it can (a word longer than a line is cut): the approval prompt
/// shows a command whole (SPEC §22).
pub fn wrap(text: &str, width: usize, indent: &str) -> String {
    let width = width.max(20);
    let mut out = String::new();
    for line in text.lines() {
        let mut current = String::new();
        let mut len = 0;
        for word in line.split(' ') {
            let mut word: Vec<char> = word.chars().collect();
            // A word that fits no line: its full-width pieces go on lines of their own.
            while word.len() > width {
                if len > 0 {
                    out.push_str(&format!("{indent}{current}\n"));
                    current.clear();
                    len = 0;
                }
                let rest = word.split_off(width);
                out.push_str(&format!("{indent}{}\n", word.iter().collect::<String>()));
                word = rest;
            }
            let needed = if len == 0 {
                word.len()
            } else {
                len + 1 + word.len()
            };
            if needed > width && len > 0 {
                out.push_str(&format!("{indent}{current}\n"));
                current.clear();
                len = 0;
            }
            if len > 0 {
                current.push(' ');
                len += 1;
            }
            current.extend(word.iter());
            len += word.len();
        }
        out.push_str(&format!("{indent}{current}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_the_command_the_path_or_the_arguments() {
        assert_eq!(
            describe("bash", &json!({"command": "ls -la\necho hi"})),
            "bash: ls -la ⏎ echo hi"
        );
        assert_eq!(
            describe("write_file", &json!({"path": "a.txt", "content": "hello"})),
            "write_file: a.txt (5 bytes)"
        );
        assert_eq!(
            describe("read_file", &json!({"path": "src/main.rs"})),
            "read_file: src/main.rs"
        );
        assert_eq!(
            describe("search", &json!({"query": "rust"})),
            "search: query: rust"
        );
        assert_eq!(
            describe("fetch", &json!({"opts": {"n": 2}})),
            "fetch: opts: {\"n\":2}"
        );
        assert_eq!(describe("ping", &json!({})), "ping");
        let long = describe("bash", &json!({"command": "x".repeat(500)}));
        assert_eq!(long.chars().count(), "bash: ".len() + SUMMARY_CHARS);
    }

    #[test]
    fn wraps_between_words_without_losing_any() {
        let text = format!("{}\nend", "a".repeat(45));
        assert_eq!(
            wrap(&text, 20, "  "),
            format!(
                "  {}\n  {}\n  {}\n  end\n",
                "a".repeat(20),
                "a".repeat(20),
                "a".repeat(5)
            )
        );
        assert_eq!(
            wrap("echo one two three END-OF-COMMAND", 20, "| "),
            "| echo one two three\n| END-OF-COMMAND\n"
        );
    }
}

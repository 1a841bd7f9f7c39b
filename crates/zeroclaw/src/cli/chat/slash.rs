//! Slash commands of `zeroclaw chat`: typed at the prompt, handled by the chat itself and
//! never sent to the model.

/// A line that starts with `/`.
#[derive(Debug, PartialEq, Eq)]
pub enum Slash {
    Help,
    Sessions,
    New,
    Cancel,
    Quit,
    /// `/model NAME`: this session's model from its next provider call (empty: show).
    Model(String),
    /// `/mode supervised|full|read_only`: this session's autonomy.
    Mode(String),
    Unknown(String),
}

pub const HELP: &str = "\
commands (not sent to the model):
  /help       this list
  /sessions   your sessions (id, agent, last activity, messages, title)
  /new        start a new session with the same agent
  /cancel     cancel the turn running in this session
  /model NAME use model NAME in this session (from its next provider call)
  /mode M     autonomy of this session: supervised, full or read_only
  /quit       leave the chat (also Ctrl-D)
keys: ←/→ and Home/End move · ↑/↓ recall earlier prompts · Ctrl-R searches them
      Ctrl-C cancels a running turn (at the prompt it exits)";

impl Slash {
    /// The command a line holds; `None` for a prompt (`//text` sends `/text`).
    pub fn parse(line: &str) -> Option<Slash> {
        let line = line.trim();
        let word = line.strip_prefix('/')?;
        if word.starts_with('/') {
            return None;
        }
        let mut words = word.split_whitespace();
        let name = words.next().unwrap_or("");
        let arg = words.collect::<Vec<_>>().join(" ");
        Some(match name {
            "model" => Slash::Model(arg),
            "mode" => Slash::Mode(arg),
            "help" | "h" | "?" => Slash::Help,
            "sessions" => Slash::Sessions,
            "new" => Slash::New,
            "cancel" => Slash::Cancel,
            "quit" | "exit" | "q" => Slash::Quit,
            other => Slash::Unknown(other.to_string()),
        })
    }
}

/// The text to send for a prompt line: `//x` is sent as `/x`.
pub fn prompt_text(line: &str) -> &str {
    let line = line.trim();
    if line.starts_with("//") {
        &line[1..]
    } else {
        line
    }
}

#[cfg(test)]
mod tests {
    use super::{Slash, prompt_text};

    #[test]
    fn parses_commands_and_escapes() {
        assert_eq!(Slash::parse("/help"), Some(Slash::Help));
        assert_eq!(Slash::parse("  /quit "), Some(Slash::Quit));
        assert_eq!(Slash::parse("/model x"), Some(Slash::Model("x".into())));
        assert_eq!(Slash::parse("/mode full"), Some(Slash::Mode("full".into())));
        assert_eq!(Slash::parse("/frob"), Some(Slash::Unknown("frob".into())));
        assert_eq!(Slash::parse("hello /help"), None);
        assert_eq!(Slash::parse("//etc/passwd"), None);
        assert_eq!(prompt_text("//etc/passwd"), "/etc/passwd");
        assert_eq!(prompt_text(" hi "), "hi");
    }
}

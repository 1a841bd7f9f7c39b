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
    /// `/mode supervised|full|read_only|plan`: this session's autonomy.
    Mode(String),
    /// `/compact [instructions]`: summarize the session's context now (SPEC §18).
    Compact(String),
    /// `/rewind [N]`: go back N turns (default 1); `Err` holds what was typed instead of N.
    Rewind(Result<u32, String>),
    /// `/rewind --keep-files [N]`: the conversation only, the files stay (SPEC §22).
    RewindKeepFiles(Result<u32, String>),
    /// `/diff [N]`: what the session changed, or the turn N prompts back (SPEC §22).
    Diff(Result<Option<u32>, String>),
    /// `/fork`: continue in a copy of the session.
    Fork,
    /// `/title TEXT`: name the session (empty: say how).
    Title(String),
    /// `/plan [PROMPT]`: plan mode for this session (SPEC §26), then PROMPT if any.
    Plan(String),
    /// `/implement`: supervised autonomy, then the prompt [`IMPLEMENT_PROMPT`].
    Implement,
    Unknown(String),
}

pub const HELP: &str = "\
commands (not sent to the model):
  /help       this list
  /sessions   your sessions (id, agent, last activity, messages, title)
  /new        start a new session with the same agent
  /cancel     cancel the turn running in this session
  /model NAME use model NAME in this session (from its next provider call)
  /mode M     autonomy of this session: supervised, full, read_only or plan
  /compact [INSTRUCTIONS]
              summarize this session's context now (the transcript stays whole)
  /rewind [N] go back N turns (default 1); the last rewound prompt returns to the line;
              it lists the turns and files first and asks
  /rewind --keep-files [N]
              go back in the conversation only: the files stay as they are
  /diff [N]   the files this session changed (or the turn N prompts back changed)
  /fork       continue in a copy of this session (the original stays as it is)
  /title TEXT name this session
  /plan [PROMPT]
              plan mode: the agent only reads and proposes a plan (then sends PROMPT)
  /implement  leave plan mode (supervised) and ask the agent to implement the plan
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
            "compact" => Slash::Compact(arg),
            "rewind" => match arg.strip_prefix("--keep-files") {
                Some(rest) => Slash::RewindKeepFiles(count(rest.trim())),
                None => Slash::Rewind(count(&arg)),
            },
            "diff" => Slash::Diff(match arg.as_str() {
                "" => Ok(None),
                n => count(n).map(Some),
            }),
            "fork" => Slash::Fork,
            "title" => Slash::Title(arg),
            "plan" => Slash::Plan(arg),
            "implement" => Slash::Implement,
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

/// What `/implement` sends once the session is supervised again (SPEC §26).
pub const IMPLEMENT_PROMPT: &str = "Implement the plan.";

/// A count of turns: empty is 1; `Err` holds what was typed instead.
fn count(arg: &str) -> Result<u32, String> {
    match arg {
        "" => Ok(1),
        n => n
            .parse::<u32>()
            .ok()
            .filter(|n| *n > 0)
            .ok_or_else(|| arg.to_owned()),
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
        assert_eq!(
            Slash::parse("/compact keep the plan"),
            Some(Slash::Compact("keep the plan".into()))
        );
        assert_eq!(
            Slash::parse("/compact"),
            Some(Slash::Compact(String::new()))
        );
        assert_eq!(Slash::parse("/rewind"), Some(Slash::Rewind(Ok(1))));
        assert_eq!(Slash::parse("/rewind 3"), Some(Slash::Rewind(Ok(3))));
        assert_eq!(
            Slash::parse("/rewind 0"),
            Some(Slash::Rewind(Err("0".into())))
        );
        assert_eq!(
            Slash::parse("/rewind two"),
            Some(Slash::Rewind(Err("two".into())))
        );
        assert_eq!(
            Slash::parse("/rewind --keep-files"),
            Some(Slash::RewindKeepFiles(Ok(1)))
        );
        assert_eq!(
            Slash::parse("/rewind --keep-files 2"),
            Some(Slash::RewindKeepFiles(Ok(2)))
        );
        assert_eq!(Slash::parse("/diff"), Some(Slash::Diff(Ok(None))));
        assert_eq!(Slash::parse("/diff 2"), Some(Slash::Diff(Ok(Some(2)))));
        assert_eq!(Slash::parse("/diff x"), Some(Slash::Diff(Err("x".into()))));
        assert_eq!(Slash::parse("/fork"), Some(Slash::Fork));
        assert_eq!(Slash::parse("/plan"), Some(Slash::Plan(String::new())));
        assert_eq!(
            Slash::parse("/plan fix  the build"),
            Some(Slash::Plan("fix the build".into()))
        );
        assert_eq!(Slash::parse("/implement"), Some(Slash::Implement));
        assert_eq!(
            Slash::parse("/title  Big   refactor "),
            Some(Slash::Title("Big refactor".into()))
        );
        assert_eq!(Slash::parse("/frob"), Some(Slash::Unknown("frob".into())));
        assert_eq!(Slash::parse("hello /help"), None);
        assert_eq!(Slash::parse("//etc/passwd"), None);
        assert_eq!(prompt_text("//etc/passwd"), "/etc/passwd");
        assert_eq!(prompt_text(" hi "), "hi");
    }
}

//! `zeroclaw chat`: a terminal client. On a terminal, prompts are typed in a line editor
//! (history kept in the data dir) and replies render as markdown; with stdin from a pipe
//! each line is a prompt and the reply text is written as it comes. Approvals and ask-user
//! questions are answered with the next line (an approval on a terminal with one key,
//! `keys.rs`). Where the session works, `-c`/`--resume` and the banner: `place.rs`;
//! `--approve` and how approvals settled elsewhere are told: `approve.rs` (SPEC §22). Lines starting with `/` are chat commands
//! (`/help`). Ctrl-C cancels the running turn, a second one (or one at the prompt) exits.
//! Turns other clients prompt in the session are shown too, their prompt first (SPEC §18);
//! lines typed meanwhile wait and are handled in order afterwards.
//!
//! Conversation (replies, tools, questions) goes to stdout; the header, notes and errors go
//! to stderr.

use std::io::IsTerminal;
use std::path::PathBuf;

use serde_json::Value;
use zeroclaw_client::protocol::session::{ListParams, MessagesParams};
use zeroclaw_client::protocol::stream::ConfigureParams;
use zeroclaw_client::protocol::{Autonomy, call, code};
use zeroclaw_client::{
    ClientError, ClientHandle, ElicitationAnswer, ErrorObject, Event, ServerMessage,
    SessionNewResult, UpdateKind,
};
use zeroclaw_ipc::Dirs;

use super::error::CliError;
use super::{rpc, sessions};

mod approve;
mod commands;
mod diff;
mod history_rows;
mod input;
mod keys;
mod live_output;
mod markdown;
mod place;
mod quiet;
mod slash;
mod tool_line;
mod turn;
mod ui;

pub use place::Place;

use input::{INTERRUPTED, Input, Interrupts, Read};
use slash::Slash;
use turn::Turn;
use ui::{Ui, message};

/// Messages of a resumed session shown before the prompt.
const RESUME_MESSAGES: u32 = 6;
/// The history file of the line editor, in the data dir.
const HISTORY_FILE: &str = "chat_history";

pub async fn run(
    config_dir: Option<PathBuf>,
    socket: Option<PathBuf>,
    agent: String,
    session: Option<String>,
    place: Place,
) -> Result<(), CliError> {
    let history = Dirs::resolve(config_dir.as_deref())
        .ok()
        .map(|dirs| dirs.data_dir.join(HISTORY_FILE));
    let interactive = std::io::stdin().is_terminal();
    let mut input = if interactive {
        Input::editor(history)?
    } else {
        Input::lines()
    };
    // After the editor: it sets a SIGINT handler of its own when it starts; ours, set
    // later, sees every Ctrl-C and passes it on to the editor's.
    let mut interrupts = Interrupts::new()?;
    let (client, me) = rpc::connect_named(config_dir, socket, true, "chat").await?;
    let (handle, mut events) = client.split();
    let mut ui = Ui::new(interactive);
    let info = place::open(&handle, &agent, session, &place, &mut ui, &mut input).await?;
    let policy = place.approve;
    // A turn that failed: with piped input the chat exits 1 at the end (SPEC §22).
    let mut any_failed = false;
    ui.header(&info);
    place::banner(&handle, &info.session_id, &mut ui).await;
    show_earlier(&handle, &info, &mut ui).await;
    let mut session_id = info.session_id.clone();
    let mut own_rewind: Option<String> = None;
    if info.resumed {
        // Attach (SPEC §14): every later turn of the session is shown here, whoever
        // prompts it; a running one is replayed from its start, pending approvals included.
        match handle.subscribe(&session_id, None).await {
            Ok(sub) if sub.active_turn_id.is_some() => {
                ui.note("a turn is running; showing it from its start");
                let mut turn =
                    Turn::new(&handle, &session_id, &me, &mut ui, &mut input).with_policy(policy);
                turn.watch(&mut events, &mut interrupts, None)
                    .await
                    .map_err(|e| e.to_string())?;
            }
            Ok(_) => {}
            Err(e) => ui.note(&format!(
                "not following other clients' turns: {}",
                message(&e)
            )),
        }
    }
    loop {
        ui.prompt_marker();
        let prompt = ui.take_prompt();
        if input.is_reading() {
            // The editor still reads the line whose prompt a watched turn cleared.
            ui.prompt_again(&prompt);
        }
        // Input first: at the end of piped input the chat ends cleanly even when the
        // daemon hung up at the same time.
        let next = loop {
            tokio::select! {
                biased;
                _ = interrupts.recv() => ui.exit(INTERRUPTED),
                read = input.next(&prompt, true) => break Idle::Read(read),
                event = events.next() => match event {
                    Some(event) => {
                        let seen = Seen { ui: &mut ui, prompt: &prompt, own_rewind: &mut own_rewind };
                        if let Some(first) = idle_event(&handle, &session_id, seen, event).await {
                            break Idle::Watch(Box::new(first));
                        }
                    }
                    None => return Err("the daemon closed the connection".into()),
                },
            }
        };
        let read = match next {
            Idle::Read(read) => read,
            Idle::Watch(first) => {
                // A turn someone else started: shown, its questions asked, until it ends.
                ui.leave_prompt();
                let mut turn =
                    Turn::new(&handle, &session_id, &me, &mut ui, &mut input).with_policy(policy);
                turn.watch(&mut events, &mut interrupts, Some(*first))
                    .await
                    .map_err(|e| e.to_string())?;
                continue;
            }
        };
        let mut line = match read {
            Read::Line(line) => line,
            Read::End => {
                ui.end_line();
                return ended(interactive, any_failed);
            }
            Read::Interrupt => ui.exit(INTERRUPTED),
        };
        if line.trim().is_empty() {
            continue;
        }
        if let Some(command) = Slash::parse(&line) {
            // `/plan PROMPT` and `/implement` go on to send a prompt (SPEC §26).
            let mut then_send = None;
            match command {
                Slash::Help => ui.print(slash::HELP),
                Slash::Sessions => {
                    let all = ListParams::default();
                    let text = match handle.call_typed_value::<call::SessionList>(&all).await {
                        Ok(list) => sessions::table(&handle, &list, 20).await,
                        Err(e) => format!("error: {}", message(&e)),
                    };
                    ui.print(&text);
                }
                Slash::New => {
                    let here = Place {
                        continue_newest: false,
                        resume: false,
                        ..place.clone()
                    };
                    match place::open(&handle, &agent, None, &here, &mut ui, &mut input).await {
                        Ok(info) => {
                            ui.header(&info);
                            place::banner(&handle, &info.session_id, &mut ui).await;
                            session_id = info.session_id;
                        }
                        Err(e) => ui.error(&e),
                    }
                }
                Slash::Cancel => match handle.cancel(&session_id).await {
                    Ok(()) => ui.note("cancel sent"),
                    Err(ClientError::Rpc(e)) if e.code == code::SESSION_NOT_FOUND => {
                        ui.note("no turn is running in this session")
                    }
                    Err(e) => ui.error(&message(&e)),
                },
                Slash::Model(name) => {
                    let model = (!name.is_empty()).then_some(name);
                    configure(&handle, &session_id, &mut ui, model, None).await;
                }
                Slash::Mode(word) => match autonomy(&word) {
                    Ok(autonomy) => {
                        configure(&handle, &session_id, &mut ui, None, autonomy).await;
                    }
                    Err(why) => ui.error(&why),
                },
                Slash::Plan(text) => {
                    let plan = Some(Autonomy::Plan);
                    if configure(&handle, &session_id, &mut ui, None, plan).await {
                        ui.note("plan mode: the agent reads and proposes a plan; /implement carries it out");
                        then_send = (!text.is_empty()).then_some(text);
                    }
                }
                Slash::Implement => {
                    let supervised = Some(Autonomy::Supervised);
                    if configure(&handle, &session_id, &mut ui, None, supervised).await {
                        then_send = Some(slash::IMPLEMENT_PROMPT.to_owned());
                    }
                }
                Slash::Title(text) => commands::title(&handle, &session_id, &mut ui, &text).await,
                Slash::Fork => {
                    if let Some(id) = commands::fork(&handle, &session_id, &mut ui).await {
                        session_id = id.into();
                    }
                }
                Slash::Compact(instructions) => {
                    let turn = Turn::new(&handle, &session_id, &me, &mut ui, &mut input)
                        .with_policy(policy);
                    if let Err(e) =
                        commands::compact(turn, &mut events, &mut interrupts, &instructions).await
                    {
                        ui.end_line();
                        return Err(e.to_string().into());
                    }
                }
                Slash::Rewind(Ok(n)) | Slash::RewindKeepFiles(Ok(n)) => {
                    let files = matches!(command, Slash::Rewind(_));
                    if diff::confirm_rewind(&handle, &session_id, &mut ui, &mut input, n, files)
                        .await
                    {
                        own_rewind =
                            commands::rewind(&handle, &session_id, &mut ui, &mut input, n, files)
                                .await;
                    }
                }
                Slash::Rewind(Err(arg)) | Slash::RewindKeepFiles(Err(arg)) => ui.note(&format!(
                    "/rewind takes a number of turns (1 or more), not {arg:?}"
                )),
                Slash::Diff(Ok(n)) => diff::show(&handle, &session_id, &mut ui, n).await,
                Slash::Diff(Err(arg)) => ui.note(&format!(
                    "/diff takes a number of turns back (1 or more), not {arg:?}"
                )),
                Slash::Quit => {
                    ui.end_line();
                    return ended(interactive, any_failed);
                }
                Slash::Unknown(name) => ui.note(&format!(
                    "unknown command /{name}; /help lists the commands"
                )),
            }
            match then_send {
                Some(text) => line = text,
                None => continue,
            }
        }
        let mut turn =
            Turn::new(&handle, &session_id, &me, &mut ui, &mut input).with_policy(policy);
        let ran = turn
            .run(&mut events, &mut interrupts, slash::prompt_text(&line))
            .await;
        any_failed |= turn.failed;
        match ran {
            Ok(()) => {}
            Err(ClientError::Rpc(e)) => {
                any_failed = true;
                ui.error(&format!("{} (code {})", e.message, e.code))
            }
            Err(e) => {
                ui.end_line();
                return Err(e.to_string().into());
            }
        }
    }
}

/// How the chat ends at the end of its input or `/quit`: with piped input, status 1 when a
/// turn failed (SPEC §22), so a script can tell.
fn ended(interactive: bool, any_failed: bool) -> Result<(), CliError> {
    if !interactive && any_failed {
        return Err("a turn failed (see above)".into());
    }
    Ok(())
}

/// A resumed session's last messages, before the first prompt.
async fn show_earlier(handle: &ClientHandle, info: &SessionNewResult, ui: &mut Ui) {
    if !info.resumed || info.message_count == 0 {
        return;
    }
    let params = MessagesParams {
        session_id: info.session_id.clone(),
        mode: Some(info.mode),
        limit: Some(RESUME_MESSAGES),
        before_seq: None,
        include_rewound: None,
    };
    match handle
        .call_typed_value::<call::SessionMessages>(&params)
        .await
    {
        Ok(page) => {
            let rows = page["messages"].as_array().cloned().unwrap_or_default();
            let total = page["total"].as_u64().unwrap_or(info.message_count);
            if !rows.is_empty() {
                ui.history(&rows, total);
            }
        }
        Err(e) => ui.note(&format!("cannot show earlier messages: {}", message(&e))),
    }
}

/// The autonomy `/mode WORD` asks for (`None` for no word). A word outside the vocabulary
/// is refused here, before anything is sent, with the -32602 the daemon would answer (the
/// vocabulary's own sentence), so the window reads as it did when the daemon refused it.
fn autonomy(word: &str) -> Result<Option<Autonomy>, String> {
    if word.is_empty() {
        return Ok(None);
    }
    serde_json::from_value(Value::from(word))
        .map(Some)
        .map_err(|e| {
            message(&ClientError::Rpc(ErrorObject::invalid_params(
                e.to_string(),
            )))
        })
}

/// `/model` and `/mode`: `session/configure` for this session (SPEC §16); with nothing to
/// change, shows the current settings. Whether it succeeded.
async fn configure(
    handle: &ClientHandle,
    session_id: &str,
    ui: &mut Ui,
    model: Option<String>,
    autonomy: Option<Autonomy>,
) -> bool {
    let params = ConfigureParams {
        session_id: session_id.into(),
        mode: None,
        autonomy,
        model,
    };
    match handle.call_typed::<call::SessionConfigure>(&params).await {
        Ok(r) => {
            ui.note(&format!("model {} · autonomy {}", r.model, r.autonomy));
            true
        }
        Err(e) => {
            ui.error(&message(&e));
            false
        }
    }
}

/// What the idle prompt got: a line, or the first event of a turn to watch.
enum Idle {
    Read(Read),
    Watch(Box<Event>),
}

/// Something the daemon sent while this window runs no turn. A question of this session, or
/// an update of a turn's prompt or of its work, means a turn started elsewhere: it is
/// returned, to be watched until its `turn_complete`. Questions of other sessions are
/// cancelled; anything else is dropped.
/// What the idle prompt shows events on.
struct Seen<'a> {
    ui: &'a mut Ui,
    /// The line editor's prompt (drawn again after a note).
    prompt: &'a str,
    /// The turn this window last rewound to: its `session_rewound` is not news.
    own_rewind: &'a mut Option<String>,
}

async fn idle_event(
    handle: &ClientHandle,
    session_id: &str,
    seen: Seen<'_>,
    event: Event,
) -> Option<Event> {
    let Seen {
        ui,
        prompt,
        own_rewind,
    } = seen;
    match event {
        Event::Elicitation(req) if req.session_id == session_id => {
            return Some(Event::Elicitation(req));
        }
        Event::Elicitation(req) => {
            let _ = handle
                .answer_elicitation(&req, &ElicitationAnswer::Cancel)
                .await;
        }
        Event::Other(ServerMessage::Request { id, method, .. }) => {
            let _ = handle
                .respond(id, Err(ErrorObject::method_not_found(&method)))
                .await;
        }
        Event::Update(u) if u.session_id == session_id => match u.kind {
            UpdateKind::UserMessage { .. }
            | UpdateKind::AgentMessageChunk { .. }
            | UpdateKind::AgentThoughtChunk { .. }
            | UpdateKind::ToolCall { .. }
            | UpdateKind::ToolResult { .. }
            | UpdateKind::ApprovalRequest { .. } => return Some(Event::Update(u)),
            // Another client rewound or compacted the session (SPEC §18): said, not watched.
            UpdateKind::SessionRewound { to_turn_id, .. }
                if own_rewind.as_deref() == Some(to_turn_id.as_str()) =>
            {
                *own_rewind = None;
            }
            UpdateKind::SessionRewound { rewound_turns, .. } => {
                ui.leave_prompt();
                ui.note(&format!(
                    "another client rewound this session: {} turn(s) taken back",
                    rewound_turns.len()
                ));
                ui.prompt_again(prompt);
            }
            UpdateKind::ContextCompacted {
                summarized_messages,
                ..
            } => {
                ui.leave_prompt();
                ui.note(&format!(
                    "another client compacted this session's context: {summarized_messages} older messages summarized"
                ));
                ui.prompt_again(prompt);
            }
            _ => tracing::debug!("update outside a turn: {:?}", u.kind),
        },
        _ => {}
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mode_words_are_the_autonomy_vocabulary() {
        assert_eq!(autonomy(""), Ok(None));
        assert_eq!(autonomy("read_only"), Ok(Some(Autonomy::ReadOnly)));
        // Word for word what the daemon answered `session/configure` with this word.
        assert_eq!(
            autonomy("sometimes"),
            Err(
                "unknown autonomy \"sometimes\": expected supervised, full, read_only or plan (code -32602)"
                    .to_string()
            )
        );
    }
}

//! Persistence of a turn, between the turn loop and the store.
//!
//! - [`Persister`]: one task per ACP turn, the only writer of its checkpoint progress (and
//!   normally of its `begin_turn`, which then overlaps the provider's first byte).
//!   It receives streamed text and step boundaries in the order the turn produced them, so
//!   an older text can never overwrite a newer one. Text is written at every step boundary
//!   and, while it streams, as soon as unsaved text is [`FLUSH_AFTER`] old (a 25 ms tick
//!   catches streams that pause), so a crash loses at most about the last 250 ms of it.
//!   The streamed text is read from the turn's own buffer ([`StepText`]), not copied, and
//!   each write appends only what streamed since the last one (`Store::append_text`).
//! - [`visible_rows`]: the transcript rows a finished turn appends, in context order
//!   (assistant text, then its tool calls, then their results); [`lend_rows`] the same
//!   rows with the held assistant texts moved out of the context (and put back after the
//!   write). A spilled answer's row is written from its file ([`long_answers`]).
//! - [`context_from`]: the provider context rebuilt from a snapshot plus transcript rows;
//!   the inverse of `visible_rows`, made provider-safe.
//! - [`plan_trim`]: which oldest whole turns leave the retained context.

use std::time::Duration;
use zeroclaw_protocol::TurnId;

use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use zeroclaw_agent::{
    ChatMessage, StepText, Text, ToolCallRequest, estimate_tokens, provider_safe,
};
use zeroclaw_store::{
    NewRow, Progress, RestoredContext, Role, SessionKey, Store, StoreError, ToolCall, ToolResult,
};

use super::long_answers;

/// Unsaved streamed text older than this is written (below the 250 ms contract, leaving
/// room for the tick and the write itself).
pub const FLUSH_AFTER: Duration = Duration::from_millis(200);
const TICK: Duration = Duration::from_millis(25);

/// The most text one checkpoint write carries. A longer text is written in pieces of at
/// most this many bytes, one transaction each, so a write costs a few times this (its
/// JSON, SQLite's bound copy and record) however long the answer (issue 27).
pub const MAX_PIECE: usize = 256 * 1024;

/// What the turn reports to its persister.
pub(crate) enum Op {
    /// Text streamed: the provider call's text so far, shared with the turn.
    Chunk(StepText),
    Step(ChatMessage),
    /// An assistant step too long to copy whole is handed over by [`send_step`]: first the
    /// persister answers how much of the call's streamed text it has written (the call
    /// has ended: that text is not flushed any more),
    Written(oneshot::Sender<usize>),
    /// then the step's text from byte `from` on, one piece at a time (`from == 0`: the
    /// text starts here and replaces whatever the segment holds).
    Piece {
        from: usize,
        text: String,
        then: AfterPiece,
    },
}

/// What follows a [`Op::Piece`].
pub(crate) enum AfterPiece {
    /// More pieces: whether this one was written. After a failed write the host sends no
    /// more text (a later piece would leave a gap in the checkpoint).
    Ack(oneshot::Sender<bool>),
    /// It was the last piece: the step ends with these tool calls.
    End(Vec<ToolCallRequest>),
}

/// Hands the persister an assistant step the turn has just appended to its context. A
/// text of up to [`MAX_PIECE`] bytes is copied into an [`Op::Step`]; a longer one is
/// copied a piece at a time, each sent only once the one before is written, and only
/// from where the streamed checkpoint left off: a long answer is never held a second
/// time for its checkpoint (issue 27). The turn waits meanwhile, as it would on a full
/// queue.
pub(crate) async fn send_step(tx: &ProgressTx, content: &Text, tool_calls: &[ToolCallRequest]) {
    // The persister outlives the turn loop; a send can only fail after it stopped.
    if content.len() <= MAX_PIECE {
        let message = ChatMessage::Assistant {
            content: content.clone(),
            tool_calls: tool_calls.to_vec(),
        };
        let _ = tx.send(Op::Step(message)).await;
        return;
    }
    let (reply, written) = oneshot::channel();
    if tx.send(Op::Written(reply)).await.is_err() {
        return;
    }
    let mut from = written.await.unwrap_or(0);
    if !content.is_char_boundary(from) {
        // Not a beginning of this text: write it whole.
        from = 0;
    }
    loop {
        let piece = content.piece(from, MAX_PIECE);
        let end = from + piece.len();
        if end >= content.len() || piece.is_empty() {
            let then = AfterPiece::End(tool_calls.to_vec());
            let text = piece.into_owned();
            let _ = tx.send(Op::Piece { from, text, then }).await;
            return;
        }
        let (ack, written) = oneshot::channel();
        let text = piece.into_owned();
        let then = AfterPiece::Ack(ack);
        if tx.send(Op::Piece { from, text, then }).await.is_err() {
            return;
        }
        if !written.await.unwrap_or(false) {
            let then = AfterPiece::End(tool_calls.to_vec());
            let text = String::new();
            let _ = tx
                .send(Op::Piece {
                    from: end,
                    text,
                    then,
                })
                .await;
            return;
        }
        from = end;
    }
}

/// The sending half handed to the turn's host.
pub(crate) type ProgressTx = mpsc::Sender<Op>;

/// Steps a turn may run ahead of its persister.
const PROGRESS_QUEUE: usize = 1024;

pub(crate) struct Persister {
    tx: ProgressTx,
    task: JoinHandle<()>,
}

/// The outcome of `begin_turn` when the persister runs it: the prompt row's seq.
pub(crate) type Began = oneshot::Receiver<Result<i64, StoreError>>;

impl Persister {
    /// Starts the persister of an open turn. With `begin = Some(prompt)` it first runs
    /// `begin_turn` itself (reporting the outcome through [`Began`]) so that the turn's
    /// provider call does not wait for that commit; progress is still written only after
    /// it, and nothing at all if it failed.
    pub fn spawn(
        store: Store,
        key: SessionKey,
        turn_id: TurnId,
        begin: Option<String>,
    ) -> (Persister, Option<Began>) {
        let (tx, rx) = mpsc::channel(PROGRESS_QUEUE);
        let (began, began_rx) = match begin {
            Some(prompt) => {
                let (tx, rx) = oneshot::channel();
                (Some((prompt, tx)), Some(rx))
            }
            None => (None, None),
        };
        let task = tokio::spawn(run(store, key, turn_id, began, rx));
        (Persister { tx, task }, began_rx)
    }

    pub fn sender(&self) -> ProgressTx {
        self.tx.clone()
    }

    /// Writes what is still queued, then stops.
    pub async fn finish(self) {
        drop(self.tx);
        let _ = self.task.await;
    }
}

struct Writer {
    store: Store,
    key: SessionKey,
    turn_id: TurnId,
    segment: u32,
    /// The running provider call's text, shared with the turn (empty once it ended).
    text: StepText,
    /// Bytes of `text` already in the checkpoint: a flush appends only what follows.
    written: usize,
    dirty_since: Option<Instant>,
}

impl Writer {
    async fn record(&self, progress: Progress) {
        if let Err(e) = self
            .store
            .record_progress(&self.key, &self.turn_id, progress)
            .await
        {
            tracing::warn!(session = %self.key.session_id, turn = %self.turn_id, "checkpoint write failed: {e}");
        }
    }

    async fn flush_text(&mut self) {
        let Some(since) = self.dirty_since.take() else {
            return;
        };
        // The new part (at most one piece of it) is encoded from the turn's text while it
        // is looked at (the turn waits that long to append) and appended to what is
        // written; only its JSON goes to the store. Once the call ended the text is empty
        // and the rest comes with the step.
        let Some((write, end)) = self.text.with_piece(self.written, MAX_PIECE, |piece| {
            let write = self
                .store
                .append_text(&self.key, &self.turn_id, self.segment, piece);
            (write, self.written + piece.len())
        }) else {
            return;
        };
        match write.await {
            Ok(_) => {
                self.written = end;
                if self.text.len() > end {
                    // Still behind: the next piece goes at the next tick or chunk.
                    self.dirty_since = Some(since);
                }
            }
            // Nothing was appended: the next flush writes this part again with the rest.
            Err(e) => {
                tracing::warn!(session = %self.key.session_id, turn = %self.turn_id, "checkpoint write failed: {e}")
            }
        }
    }

    /// A new text of the running call: the part already written belongs to another.
    fn streaming(&mut self, text: StepText) {
        if !text.same_as(&self.text) {
            self.text = text;
            self.written = 0;
        }
    }

    /// The running call has ended: its text is not flushed any more. Returns how much of
    /// it was written.
    fn step_begins(&mut self) -> usize {
        self.dirty_since = None;
        self.text = StepText::default();
        std::mem::take(&mut self.written)
    }

    /// The next piece of a long step's text ([`send_step`]).
    async fn piece(&mut self, from: usize, text: String, then: AfterPiece) {
        let written = if text.is_empty() {
            Ok(0)
        } else {
            self.write_piece(from == 0, &text).await
        };
        drop(text);
        if let Err(e) = &written {
            tracing::warn!(session = %self.key.session_id, turn = %self.turn_id, "checkpoint write failed: {e}");
        }
        match then {
            AfterPiece::Ack(ack) => {
                let _ = ack.send(written.is_ok());
            }
            AfterPiece::End(tool_calls) => self.step_ends(&tool_calls).await,
        }
    }

    /// Writes one piece of the segment's text: the first of a whole text replaces what
    /// the segment holds (`first`), any later one is appended to it.
    async fn write_piece(&self, first: bool, piece: &str) -> Result<u32, StoreError> {
        let (store, key, turn) = (&self.store, &self.key, &self.turn_id);
        if first {
            store.record_text(key, turn, self.segment, piece).await
        } else {
            store.append_text(key, turn, self.segment, piece).await
        }
    }

    /// An assistant step's text is written: the next call's text is the next segment.
    async fn step_ends(&mut self, tool_calls: &[ToolCallRequest]) {
        self.segment += 1;
        for call in tool_calls {
            self.record(Progress::ToolCall(tool_call_of(call))).await;
        }
    }

    async fn step(&mut self, message: ChatMessage) {
        match message {
            // The prompt row was written by `begin_turn`.
            ChatMessage::User { .. } => {}
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                // The step's whole text is in `content`, and what was written of it
                // while it streamed is its beginning: append the rest. Should it not
                // be (a text shorter than what was written), write it whole instead.
                // Either way in pieces, each appended only once the one before is in.
                let written = self.step_begins();
                let (mut from, mut whole) = match written {
                    0 => (0, true),
                    w if w <= content.len() && content.is_char_boundary(w) => (w, false),
                    _ => (0, true),
                };
                while from < content.len() {
                    let piece = content.piece(from, MAX_PIECE);
                    if piece.is_empty() {
                        break;
                    }
                    if let Err(e) = self.write_piece(whole, &piece).await {
                        tracing::warn!(session = %self.key.session_id, turn = %self.turn_id, "checkpoint write failed: {e}");
                        break;
                    }
                    whole = false;
                    from += piece.len();
                }
                drop(content);
                self.step_ends(&tool_calls).await;
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
            } => {
                let result = ToolResult {
                    tool_call_id,
                    name,
                    raw_output: Value::String(content),
                };
                self.record(Progress::ToolResult(result)).await;
            }
        }
    }
}

async fn run(
    store: Store,
    key: SessionKey,
    turn_id: TurnId,
    begin: Option<(String, oneshot::Sender<Result<i64, StoreError>>)>,
    mut rx: mpsc::Receiver<Op>,
) {
    if let Some((prompt, began)) = begin {
        let outcome = store.begin_turn_owned(&key, &turn_id, prompt).await;
        let ok = outcome.is_ok();
        let _ = began.send(outcome);
        if !ok {
            // The turn is being abandoned: nothing of it may be recorded.
            while rx.recv().await.is_some() {}
            return;
        }
    }
    let mut w = Writer {
        store,
        key,
        turn_id,
        segment: 0,
        text: StepText::default(),
        written: 0,
        dirty_since: None,
    };
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            op = rx.recv() => match op {
                None => break,
                Some(Op::Chunk(text)) => {
                    w.streaming(text);
                    let since = *w.dirty_since.get_or_insert_with(Instant::now);
                    if since.elapsed() >= FLUSH_AFTER {
                        w.flush_text().await;
                    }
                }
                Some(Op::Step(message)) => w.step(message).await,
                Some(Op::Written(reply)) => {
                    let _ = reply.send(w.step_begins());
                }
                Some(Op::Piece { from, text, then }) => w.piece(from, text, then).await,
            },
            _ = tick.tick(), if w.dirty_since.is_some() => {
                if w.dirty_since.is_some_and(|t| t.elapsed() >= FLUSH_AFTER) {
                    w.flush_text().await;
                }
            }
        }
    }
}

/// The arguments string as stored: the parsed JSON when it parses, else the raw string.
fn raw_input_of(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Default::default());
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

fn tool_call_of(call: &ToolCallRequest) -> ToolCall {
    ToolCall {
        tool_call_id: call.id.clone(),
        name: call.name.clone(),
        raw_input: raw_input_of(&call.arguments),
    }
}

/// Transcript rows for messages a turn appended (its user prompt excluded).
pub(crate) fn visible_rows(messages: &[ChatMessage]) -> Vec<NewRow> {
    let mut rows = Vec::new();
    for m in messages {
        match m {
            ChatMessage::User { .. } => {}
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                if !content.is_empty() {
                    rows.push(long_answers::answer_row(content));
                }
                for c in tool_calls {
                    rows.push(NewRow::tool_call(&tool_call_of(c)));
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
            } => rows.push(NewRow::tool_result(&ToolResult {
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                raw_output: Value::String(content.clone()),
            })),
        }
    }
    rows
}

/// The transcript rows of [`visible_rows`] with the assistant texts moved out of
/// `messages` rather than copied (a long answer is then held once while the store writes
/// it), and where those texts go back ([`LentTexts::give_back`]).
pub(crate) fn lend_rows(messages: &mut [ChatMessage]) -> (Vec<NewRow>, LentTexts) {
    let mut rows = Vec::new();
    let mut from = Vec::new();
    for (i, m) in messages.iter_mut().enumerate() {
        match m {
            ChatMessage::User { .. } => {}
            ChatMessage::Assistant {
                content,
                tool_calls,
            } => {
                match content {
                    Text::Held(held) if !held.is_empty() => {
                        from.push((i, rows.len()));
                        rows.push(NewRow::assistant(std::mem::take(held)));
                    }
                    // A spilled answer is written from its file: nothing to lend.
                    Text::Spilled(_) => rows.push(long_answers::answer_row(content)),
                    Text::Held(_) => {}
                }
                for c in tool_calls.iter() {
                    rows.push(NewRow::tool_call(&tool_call_of(c)));
                }
            }
            ChatMessage::Tool {
                tool_call_id,
                name,
                content,
            } => rows.push(NewRow::tool_result(&ToolResult {
                tool_call_id: tool_call_id.clone(),
                name: name.clone(),
                raw_output: Value::String(content.clone()),
            })),
        }
    }
    (rows, LentTexts(from))
}

/// Where [`lend_rows`] took each assistant text from: (message index, row index).
pub(crate) struct LentTexts(Vec<(usize, usize)>);

impl LentTexts {
    /// Puts the texts of `rows` (as the store handed them back) back into `messages`, the
    /// slice `lend_rows` took them from.
    pub(crate) fn give_back(self, messages: &mut [ChatMessage], rows: Vec<NewRow>) {
        let mut rows: Vec<Option<NewRow>> = rows.into_iter().map(Some).collect();
        for (i, r) in self.0 {
            if let (Some(ChatMessage::Assistant { content, .. }), Some(row)) =
                (messages.get_mut(i), rows.get_mut(r).and_then(Option::take))
            {
                *content = Text::Held(row.content);
            }
        }
    }
}

/// The provider context of a restored session: the snapshot's messages, then the rows
/// after its boundary (tool calls joined to the assistant message they follow), with
/// every unmatched tool call or result removed.
pub(crate) fn context_from(restored: &RestoredContext) -> Vec<ChatMessage> {
    let mut out: Vec<ChatMessage> = match &restored.snapshot {
        Some(s) => serde_json::from_value(s.messages.clone()).unwrap_or_else(|e| {
            tracing::warn!("unreadable context snapshot {} ignored: {e}", s.id);
            Vec::new()
        }),
        None => Vec::new(),
    };
    for row in &restored.rows {
        match row.role {
            Role::User => out.push(ChatMessage::user(row.content.clone())),
            // A long answer goes back to a spill file: the context holds it on disk.
            Role::Assistant => out.push(ChatMessage::assistant(Text::spilled_if_long(
                row.content.clone(),
            ))),
            Role::ToolCall => {
                let Some(c) = ToolCall::from_content(&row.content) else {
                    continue;
                };
                let request = ToolCallRequest {
                    id: c.tool_call_id,
                    name: c.name,
                    arguments: match c.raw_input {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                };
                match out.last_mut() {
                    Some(ChatMessage::Assistant { tool_calls, .. }) => tool_calls.push(request),
                    _ => out.push(ChatMessage::Assistant {
                        content: Text::default(),
                        tool_calls: vec![request],
                    }),
                }
            }
            Role::ToolResult => {
                let Some(r) = ToolResult::from_content(&row.content) else {
                    continue;
                };
                out.push(ChatMessage::tool_result(
                    r.tool_call_id,
                    r.name,
                    match r.raw_output {
                        Value::String(s) => s,
                        other => other.to_string(),
                    },
                ));
            }
            Role::Interruption | Role::Compaction | Role::Rewind | Role::Error | Role::Plan => {}
        }
    }
    provider_safe(&out)
}

/// A trim of the retained context: the messages before `dropped` leave it.
#[derive(Debug, PartialEq)]
pub(crate) struct Trim {
    pub dropped: usize,
}

/// When `context` is over `max_tokens`, drops the oldest whole turns (a turn starts at a
/// user message) until it fits, always keeping the latest turn. `None` when nothing needs
/// to or can be dropped. Nothing is copied: the kept messages are `context[dropped..]`.
pub(crate) fn plan_trim(context: &[ChatMessage], max_tokens: usize) -> Option<Trim> {
    if estimate_tokens(context) <= max_tokens {
        return None;
    }
    let starts: Vec<usize> = context
        .iter()
        .enumerate()
        .filter(|(i, m)| *i > 0 && matches!(m, ChatMessage::User { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut cut = None;
    for s in starts {
        cut = Some(s);
        if estimate_tokens(&context[s..]) <= max_tokens {
            break;
        }
    }
    Some(Trim { dropped: cut? })
}

#[cfg(test)]
#[path = "persist_stream_tests.rs"]
mod stream_tests;

#[cfg(test)]
mod tests {
    use super::*;
    use zeroclaw_store::{ContextRow, Snapshot};

    fn call(id: &str) -> ToolCallRequest {
        ToolCallRequest {
            id: id.into(),
            name: "bash".into(),
            arguments: r#"{"command":"ls"}"#.into(),
        }
    }

    fn turn_messages() -> Vec<ChatMessage> {
        vec![
            ChatMessage::user("q"),
            ChatMessage::Assistant {
                content: "looking".into(),
                tool_calls: vec![call("a"), call("b")],
            },
            ChatMessage::tool_result("a", "bash", "out a"),
            ChatMessage::tool_result("b", "bash", "out b"),
            ChatMessage::Assistant {
                content: Text::default(),
                tool_calls: vec![call("c")],
            },
            ChatMessage::tool_result("c", "bash", "out c"),
            ChatMessage::assistant("done"),
        ]
    }

    #[test]
    fn rows_round_trip_to_the_same_context() {
        let msgs = turn_messages();
        let mut rows = vec![ContextRow {
            seq: 1,
            turn_id: None,
            role: Role::User,
            content: "q".into(),
        }];
        for (i, r) in visible_rows(&msgs).into_iter().enumerate() {
            rows.push(ContextRow {
                seq: i as i64 + 2,
                turn_id: None,
                role: r.role,
                content: r.content,
            });
        }
        let restored = RestoredContext {
            snapshot: None,
            rows,
        };
        assert_eq!(context_from(&restored), msgs);
    }

    #[test]
    fn lent_rows_are_the_visible_rows_and_go_back() {
        let msgs = turn_messages();
        let mut lent_from = msgs.clone();
        let (rows, from) = lend_rows(&mut lent_from[1..]);
        assert_eq!(rows, visible_rows(&msgs[1..]));
        assert_ne!(lent_from, msgs, "the texts were moved out");
        from.give_back(&mut lent_from[1..], rows);
        assert_eq!(lent_from, msgs);
    }

    #[test]
    fn snapshot_first_and_interruptions_skipped() {
        let snap = vec![
            ChatMessage::user("old"),
            ChatMessage::assistant("old answer"),
        ];
        let restored = RestoredContext {
            snapshot: Some(Snapshot {
                id: 1,
                covers_seq: 2,
                messages: serde_json::to_value(&snap).unwrap(),
                created_at: 0,
            }),
            rows: vec![
                ContextRow {
                    seq: 3,
                    turn_id: None,
                    role: Role::User,
                    content: "new".into(),
                },
                ContextRow {
                    seq: 4,
                    turn_id: None,
                    role: Role::Interruption,
                    content: "[interrupted]".into(),
                },
            ],
        };
        let ctx = context_from(&restored);
        assert_eq!(ctx.len(), 3);
        assert_eq!(ctx[2], ChatMessage::user("new"));
    }

    #[test]
    fn trim_drops_oldest_whole_turns_and_keeps_the_last() {
        let mut ctx = Vec::new();
        for i in 0..3 {
            ctx.push(ChatMessage::user(format!(
                "question {i} {}",
                "x".repeat(100)
            )));
            ctx.push(ChatMessage::assistant("y".repeat(100)));
        }
        assert_eq!(plan_trim(&ctx, 100_000), None);
        let t = plan_trim(&ctx, 1).expect("trim");
        assert_eq!(t.dropped, 4);
        let t = plan_trim(&ctx, estimate_tokens(&ctx[2..])).expect("trim");
        assert_eq!(t.dropped, 2);
        assert_eq!(
            plan_trim(&ctx[4..], 1),
            None,
            "a single turn is never dropped"
        );
    }
}

//! A session's event stream (SPEC §14): every `session/update` of every turn, numbered
//! (`turnId`, `eventSeq` from 1 without gaps), fanned out to the session's subscribers and
//! kept in a replay buffer (the running turn and the last completed one, at most
//! [`BUFFER_BYTES`] of serialized updates).
//!
//! Memory (SPEC §17.1 "Queued output is bounded per principal"): a line is built once and
//! every subscriber's queue holds a reference to it until it is written. The buffer keeps
//! each event without the envelope it shares with its turn (session, type, turn, number),
//! so a short event costs it a fraction of its line, and writes the line again when it is
//! replayed. A replay is shared: the first subscriber that needs an event replayed makes
//! its `"replay": true` copy, kept beside the buffer, and every later replay of it queues
//! that same copy. However many subscribe, a session holds at most twice [`BUFFER_BYTES`]
//! (the events and their replay copies).
//!
//! Invariants:
//! - one mutex guards numbering, the buffer and the subscriber list, and every line is
//!   queued to every subscriber while it is held, so all subscribers see one order and a
//!   subscription's replay cursor and its registration are atomic with respect to the
//!   stream: nothing is missed, nothing doubled;
//! - queueing never waits ([`ClientLink::push`]): a slow subscriber never slows the turn
//!   or the other subscribers; the connection's own outbound rule disconnects it;
//! - a new subscription is "held" until its subscribe answer has been queued: the lines it
//!   must get (replay first, then live) gather in its entry and are released in order
//!   right after the answer;
//! - at most [`MAX_SUBSCRIBERS`] non-admin connections, and [`MAX_WITH_ADMINS`] in all
//!   (admins can always watch, SPEC §17.1); closed ones are pruned as they are met.
//!
//! Layers: below the live session that owns it; it imports only [`link`](super::link) (and
//! the error leaf). Typed updates come in through [`SessionStream::emit_update`].

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::json;
use tokio::sync::Notify;
use zeroclaw_protocol::update::REPLAY_GAP;
use zeroclaw_protocol::{SESSION_UPDATE, UpdateKind, UpdateType};
use zeroclaw_protocol::{SessionId, TurnId};

use super::error::SessionError;
use super::link::ClientLink;

/// Subscribed non-admin connections per session.
pub const MAX_SUBSCRIBERS: usize = 16;
/// Subscribed connections per session, admins' included: admins can always watch, up to
/// this many in all (SPEC §17.1).
pub const MAX_WITH_ADMINS: usize = MAX_SUBSCRIBERS + 4;
/// Serialized updates kept for replay per session.
pub const BUFFER_BYTES: usize = 8 * 1024 * 1024;
/// The line buffer is kept between updates up to this size.
const SCRATCH_KEPT: usize = 64 * 1024;

/// Where a returning client left off: the last event it saw.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cursor {
    pub turn_id: Option<String>,
    pub after_event_seq: u64,
}

/// One buffered event, kept without its envelope: a chunk's line is ~200 bytes, of which
/// the update's own members are a few dozen; the session, turn and number it shares with
/// every other event of its turn are written again when it is replayed. The line as sent
/// lives only as long as some subscriber's queue still holds it.
struct Event {
    /// Its members after the envelope's (`,"text":"…"`, or nothing), without the closing
    /// `}` of `params`.
    members: bytes::Bytes,
    /// The length of the line as sent: the buffer's cap counts serialized updates (SPEC
    /// §14), however they are kept.
    line_len: u32,
    kind: UpdateType,
}

/// What one buffered event counts against [`BUFFER_BYTES`]: its line as sent and its slot
/// in the turn's queue (a 100,000-chunk turn has lines of ~150 bytes, where the slot is
/// not negligible). Its members take less than the line, so the cap bounds memory too.
fn held(event: &Event) -> usize {
    event.line_len as usize + std::mem::size_of::<Event>()
}

/// The smallest and largest block that lines are packed into.
const FIRST_BLOCK: usize = 4 * 1024;
const LAST_BLOCK: usize = 64 * 1024;

/// Update lines (or the members the buffer keeps of them) packed side by side into shared
/// blocks: one allocation and one reference count per block instead of an allocation per
/// line and another for its reference count once it is shared (a line is small: the two
/// cost about as much as its bytes). Blocks grow from [`FIRST_BLOCK`] to [`LAST_BLOCK`]
/// within a turn, so a short turn pins little; a line longer than the block gets one of its
/// own size (a sent line over [`SCRATCH_KEPT`] is not packed at all: it keeps the buffer it
/// was written in). A block is freed when its last line is dropped (lines are written and
/// leave the buffer in order, so blocks go in order too).
#[derive(Default)]
struct LineBlocks {
    block: bytes::BytesMut,
    next: usize,
}

impl LineBlocks {
    fn pack(&mut self, line: &[u8]) -> bytes::Bytes {
        if self.block.capacity() < line.len() {
            let size = self.next.clamp(FIRST_BLOCK, LAST_BLOCK);
            self.next = (size * 2).min(LAST_BLOCK);
            self.block = bytes::BytesMut::with_capacity(size.max(line.len()));
        }
        self.block.extend_from_slice(line);
        self.block.split().freeze()
    }
}

struct TurnLog {
    turn_id: TurnId,
    next_seq: u64,
    /// The oldest event still buffered (events before it were evicted).
    first_seq: u64,
    events: VecDeque<Event>,
    /// The buffered events' lines marked `"replay": true` by number, each made by the
    /// first replay that needs it and shared by every later one (none until a replay).
    replays: HashMap<u64, bytes::Bytes>,
    done: bool,
}

struct Subscriber {
    link: Arc<dyn ClientLink>,
    /// Principal id that subscribed (ask-user goes to the owner's connections).
    principal: String,
    /// An admin's subscription counts only against [`MAX_WITH_ADMINS`].
    admin: bool,
    /// Subscription order: larger = more recent.
    order: u64,
    /// Lines gathered until the subscribe answer is queued.
    held: Option<Vec<bytes::Bytes>>,
}

#[derive(Default)]
struct Inner {
    turns: VecDeque<TurnLog>,
    bytes: usize,
    subscribers: Vec<Subscriber>,
    /// Where the next update line is written before it is packed into `blocks`.
    scratch: Vec<u8>,
    /// The lines as sent, shared with the subscribers' queues.
    blocks: LineBlocks,
    /// The buffered events' members.
    kept: LineBlocks,
    /// Their replay copies.
    replayed: LineBlocks,
    next_order: u64,
}

/// The stream of one live session.
pub struct SessionStream {
    session_id: SessionId,
    inner: Mutex<Inner>,
    /// Woken whenever a subscription becomes active (ask-user waits for one).
    subscribed: Notify,
    /// The daemon's observer of notable updates (SPEC §24.3), set once at start.
    tap: std::sync::OnceLock<super::tap::SessionTap>,
}

/// What a line has before its params: `{"jsonrpc":"2.0","method":"session/update","params":`.
const LINE_HEAD: [&[u8]; 3] = [
    br#"{"jsonrpc":"2.0","method":""#,
    SESSION_UPDATE.as_bytes(),
    br#"","params":"#,
];
/// What a line has after its params.
const LINE_TAIL: &[u8] = b"}\n";

/// What every update's `params` opens with: `{sessionId, type, turnId, eventSeq`.
struct Envelope<'a> {
    session_id: &'a str,
    kind: UpdateType,
    turn_id: &'a str,
    seq: u64,
}

impl Envelope<'_> {
    /// Appends the line's head and the envelope's members (after `"replay": true` for a
    /// replayed line): the update's own members come next, then [`end_line`].
    fn start_line(&self, line: &mut Vec<u8>, replay: bool) {
        for part in LINE_HEAD {
            line.extend_from_slice(part);
        }
        line.push(b'{');
        if replay {
            line.extend_from_slice(br#""replay":true,"#);
        }
        // Strings into memory: cannot fail.
        line.extend_from_slice(br#""sessionId":"#);
        let _ = serde_json::to_writer(&mut *line, self.session_id);
        line.extend_from_slice(br#","type":"#);
        let _ = serde_json::to_writer(&mut *line, self.kind.as_str());
        line.extend_from_slice(br#","turnId":"#);
        let _ = serde_json::to_writer(&mut *line, self.turn_id);
        line.extend_from_slice(br#","eventSeq":"#);
        let _ = serde_json::to_writer(&mut *line, &self.seq);
    }

    /// Appends the whole line of an event with `members`.
    fn write_line(&self, line: &mut Vec<u8>, members: &[u8], replay: bool) {
        self.start_line(line, replay);
        line.extend_from_slice(members);
        end_line(line);
    }
}

/// Closes `params` and the line.
fn end_line(line: &mut Vec<u8>) {
    line.push(b'}');
    line.extend_from_slice(LINE_TAIL);
}

impl SessionStream {
    pub fn new(session_id: &SessionId) -> SessionStream {
        SessionStream {
            session_id: session_id.clone(),
            inner: Mutex::default(),
            subscribed: Notify::new(),
            tap: std::sync::OnceLock::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // Every update is a few pushes; the state stays consistent after a panic.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts numbering a new turn; only the last completed turn is kept before it.
    pub fn begin_turn(&self, turn_id: &TurnId) {
        let mut inner = self.lock();
        // A turn that ended without `turn_complete` (its result could not be stored) is
        // over all the same.
        if let Some(last) = inner.turns.back_mut() {
            last.done = true;
        }
        while inner.turns.len() > 1 {
            if let Some(old) = inner.turns.pop_front() {
                inner.bytes -= old.events.iter().map(held).sum::<usize>();
            }
        }
        // Small blocks again: a short turn keeps little more than its lines.
        inner.blocks = LineBlocks::default();
        inner.kept = LineBlocks::default();
        inner.replayed = LineBlocks::default();
        inner.turns.push_back(TurnLog {
            turn_id: turn_id.to_owned(),
            next_seq: 1,
            first_seq: 1,
            events: VecDeque::new(),
            replays: HashMap::new(),
            done: false,
        });
    }

    /// Ends the running turn without a `turn_complete` (a rewind's turn, SPEC §18): a
    /// subscriber arriving later is not replayed it as a turn still running.
    pub fn end_turn(&self) {
        if let Some(last) = self.lock().turns.back_mut() {
            last.done = true;
        }
    }

    /// [`emit`](Self::emit) of a typed update: the vocabulary's `type` and fields, so the
    /// wire names are written once, in `zeroclaw-protocol`. The update is serialized
    /// straight into the line (no intermediate JSON tree): its own `{"type":"…"` opening is
    /// replaced by the envelope.
    pub fn emit_update(&self, update: &UpdateKind) {
        self.emit_typed(update, false);
        self.show_tap(update);
    }

    /// Lets `sink` watch this session's notable updates, as the session of `owner`.
    pub(crate) fn set_tap(&self, sink: Arc<dyn super::tap::UpdateTap>, owner: String) {
        let _ = self.tap.set(super::tap::SessionTap { sink, owner });
    }

    /// Shows the tap a notable update (after its subscribers have it).
    fn show_tap(&self, update: &UpdateKind) {
        if let Some(tap) = self.tap.get()
            && tap.sink.notable(update)
        {
            let watched = self.watched_by(&tap.owner, tap.sink.active_window());
            tap.sink
                .update(&self.session_id, &tap.owner, watched, update);
        }
    }

    /// Shows the tap an `ask_user` question put to the owner's faces.
    pub fn tap_asked(&self, request_id: &str, message: &str) {
        if let Some(tap) = self.tap.get() {
            let watched = self.watched_by(&tap.owner, tap.sink.active_window());
            tap.sink
                .asked(&self.session_id, &tap.owner, watched, request_id, message);
        }
    }

    /// Whether one of `owner`'s subscribed connections is open and was active within
    /// `window`.
    fn watched_by(&self, owner: &str, window: std::time::Duration) -> bool {
        let inner = self.lock();
        inner
            .subscribers
            .iter()
            .any(|s| s.principal == owner && s.held.is_none() && s.link.active_within(window))
    }

    /// [`emit_update`](Self::emit_update) of a note on the session rather than on a turn
    /// (`session_info`, SPEC §25): in the running turn, else numbered after the last
    /// turn's end (replayed with it, so a subscriber that saw that turn end gets it from
    /// its cursor), else, before any turn, sent to the live subscribers only, without
    /// `turnId` (there is nothing to replay it from; `session/list` has the title).
    pub fn emit_note(&self, update: &UpdateKind) {
        {
            // Checked and sent under one lock: a turn starting meanwhile numbers it.
            let mut inner = self.lock();
            if inner.turns.is_empty() {
                let Ok(serde_json::Value::Object(mut params)) = serde_json::to_value(update) else {
                    return;
                };
                params.insert("sessionId".into(), self.session_id.as_str().into());
                let line = json!({"jsonrpc": "2.0", "method": SESSION_UPDATE, "params": params});
                let mut text = line.to_string();
                text.push('\n');
                inner.fan_out(bytes::Bytes::from(text));
                return;
            }
        }
        self.emit_typed(update, true);
    }

    fn emit_typed(&self, update: &UpdateKind, after_end: bool) {
        let kind = update.type_name();
        self.emit_with(update.update_type(), after_end, |line| {
            let start = line.len();
            // Writing into memory cannot fail but for a map with non-string keys, which
            // no update has; such an update would be logged and sent without fields.
            if let Err(e) = serde_json::to_writer(&mut *line, update) {
                tracing::error!("cannot encode an update: {e}");
                line.truncate(start);
                return;
            }
            let opening = [&br#"{"type":""#[..], kind.as_bytes(), b"\""].concat();
            if line[start..].starts_with(&opening) {
                line.drain(start..start + opening.len());
            } else {
                // Not the internally tagged shape expected: keep its members after the
                // envelope's (an object's own `{` dropped).
                line.drain(start..start + 1);
                if line.get(start) != Some(&b'}') {
                    line.insert(start, b',');
                }
            }
            // What is left is `,…}` or `}`: the members after the envelope, and the end
            // of `params`.
            line.pop();
        });
    }

    /// Numbers, buffers and fans out one update of the running turn: `{sessionId, type,
    /// turnId, eventSeq, ...fields}`. `turn_complete` ends the turn. (The daemon emits
    /// typed updates; the tests write theirs as literals.)
    #[cfg(test)]
    pub fn emit(&self, kind: &str, fields: serde_json::Value) {
        let kind = UpdateType::from_wire(kind).expect("a type of the vocabulary");
        self.emit_with(kind, false, |line| {
            if let serde_json::Value::Object(fields) = &fields {
                for (key, value) in fields {
                    line.push(b',');
                    // Writing a `Value` into memory cannot fail.
                    let _ = serde_json::to_writer(&mut *line, key);
                    line.push(b':');
                    let _ = serde_json::to_writer(&mut *line, value);
                }
            }
        });
    }

    /// [`emit`](Self::emit) with the fields written by `members` (each preceded by `,`)
    /// after the envelope, in the stream's reused line buffer. `after_end`: the last turn
    /// takes it even when it has ended (a note, [`emit_note`](Self::emit_note)).
    fn emit_with(&self, kind: UpdateType, after_end: bool, members: impl FnOnce(&mut Vec<u8>)) {
        let mut guard = self.lock();
        let inner = &mut *guard;
        let Some(turn) = inner.turns.back_mut().filter(|t| after_end || !t.done) else {
            tracing::warn!(session = %self.session_id, kind = kind.as_str(), "update outside a turn dropped");
            return;
        };
        let seq = turn.next_seq;
        turn.next_seq += 1;
        // Written in a reused buffer, then copied into the blocks: the line to send, and the
        // members the buffer keeps.
        let scratch = &mut inner.scratch;
        scratch.clear();
        let envelope = Envelope {
            session_id: &self.session_id,
            kind,
            turn_id: &turn.turn_id,
            seq,
        };
        envelope.start_line(scratch, false);
        let from = scratch.len();
        members(scratch);
        let to = scratch.len();
        end_line(scratch);
        let (line, members) = if scratch.len() > SCRATCH_KEPT {
            // A long line (a turn's final answer) keeps the buffer it was written in, cut
            // to its size, rather than being copied: the copy would double it for a while.
            // Its members are that same buffer.
            scratch.shrink_to_fit();
            let line = bytes::Bytes::from(std::mem::take(scratch));
            let members = line.slice(from..to);
            (line, members)
        } else {
            let members = inner.kept.pack(&scratch[from..to]);
            let line = inner.blocks.pack(scratch);
            if scratch.capacity() > SCRATCH_KEPT {
                *scratch = Vec::new();
            }
            (line, members)
        };
        if kind == UpdateType::TurnComplete {
            turn.done = true;
        }
        if turn.events.len() == turn.events.capacity() {
            // Grown by a quarter rather than doubled: the slots are memory the buffer
            // holds, and a doubling could leave most of them empty.
            turn.events.reserve_exact(turn.events.len() / 4 + 16);
        }
        let event = Event {
            members,
            // A line is at most a frame (SPEC §3), far below 4 GiB.
            line_len: u32::try_from(line.len()).unwrap_or(u32::MAX),
            kind,
        };
        inner.bytes += held(&event);
        turn.events.push_back(event);
        inner.evict();
        inner.fan_out(line);
    }

    /// Subscribes `link` with a replay from `cursor` (SPEC §14): -32013 for a 17th
    /// non-admin connection, or a 21st in all (SPEC §17.1). The subscription is held until
    /// [`SessionStream::release`], to be called once the subscribe answer is queued.
    /// Subscribing again replaces the old entry.
    pub fn subscribe(
        &self,
        link: Arc<dyn ClientLink>,
        principal: &str,
        admin: bool,
        cursor: &Cursor,
    ) -> Result<(), SessionError> {
        let mut inner = self.lock();
        let id = link.id();
        inner.prune(Some(id));
        if let Some((limit, value)) = inner.full_for(admin) {
            return Err(SessionError::TooManySubscribers {
                session_id: self.session_id.clone(),
                limit,
                value,
            });
        }
        let replay = inner.replay(&self.session_id, cursor);
        inner.add(link, principal, admin, Some(replay));
        Ok(())
    }

    /// Releases a held subscription: its replay and the live lines gathered since go out.
    pub fn release(&self, link_id: u64) {
        {
            let mut inner = self.lock();
            let Some(sub) = inner
                .subscribers
                .iter_mut()
                .find(|s| s.link.id() == link_id)
            else {
                return;
            };
            let held = sub.held.take().unwrap_or_default();
            let link = Arc::clone(&sub.link);
            for line in held {
                if !link.push(line) {
                    inner.prune(Some(link_id));
                    break;
                }
            }
        }
        self.subscribed.notify_waiters();
    }

    /// Subscribes the connection that sent a prompt (no replay), if it is not already and
    /// there is room; `false` when the session has the most subscribers it may have.
    pub fn subscribe_prompter(
        &self,
        link: &Arc<dyn ClientLink>,
        principal: &str,
        admin: bool,
    ) -> bool {
        {
            let mut inner = self.lock();
            if inner.subscribers.iter().any(|s| s.link.id() == link.id()) {
                return true;
            }
            inner.prune(None);
            if inner.full_for(admin).is_some() {
                return false;
            }
            inner.add(Arc::clone(link), principal, admin, None);
        }
        self.subscribed.notify_waiters();
        true
    }

    /// Removes `link_id`'s subscription; `false` when it had none.
    pub fn unsubscribe(&self, link_id: u64) -> bool {
        let mut inner = self.lock();
        let before = inner.subscribers.len();
        inner.subscribers.retain(|s| s.link.id() != link_id);
        before != inner.subscribers.len()
    }

    /// Open subscribed connections.
    pub fn subscriber_count(&self) -> usize {
        let mut inner = self.lock();
        inner.prune(None);
        inner.subscribers.len()
    }

    /// The most recently subscribed open connection of `owner` that can answer
    /// `elicitation/create`.
    pub fn elicitation_target(&self, owner: &str) -> Option<Arc<dyn ClientLink>> {
        let inner = self.lock();
        inner
            .subscribers
            .iter()
            .filter(|s| s.principal == owner && s.held.is_none())
            .filter(|s| s.link.is_open() && s.link.can_elicit())
            .max_by_key(|s| s.order)
            .map(|s| Arc::clone(&s.link))
    }

    /// Every open subscribed connection of `owner` that can answer `elicitation/create`
    /// (an `ask_user` question goes to all of them, SPEC §22).
    pub fn elicitation_targets(&self, owner: &str) -> Vec<Arc<dyn ClientLink>> {
        let inner = self.lock();
        inner
            .subscribers
            .iter()
            .filter(|s| s.principal == owner && s.held.is_none())
            .filter(|s| s.link.is_open() && s.link.can_elicit())
            .map(|s| Arc::clone(&s.link))
            .collect()
    }

    /// The principal a subscribed connection subscribed as.
    pub fn principal_of(&self, link_id: u64) -> Option<String> {
        let inner = self.lock();
        inner
            .subscribers
            .iter()
            .find(|s| s.link.id() == link_id)
            .map(|s| s.principal.clone())
    }

    /// Resolves when a subscription next becomes active.
    pub fn subscribed(&self) -> tokio::sync::futures::Notified<'_> {
        self.subscribed.notified()
    }

    /// Bytes of serialized updates buffered now.
    pub fn buffered_bytes(&self) -> usize {
        self.lock().bytes
    }
}

impl Inner {
    fn add(
        &mut self,
        link: Arc<dyn ClientLink>,
        principal: &str,
        admin: bool,
        held: Option<Vec<bytes::Bytes>>,
    ) {
        self.next_order += 1;
        self.subscribers.push(Subscriber {
            link,
            principal: principal.to_owned(),
            admin,
            order: self.next_order,
            held,
        });
    }

    /// The limit one more subscriber would pass, as `(limit, value)`: non-admins count
    /// against [`MAX_SUBSCRIBERS`], everyone against [`MAX_WITH_ADMINS`].
    fn full_for(&self, admin: bool) -> Option<(usize, usize)> {
        let all = self.subscribers.len();
        let others = self.subscribers.iter().filter(|s| !s.admin).count();
        if !admin && others >= MAX_SUBSCRIBERS {
            return Some((MAX_SUBSCRIBERS, others + 1));
        }
        (all >= MAX_WITH_ADMINS).then_some((MAX_WITH_ADMINS, all + 1))
    }

    /// Drops closed subscribers, and `also` (a connection about to subscribe again).
    fn prune(&mut self, also: Option<u64>) {
        self.subscribers
            .retain(|s| s.link.is_open() && Some(s.link.id()) != also);
    }

    /// Queues `line` to every subscriber: one shared buffer, each queue holds a reference.
    fn fan_out(&mut self, line: bytes::Bytes) {
        self.subscribers.retain_mut(|s| match &mut s.held {
            Some(held) => {
                held.push(line.clone());
                true
            }
            None => s.link.push(line.clone()),
        });
    }

    /// Drops the oldest buffered events until the buffer fits its cap. A finished turn's
    /// slots are handed back as its events go (the next turn is growing its own): it keeps
    /// at most a third more slots than it still uses, none once it is empty. A shrink
    /// moves the slots left, each time a quarter fewer than the last: at most three
    /// times the turn's slots are moved in all, under the lock but rarely.
    fn evict(&mut self) {
        while self.bytes > BUFFER_BYTES {
            let Some(turn) = self.turns.iter_mut().find(|t| !t.events.is_empty()) else {
                return;
            };
            if let Some(old) = turn.events.pop_front() {
                self.bytes -= held(&old);
                if !turn.replays.is_empty() {
                    turn.replays.remove(&turn.first_seq);
                }
                turn.first_seq += 1;
            }
            if turn.done && turn.events.len() * 4 <= turn.events.capacity() * 3 {
                turn.events.shrink_to_fit();
            }
        }
    }

    /// The lines a subscriber with `cursor` must be sent before live ones: the buffered
    /// events' shared replay copies (made here for those replayed the first time).
    fn replay(&mut self, session_id: &str, cursor: &Cursor) -> Vec<bytes::Bytes> {
        let start = cursor
            .turn_id
            .as_deref()
            .and_then(|id| self.turns.iter().position(|t| t.turn_id == id));
        let (first, after) = match start {
            Some(i) => (i, cursor.after_event_seq),
            // No cursor, or one no longer buffered: the running turn, from its start.
            None => match self.turns.back() {
                Some(t) if !t.done => (self.turns.len() - 1, 0),
                _ => return Vec::new(),
            },
        };
        let mut lines = Vec::new();
        for (i, turn) in self.turns.iter_mut().enumerate().skip(first) {
            let after = if i == first { after } else { 0 };
            if turn.first_seq > after + 1 {
                let gap = json!({
                    "replay": true,
                    "sessionId": session_id,
                    "type": REPLAY_GAP,
                    "turnId": turn.turn_id,
                    "firstEventSeq": turn.first_seq,
                });
                let mut line = Vec::new();
                for part in LINE_HEAD {
                    line.extend_from_slice(part);
                }
                // A `Value` into memory: cannot fail.
                let _ = serde_json::to_writer(&mut line, &gap);
                line.extend_from_slice(LINE_TAIL);
                lines.push(line.into());
            }
            // The events numbered after `after`: event `first_seq + i` is the `i`th.
            let skip =
                usize::try_from((after + 1).saturating_sub(turn.first_seq)).unwrap_or(usize::MAX);
            for (seq, event) in (turn.first_seq..).zip(&turn.events).skip(skip) {
                let line = turn.replays.entry(seq).or_insert_with(|| {
                    let envelope = Envelope {
                        session_id,
                        kind: event.kind,
                        turn_id: &turn.turn_id,
                        seq,
                    };
                    self.scratch.clear();
                    envelope.write_line(&mut self.scratch, &event.members, true);
                    self.replayed.pack(&self.scratch)
                });
                lines.push(line.clone());
            }
        }
        if self.scratch.capacity() > SCRATCH_KEPT {
            self.scratch = Vec::new();
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::link::AskError;
    use async_trait::async_trait;
    use serde_json::{Map, Value};
    use std::sync::atomic::{AtomicBool, Ordering};

    #[derive(Default)]
    struct Probe {
        id: u64,
        lines: Mutex<Vec<Value>>,
        /// Every pushed line, held like a queue holds it (so an address is never reused
        /// while the test compares them).
        pushed: Mutex<Vec<bytes::Bytes>>,
        closed: AtomicBool,
    }

    #[async_trait]
    impl ClientLink for Probe {
        fn id(&self) -> u64 {
            self.id
        }
        fn push(&self, line: bytes::Bytes) -> bool {
            if self.closed.load(Ordering::SeqCst) {
                return false;
            }
            let v: Value = serde_json::from_slice(&line).expect("json line");
            self.lines.lock().unwrap().push(v["params"].clone());
            self.pushed.lock().unwrap().push(line);
            true
        }
        fn is_open(&self) -> bool {
            !self.closed.load(Ordering::SeqCst)
        }
        fn can_elicit(&self) -> bool {
            true
        }
        async fn ask(&self, _: &str, _: Value, _: std::time::Duration) -> Result<Value, AskError> {
            Err(AskError::Gone)
        }
        fn record_prompt(&self, _: &crate::session::LiveId, _: u64) {}
        fn last_prompt(&self, _: &crate::session::LiveId) -> u64 {
            0
        }
    }

    impl Probe {
        /// Where each pushed line's bytes live (fan-out shares one buffer).
        fn buffers(&self) -> Vec<usize> {
            let pushed = self.pushed.lock().unwrap();
            pushed.iter().map(|l| l.as_ptr() as usize).collect()
        }
    }

    fn probe(id: u64) -> Arc<Probe> {
        Arc::new(Probe {
            id,
            ..Probe::default()
        })
    }

    /// A probe subscribed (as the operator) from `cursor`, its replay released.
    fn watching(s: &SessionStream, id: u64, cursor: &Cursor) -> Arc<Probe> {
        let p = probe(id);
        s.subscribe(p.clone(), "operator", false, cursor)
            .expect("room");
        s.release(id);
        p
    }

    fn seqs(p: &Probe) -> Vec<(String, u64, bool)> {
        p.lines
            .lock()
            .unwrap()
            .iter()
            .map(|v| {
                (
                    v["turnId"].as_str().unwrap_or("").to_owned(),
                    v["eventSeq"].as_u64().unwrap_or(0),
                    v.get("replay").is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn a_note_goes_live_before_any_turn_and_after_the_last_turn_is_replayed() {
        let s = SessionStream::new(&"s1".into());
        let early = watching(&s, 1, &Cursor::default());
        let note = |title: &str| UpdateKind::SessionInfo {
            title: title.into(),
            updated_at: 1,
        };
        s.emit_note(&note("first"));
        let lines = early.lines.lock().unwrap().clone();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["type"], "session_info");
        assert_eq!(lines[0]["title"], "first");
        assert!(lines[0].get("turnId").is_none(), "{}", lines[0]);

        s.begin_turn(&"t1".into());
        s.emit(
            "turn_complete",
            json!({"outcome": "completed", "content": ""}),
        );
        s.emit_note(&note("second"));
        assert_eq!(
            seqs(&early)[1..],
            [("t1".into(), 1, false), ("t1".into(), 2, false)],
            "numbered after the turn's end"
        );
        // One that saw the turn end is replayed the note; a newcomer without a cursor is
        // replayed no finished turn, as ever (`session/list` has the title).
        let cursor = Cursor {
            turn_id: Some("t1".into()),
            after_event_seq: 1,
        };
        let back = watching(&s, 2, &cursor);
        assert_eq!(seqs(&back), [("t1".into(), 2, true)]);
        assert_eq!(back.lines.lock().unwrap()[0]["title"], "second");
        let late = watching(&s, 3, &Cursor::default());
        assert!(seqs(&late).is_empty());
        // The next turn is numbered from 1 as ever.
        s.begin_turn(&"t2".into());
        s.emit("agent_message_chunk", json!({"text": "x"}));
        assert_eq!(seqs(&early).last(), Some(&("t2".into(), 1, false)));
    }

    #[test]
    fn one_event_is_one_buffer_shared_by_every_subscriber() {
        let s = SessionStream::new(&"s1".into());
        let probes: Vec<_> = (1..=4).map(probe).collect();
        for p in &probes {
            s.subscribe(p.clone(), "operator", false, &Cursor::default())
                .expect("room");
            s.release(p.id);
        }
        s.begin_turn(&"t1".into());
        s.emit("agent_message_chunk", json!({"text": "shared"}));
        let first = probes[0].buffers();
        assert_eq!(first.len(), 1);
        for p in &probes[1..] {
            assert_eq!(p.buffers(), first, "same bytes, not a copy");
        }
    }

    #[test]
    fn a_replay_to_many_subscribers_is_one_shared_copy() {
        let s = SessionStream::new(&"s1".into());
        s.begin_turn(&"t1".into());
        let text = "x".repeat(256 * 1024);
        for _ in 0..8 {
            s.emit("agent_message_chunk", json!({"text": text}));
        }
        let probes: Vec<_> = (1..=MAX_WITH_ADMINS as u64).map(probe).collect();
        for p in &probes {
            s.subscribe(p.clone(), "operator", true, &Cursor::default())
                .expect("room");
            s.release(p.id);
        }
        // The same connection subscribing again is replayed the same copies too.
        s.subscribe(probes[0].clone(), "operator", true, &Cursor::default())
            .expect("again");
        s.release(probes[0].id);
        let first = probes[0].buffers();
        assert_eq!(first.len(), 16, "8 events, replayed twice");
        assert_eq!(
            first[..8],
            first[8..],
            "a second replay queues the same copies"
        );
        for p in &probes[1..] {
            assert_eq!(
                p.buffers(),
                first[..8],
                "subscriber {} got its own copy of the replay",
                p.id
            );
        }
        assert!(seqs(&probes[5]).iter().all(|(_, _, replay)| *replay));
        // A live line is still the one buffer the replay copy was made beside.
        s.emit("agent_message_chunk", json!({"text": "live"}));
        let live = probes[0].buffers().last().copied();
        assert_eq!(probes[7].buffers().last().copied(), live);
    }

    #[test]
    fn admins_watch_beyond_sixteen_non_admins_up_to_twenty_in_all() {
        let s = SessionStream::new(&"s1".into());
        for id in 1..=16 {
            s.subscribe(probe(id), "user:bob", false, &Cursor::default())
                .expect("room");
        }
        let limit = |e: SessionError| match e {
            SessionError::TooManySubscribers { limit, value, .. } => Some((limit, value)),
            _ => None,
        };
        let refused = s.subscribe(probe(17), "user:bob", false, &Cursor::default());
        assert_eq!(refused.map_err(limit), Err(Some((16, 17))));
        let bob: Arc<dyn ClientLink> = probe(18);
        assert!(!s.subscribe_prompter(&bob, "user:bob", false));
        for id in 21..=23 {
            s.subscribe(probe(id), "operator", true, &Cursor::default())
                .expect("an admin can always watch");
        }
        let admin: Arc<dyn ClientLink> = probe(24);
        assert!(s.subscribe_prompter(&admin, "operator", true));
        assert_eq!(s.subscriber_count(), MAX_WITH_ADMINS);
        let refused = s.subscribe(probe(25), "operator", true, &Cursor::default());
        assert_eq!(refused.map_err(limit), Err(Some((20, 21))));
        let admin: Arc<dyn ClientLink> = probe(26);
        assert!(!s.subscribe_prompter(&admin, "operator", true));
        // A non-admin leaving makes room for a non-admin.
        assert!(s.unsubscribe(1));
        s.subscribe(probe(27), "user:bob", false, &Cursor::default())
            .expect("room again");
    }

    #[test]
    fn numbering_fan_out_and_replay_from_a_cursor() {
        let s = SessionStream::new(&"s1".into());
        let a = probe(1);
        assert!(s.subscribe_prompter(&(a.clone() as Arc<dyn ClientLink>), "operator", false));
        s.begin_turn(&"t1".into());
        for i in 0..3 {
            s.emit("agent_message_chunk", json!({"text": format!("w{i}")}));
        }
        let b = probe(2);
        let cursor = Cursor {
            turn_id: Some("t1".into()),
            after_event_seq: 1,
        };
        s.subscribe(b.clone(), "operator", false, &cursor)
            .expect("room");
        s.emit("agent_message_chunk", json!({"text": "live"}));
        assert!(b.lines.lock().unwrap().is_empty(), "held until released");
        s.release(2);
        s.emit("turn_complete", json!({"outcome": "completed"}));
        let t = |n: u64, r: bool| ("t1".to_string(), n, r);
        assert_eq!(
            seqs(&a),
            vec![
                t(1, false),
                t(2, false),
                t(3, false),
                t(4, false),
                t(5, false)
            ]
        );
        assert_eq!(
            seqs(&b),
            vec![t(2, true), t(3, true), t(4, false), t(5, false)]
        );
        assert_eq!(a.lines.lock().unwrap()[1]["text"], "w1");
        assert_eq!(b.lines.lock().unwrap()[0], {
            let mut v = a.lines.lock().unwrap()[1].clone();
            v["replay"] = json!(true);
            v
        });
    }

    #[test]
    fn a_typed_update_is_the_object_of_the_literal_it_replaced() {
        use zeroclaw_protocol::Outcome;
        use zeroclaw_protocol::session::TurnUsage;
        let s = SessionStream::new(&"s1".into());
        let p = watching(&s, 1, &Cursor::default());
        s.begin_turn(&"t1".into());
        s.emit_update(&UpdateKind::ToolCall {
            tool_call_id: "c1".into(),
            name: "bash".into(),
            raw_input: json!({"command": "ls"}),
            started_at: None,
        });
        s.emit_update(&UpdateKind::TurnComplete {
            outcome: Outcome::Completed,
            content: "done".into(),
            truncated: false,
            usage: Some(TurnUsage {
                input_tokens: 1,
                output_tokens: 2,
            }),
            reason: None,
        });
        // What the json! literals these updates replaced produced (the same text whether
        // or not serde_json keeps insertion order).
        let literal = |kind: &str, seq: u64, fields: Value| {
            let mut params = Map::new();
            params.insert("sessionId".into(), json!("s1"));
            params.insert("type".into(), json!(kind));
            params.insert("turnId".into(), json!("t1"));
            params.insert("eventSeq".into(), json!(seq));
            if let Value::Object(fields) = fields {
                params.extend(fields);
            }
            Value::Object(params).to_string()
        };
        let pushed = p.pushed.lock().unwrap();
        let head: usize = LINE_HEAD.iter().map(|part| part.len()).sum();
        let params: Vec<&str> = pushed
            .iter()
            .map(|line| std::str::from_utf8(&line[head..line.len() - LINE_TAIL.len()]).unwrap())
            .collect();
        // The same object (members in any order: a build may or may not keep serde_json's
        // insertion order), the envelope written first.
        let parsed: Vec<Value> = params
            .iter()
            .map(|p| serde_json::from_str(p).unwrap())
            .collect();
        let expected: Vec<Value> = [
            literal(
                "tool_call",
                1,
                json!({"toolCallId": "c1", "name": "bash", "rawInput": {"command": "ls"}}),
            ),
            literal(
                "turn_complete",
                2,
                json!({"turnId": "t1", "outcome": "completed", "content": "done",
                       "usage": {"inputTokens": 1, "outputTokens": 2}}),
            ),
        ]
        .iter()
        .map(|p| serde_json::from_str(p).unwrap())
        .collect();
        assert_eq!(parsed, expected);
        assert!(params[0].starts_with(
            r#"{"sessionId":"s1","type":"tool_call","turnId":"t1","eventSeq":1,"toolCallId""#
        ));
        assert!(params[1].ends_with(r#""eventSeq":2,"outcome":"completed","content":"done","usage":{"inputTokens":1,"outputTokens":2}}"#));
        assert!(s.lock().turns[0].done, "turn_complete ends the turn");
    }

    #[test]
    fn the_buffer_keeps_each_events_members_not_the_line_it_was_sent_in() {
        let s = SessionStream::new(&"s1".into());
        let p = watching(&s, 1, &Cursor::default());
        s.begin_turn(&"t1".into());
        for i in 0..100 {
            s.emit("agent_message_chunk", json!({"text": format!("w{i}")}));
        }
        let inner = s.lock();
        let pushed = p.pushed.lock().unwrap();
        let sent: Vec<std::ops::Range<usize>> = pushed
            .iter()
            .map(|l| l.as_ptr() as usize..l.as_ptr() as usize + l.len())
            .collect();
        assert_eq!(inner.turns[0].events.len(), 100);
        for (i, event) in inner.turns[0].events.iter().enumerate() {
            assert_eq!(&event.members[..], format!(r#","text":"w{i}""#).as_bytes());
            assert_eq!(event.line_len as usize, pushed[i].len());
            let at = event.members.as_ptr() as usize;
            assert!(
                !sent.iter().any(|line| line.contains(&at)),
                "event {i} pins a line it was sent in"
            );
        }
    }

    #[test]
    fn a_replayed_line_is_the_sent_line_marked_replay_byte_for_byte() {
        // Names that need escaping, and members of every kind of update.
        let s = SessionStream::new(&"s\"1\u{e9}".into());
        let live = watching(&s, 1, &Cursor::default());
        s.begin_turn(&"t\\1".into());
        s.emit("agent_message_chunk", json!({"text": "a\"b\n"}));
        s.emit(
            "tool_call",
            json!({"toolCallId": "c1", "rawInput": {"k": [1, 2]}}),
        );
        s.emit("usage", json!({}));
        s.emit(
            "agent_message_chunk",
            json!({"text": "x".repeat(100 * 1024)}),
        );
        s.emit("turn_complete", json!({"outcome": "completed"}));
        let late = probe(2);
        let cursor = Cursor {
            turn_id: Some("t\\1".into()),
            after_event_seq: 0,
        };
        s.subscribe(late.clone(), "operator", false, &cursor)
            .expect("room");
        s.release(late.id);
        let marked = |line: &[u8]| -> Vec<u8> {
            let open = br#""params":{"#;
            let at = line
                .windows(open.len())
                .position(|w| w == open)
                .expect("params")
                + open.len();
            [&line[..at], br#""replay":true,"#, &line[at..]].concat()
        };
        let sent = live.pushed.lock().unwrap();
        let replayed = late.pushed.lock().unwrap();
        assert_eq!(sent.len(), 5);
        assert_eq!(replayed.len(), 5);
        for (sent, replayed) in sent.iter().zip(replayed.iter()) {
            assert_eq!(
                String::from_utf8_lossy(&marked(sent)),
                String::from_utf8_lossy(replayed)
            );
        }
    }

    #[test]
    fn a_long_line_keeps_its_own_buffer_and_the_next_lines_are_packed_again() {
        let s = SessionStream::new(&"s1".into());
        let p = watching(&s, 1, &Cursor::default());
        s.begin_turn(&"t1".into());
        s.emit("agent_message_chunk", json!({"text": "before"}));
        let long = "é\"x".repeat(100 * 1024);
        s.emit("agent_message_chunk", json!({ "text": long }));
        s.emit("agent_message_chunk", json!({"text": "after"}));
        s.emit("agent_message_chunk", json!({"text": "again"}));
        let texts: Vec<String> = p
            .lines
            .lock()
            .unwrap()
            .iter()
            .map(|v| v["text"].as_str().unwrap_or("").to_owned())
            .collect();
        assert_eq!(texts, ["before", long.as_str(), "after", "again"]);
        let pushed = p.pushed.lock().unwrap();
        // Short lines share a block: the one after the long line starts where the line
        // before it ends.
        let end_of = |l: &bytes::Bytes| l.as_ptr() as usize + l.len();
        assert_eq!(pushed[3].as_ptr() as usize, end_of(&pushed[2]));
        assert!(
            s.lock().scratch.capacity() <= SCRATCH_KEPT,
            "the long buffer went with its line"
        );
    }

    #[test]
    fn without_a_cursor_the_running_turn_is_replayed_and_a_finished_one_is_not() {
        let s = SessionStream::new(&"s1".into());
        s.begin_turn(&"t1".into());
        s.emit("agent_message_chunk", json!({"text": "a"}));
        s.emit("turn_complete", json!({}));
        let late = watching(&s, 1, &Cursor::default());
        assert!(late.lines.lock().unwrap().is_empty());
        s.begin_turn(&"t2".into());
        s.emit("agent_message_chunk", json!({"text": "b"}));
        let mid = watching(&s, 2, &Cursor::default());
        assert_eq!(seqs(&mid), vec![("t2".into(), 1, true)]);
        // A cursor in the completed turn replays its rest and the whole running turn.
        let back = probe(3);
        let cursor = Cursor {
            turn_id: Some("t1".into()),
            after_event_seq: 1,
        };
        s.subscribe(back.clone(), "operator", false, &cursor)
            .expect("room");
        s.release(3);
        assert_eq!(
            seqs(&back),
            vec![("t1".into(), 2, true), ("t2".into(), 1, true)]
        );
    }

    #[test]
    fn evicted_events_start_the_replay_with_a_gap_and_the_buffer_stays_capped() {
        let s = SessionStream::new(&"s1".into());
        s.begin_turn(&"t1".into());
        let text = "x".repeat(64 * 1024);
        for _ in 0..200 {
            s.emit("agent_message_chunk", json!({"text": text}));
        }
        assert!(s.buffered_bytes() <= BUFFER_BYTES);
        let p = watching(&s, 1, &Cursor::default());
        let lines = p.lines.lock().unwrap();
        assert_eq!(lines[0]["type"], "replay_gap");
        let first = lines[0]["firstEventSeq"].as_u64().expect("seq");
        assert!(first > 1);
        assert_eq!(lines[1]["eventSeq"].as_u64(), Some(first));
        assert_eq!(lines.last().and_then(|l| l["eventSeq"].as_u64()), Some(200));
        drop(lines);
        // The replay copies go with their events.
        let replayed = s.lock().turns[0].replays.len();
        assert_eq!(replayed, s.lock().turns[0].events.len());
        for _ in 0..200 {
            s.emit("agent_message_chunk", json!({"text": text}));
        }
        let inner = s.lock();
        let turn = &inner.turns[0];
        assert!(turn.first_seq > 200, "every replayed event evicted");
        assert!(
            turn.replays.is_empty(),
            "{} copies left",
            turn.replays.len()
        );
    }

    #[test]
    fn a_finished_turn_hands_its_slots_back_as_the_next_turn_evicts_it() {
        let s = SessionStream::new(&"s1".into());
        s.begin_turn(&"t1".into());
        let text = "x".repeat(100);
        let mut n = 0;
        while s.buffered_bytes() + 1000 < BUFFER_BYTES {
            s.emit("agent_message_chunk", json!({"text": text}));
            n += 1;
        }
        s.emit("turn_complete", json!({}));
        let slots = |s: &SessionStream| -> Vec<(usize, usize)> {
            let inner = s.lock();
            inner
                .turns
                .iter()
                .map(|t| (t.events.len(), t.events.capacity()))
                .collect()
        };
        let first = slots(&s)[0];
        assert_eq!(first.0, n + 1);
        s.begin_turn(&"t2".into());
        let mut most = 0;
        // A few more than the first turn had: its last event goes too.
        for i in 0..n + 50 {
            s.emit("agent_message_chunk", json!({"text": text}));
            let now = slots(&s);
            assert!(s.buffered_bytes() <= BUFFER_BYTES);
            // The finished turn never keeps more than a third more slots than it uses.
            let (len, cap) = now[0];
            assert!(
                3 * cap <= 4 * len + 3 || cap == first.1,
                "event {i}: {len} used of {cap}"
            );
            most = most.max(now[0].1 + now[1].1);
        }
        let end = slots(&s);
        assert_eq!(end[0], (0, 0), "the drained turn keeps no slots");
        // The two turns together never held much more than one full turn's slots (they held
        // two full turns' before the finished one gave its slots back).
        assert!(
            3 * most <= 4 * first.1 + 300,
            "{most} slots at most, a full turn {}",
            first.1
        );
    }

    #[test]
    fn sixteen_subscribers_at_most_closed_ones_pruned_resubscribe_replaces() {
        let s = SessionStream::new(&"s1".into());
        let probes: Vec<_> = (1..=16).map(probe).collect();
        for p in &probes {
            s.subscribe(p.clone(), "operator", false, &Cursor::default())
                .expect("room");
        }
        let err = s
            .subscribe(probe(17), "operator", false, &Cursor::default())
            .expect_err("17th");
        assert!(
            matches!(
                err,
                SessionError::TooManySubscribers {
                    limit: 16,
                    value: 17,
                    ..
                }
            ),
            "{err}"
        );
        s.subscribe(probes[0].clone(), "operator", false, &Cursor::default())
            .expect("again");
        assert_eq!(s.subscriber_count(), 16);
        probes[1].closed.store(true, Ordering::SeqCst);
        assert_eq!(s.subscriber_count(), 15);
        assert!(s.unsubscribe(3));
        assert!(!s.unsubscribe(3));
        assert_eq!(s.subscriber_count(), 14);
    }

    #[test]
    fn the_owners_latest_eliciting_subscriber_is_asked() {
        let s = SessionStream::new(&"s1".into());
        for (id, who) in [(1, "operator"), (2, "user:bob"), (3, "operator")] {
            s.subscribe(probe(id), who, false, &Cursor::default())
                .expect("room");
            s.release(id);
        }
        assert_eq!(s.elicitation_target("operator").map(|l| l.id()), Some(3));
        assert_eq!(s.elicitation_target("user:bob").map(|l| l.id()), Some(2));
        assert!(s.elicitation_target("user:eve").is_none());
    }
}

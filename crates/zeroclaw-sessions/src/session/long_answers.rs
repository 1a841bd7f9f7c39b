//! How a spilled answer ([`Text::Spilled`]) reaches the store without being read whole
//! (issue 27): its transcript row is filled from its file a piece at a time
//! ([`answer_row`]), and a snapshot holding it has it spliced into its JSON as the JSON is
//! written ([`Snapshot`]: a trim's kept messages, a compaction's retained ones).

use std::io;
use std::sync::Arc;

use zeroclaw_agent::text::Spilled;
use zeroclaw_agent::text::json as text_json;
use zeroclaw_agent::{ChatMessage, Text};
use zeroclaw_store::{EncodeJson, LongText, NewRow, Role};

/// Bytes of a spilled answer read from its file per write into its row.
const PIECE: usize = 256 * 1024;

/// The transcript row of an answer: a held one copied, a spilled one written from its
/// file.
pub(crate) fn answer_row(content: &Text) -> NewRow {
    match content {
        Text::Held(held) => NewRow::assistant(held.clone()),
        Text::Spilled(file) => {
            NewRow::long(Role::Assistant, Arc::new(SpilledAnswer(Arc::clone(file))))
        }
    }
}

/// A spilled answer as the store reads it.
struct SpilledAnswer(Arc<Spilled>);

impl LongText for SpilledAnswer {
    fn len(&self) -> usize {
        self.0.len()
    }

    fn write_pieces(&self, write: &mut dyn FnMut(&[u8]) -> io::Result<()>) -> io::Result<()> {
        self.0
            .for_each_piece(PIECE, |piece| write(piece.as_bytes()))
    }
}

/// Messages whose snapshot is being written: measured without reading a spilled answer,
/// then written with each one copied from its file between the quotes of its string.
pub(crate) struct Snapshot(pub Vec<ChatMessage>);

impl EncodeJson for Snapshot {
    fn json_len(&self) -> io::Result<usize> {
        text_json::spliced_len(&self.0)
    }

    fn write_json(&self, out: &mut dyn io::Write) -> io::Result<()> {
        text_json::write_spliced(out, &self.0).map(drop)
    }
}

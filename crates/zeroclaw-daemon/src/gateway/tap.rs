//! Where an HTTP caller context's notifications go: nowhere (`POST /rpc`, a REST call),
//! unless a route attached a bounded channel for a while — the event stream of
//! `GET /api/v1/sessions/{id}/events`, or `?wait=false` waiting for its turn to start.
//!
//! The channel is bounded: while its reader does not take, the connection's writer waits
//! and the lines stay in the connection's outbound queue, whose slow-peer rule (SPEC
//! §3.3, §17.1: [`crate::outbound`]) closes it as it would a WebSocket subscriber's.

use std::io;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use tokio::sync::mpsc;

use crate::transport::{BoxFuture, FrameSink};

/// Batches of lines the channel holds before the writer waits.
const BATCHES: usize = 4;

type Slot = Arc<Mutex<Option<mpsc::Sender<Vec<Bytes>>>>>;

/// The switch of one caller context's notifications.
#[derive(Clone, Default)]
pub(crate) struct Tap {
    slot: Slot,
}

impl Tap {
    /// The sink for the context's writer.
    pub fn sink(&self) -> TapSink {
        TapSink {
            slot: Arc::clone(&self.slot),
        }
    }

    /// From now on the context's lines go to the returned receiver (a previous one no
    /// longer gets any).
    pub fn attach(&self) -> mpsc::Receiver<Vec<Bytes>> {
        let (tx, rx) = mpsc::channel(BATCHES);
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(tx);
        rx
    }

    /// Back to dropping the lines.
    pub fn detach(&self) {
        *self.slot.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

/// The writer's end of a [`Tap`].
pub(crate) struct TapSink {
    slot: Slot,
}

impl FrameSink for TapSink {
    fn send_lines<'a>(&'a mut self, lines: &'a [Bytes]) -> BoxFuture<'a, io::Result<()>> {
        // The sender is cloned out: no lock is held while the channel is full.
        let tx = self.slot.lock().unwrap_or_else(|p| p.into_inner()).clone();
        Box::pin(async move {
            if let Some(tx) = tx {
                // A reader that went away just stops taking: the lines are dropped.
                let _ = tx.send(lines.to_vec()).await;
            }
            Ok(())
        })
    }

    fn shutdown(&mut self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

//! A streamed response body turned into provider events, for the native providers
//! (SPEC §19): the body is cut into payloads by its framing (server-sent events, or
//! newline-delimited JSON), each payload goes to the provider's [`Payloads`] parser, and
//! what it produces comes out as the [`ProviderStream`].
//!
//! The bounds of SPEC §17 hold whatever the server sends: one payload over [`MAX_EVENT`]
//! bytes fails the stream, and so does a silence longer than the idle timeout. The parser
//! decides when the response is complete; a body that ends before that is "stream ended
//! unexpectedly".

use std::collections::VecDeque;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt, stream};

use super::body_start::BodyStart;
use super::sse::SseDecoder;
use super::{ProviderError, ProviderEvent, ProviderStream};

pub use super::openai::MAX_EVENT;

/// What a parser produced: events to forward, in order.
pub type Out = VecDeque<Result<ProviderEvent, ProviderError>>;

/// A provider's reading of its stream.
pub trait Payloads: Send + 'static {
    /// One payload (an event's `data`, or one JSON line). Returns true when the response
    /// is complete (the parser has pushed [`ProviderEvent::Done`] or an error).
    fn payload(&mut self, data: &str, out: &mut Out) -> bool;

    /// The body ended before [`Payloads::payload`] said the response was complete. Returns
    /// true when that is a complete response all the same (the parser pushed what ends
    /// it); false fails the stream as cut short.
    fn end_of_body(&mut self, _out: &mut Out) -> bool {
        false
    }
}

/// How the body is cut into payloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`: each event's `data`.
    Sse,
    /// One JSON document per line.
    Ndjson,
}

type Body = Pin<Box<dyn Stream<Item = Result<bytes::Bytes, reqwest::Error>> + Send>>;

/// Newline-delimited lines of at most `max` bytes each.
struct LineDecoder {
    max: usize,
    line: Vec<u8>,
}

impl LineDecoder {
    fn feed(&mut self, piece: &[u8], out: &mut VecDeque<String>) -> Result<(), String> {
        let mut rest = piece;
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            self.push(&rest[..end])?;
            out.push_back(String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned());
            rest = &rest[end + 1..];
        }
        self.push(rest)
    }

    fn push(&mut self, bytes: &[u8]) -> Result<(), String> {
        if self.line.len() + bytes.len() > self.max {
            return Err(format!("a streamed line exceeds {} bytes", self.max));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn finish(&mut self, out: &mut VecDeque<String>) {
        if !self.line.is_empty() {
            out.push_back(String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned());
        }
    }
}

enum Decoder {
    Sse(SseDecoder),
    Lines(LineDecoder),
}

struct State<P> {
    body: Body,
    decoder: Decoder,
    ready: VecDeque<String>,
    eof: bool,
    idle: Duration,
    pending: Out,
    parser: P,
    finished: bool,
    start: BodyStart,
}

/// The events of `resp`'s body as `parser` reads them.
pub fn events<P: Payloads>(
    resp: reqwest::Response,
    framing: Framing,
    idle: Duration,
    parser: P,
) -> ProviderStream {
    let decoder = match framing {
        Framing::Sse => Decoder::Sse(SseDecoder::new(MAX_EVENT)),
        Framing::Ndjson => Decoder::Lines(LineDecoder {
            max: MAX_EVENT,
            line: Vec::new(),
        }),
    };
    let state = State {
        body: Box::pin(resp.bytes_stream()),
        decoder,
        ready: VecDeque::new(),
        eof: false,
        idle,
        pending: VecDeque::new(),
        parser,
        finished: false,
        start: BodyStart::default(),
    };
    Box::pin(stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.pending.pop_front() {
                return Some((item, st));
            }
            if st.finished {
                return None;
            }
            if let Some(data) = st.ready.pop_front() {
                st.start.event();
                let data = data.trim();
                if !data.is_empty() && st.parser.payload(data, &mut st.pending) {
                    st.finished = true;
                }
                continue;
            }
            if st.eof {
                if st.parser.end_of_body(&mut st.pending) {
                    st.finished = true;
                } else {
                    let e = st.start.ended_early();
                    st.fail(e);
                }
                continue;
            }
            match tokio::time::timeout(st.idle, st.body.next()).await {
                Err(_) => st.fail(ProviderError::Timeout(format!(
                    "no data for {} s",
                    st.idle.as_secs_f64()
                ))),
                Ok(None) => {
                    match &mut st.decoder {
                        Decoder::Sse(d) => d.finish(&mut st.ready),
                        Decoder::Lines(d) => d.finish(&mut st.ready),
                    }
                    st.eof = true;
                }
                Ok(Some(Err(e))) => st.fail(ProviderError::Stream(e.to_string())),
                Ok(Some(Ok(piece))) => {
                    st.start.piece(&piece);
                    let fed = match &mut st.decoder {
                        Decoder::Sse(d) => d.feed(&piece, &mut st.ready).map_err(|e| e.to_string()),
                        Decoder::Lines(d) => d.feed(&piece, &mut st.ready),
                    };
                    if let Err(e) = fed {
                        st.fail(ProviderError::Stream(e));
                    }
                }
            }
        }
    }))
}

impl<P> State<P> {
    fn fail(&mut self, e: ProviderError) {
        self.pending.push_back(Err(e));
        self.finished = true;
    }
}

/// `data` parsed as JSON; a payload that is not JSON puts [`malformed`] in `out` and gives
/// `None` (the stream ends there).
pub fn parse(data: &str, out: &mut Out) -> Option<serde_json::Value> {
    match serde_json::from_str(data) {
        Ok(v) => Some(v),
        Err(e) => {
            out.push_back(Err(malformed(data, &e)));
            None
        }
    }
}

/// A payload that is not JSON: the error that fails the stream.
pub fn malformed(data: &str, e: &serde_json::Error) -> ProviderError {
    let shown: String = data.chars().take(200).collect();
    ProviderError::Stream(format!("malformed event JSON ({e}): {shown}"))
}

/// What `parser` makes of `payloads`, up to the one that ends the stream: the providers'
/// tests read their parsers with it.
#[cfg(test)]
pub fn read_all<P: Payloads>(
    mut parser: P,
    payloads: &[serde_json::Value],
) -> Vec<Result<ProviderEvent, ProviderError>> {
    let mut out = Out::new();
    for p in payloads {
        if parser.payload(&p.to_string(), &mut out) {
            break;
        }
    }
    out.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_across_pieces_and_the_bound() {
        let mut d = LineDecoder {
            max: 8,
            line: Vec::new(),
        };
        let mut out = VecDeque::new();
        d.feed(b"{\"a\":1}\n{\"b\"", &mut out).unwrap();
        d.feed(b":2}\n{}", &mut out).unwrap();
        d.finish(&mut out);
        assert_eq!(out, vec!["{\"a\":1}", "{\"b\":2}", "{}"]);
        assert!(d.feed(b"123456789", &mut out).is_err());
    }
}

//! Notifications (SPEC §24.3): when a session needs a person and nobody is watching it,
//! tell its owner — by Web Push to the browsers they subscribed (RFC 8030 delivery, RFC
//! 8291 payload encryption in [`ece`], RFC 8292 VAPID in [`vapid`]) and by the
//! `[notify.NAME]` channels ([`channel`]). The sessions hand over [`Offer`]s; the
//! [`Notifier`] decides and sends, off the sessions' path.
//!
//! Knows the vocabulary, the configuration and the store; nothing of the wire.

pub mod channel;
pub mod ece;
pub mod notifier;
pub mod offer;
pub mod push;
pub mod vapid;

pub use notifier::{ACTIVE_WINDOW, Notifier, Settings};
pub use offer::{Notice, Offer, Seen};

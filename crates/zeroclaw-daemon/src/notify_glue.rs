//! Starts the notifier (SPEC §24.3, `zeroclaw-notify`) with what only the daemon knows —
//! the data dir, the store, the `[notify.NAME]` channels in force, the gateway's address —
//! and lets it watch every session's notable updates through the sessions' tap. The tap
//! only hands an offer to the notifier's bounded queue: it never waits.

use std::sync::Arc;
use std::time::Duration;
use zeroclaw_protocol::SessionId;

use zeroclaw_notify::{Notifier, Offer, Seen, Settings};
use zeroclaw_protocol::UpdateKind;
use zeroclaw_sessions::session::tap::UpdateTap;

use crate::state::Daemon;

struct Tap {
    notifier: Arc<Notifier>,
    /// How recently a face must have been active to count as watching.
    active: Duration,
}

impl UpdateTap for Tap {
    fn notable(&self, update: &UpdateKind) -> bool {
        Offer::notable(update)
    }

    fn active_window(&self) -> Duration {
        self.active
    }

    fn update(&self, session_id: &SessionId, owner: &str, watched: bool, update: &UpdateKind) {
        if let Some(offer) = Offer::from_update(session_id, owner, watched, update) {
            self.notifier.offer(offer);
        }
    }

    fn asked(
        &self,
        session_id: &SessionId,
        owner: &str,
        watched: bool,
        request_id: &str,
        message: &str,
    ) {
        self.notifier.offer(Offer {
            session_id: session_id.clone(),
            owner: owner.to_owned(),
            watched,
            seen: Seen::Waiting {
                event: "ask_user",
                request_id: request_id.to_owned(),
                text: zeroclaw_notify::offer::clip(message, 400),
            },
        });
    }
}

/// Starts the notifier and its tap.
pub(crate) fn start(daemon: &Arc<Daemon>) {
    let weak = Arc::downgrade(daemon);
    let channels: zeroclaw_notify::notifier::Channels = Arc::new(move || {
        weak.upgrade()
            .map(|d| d.config.current().notify.clone())
            .unwrap_or_default()
    });
    let weak = Arc::downgrade(daemon);
    let base_url: zeroclaw_notify::notifier::BaseUrl =
        Arc::new(move || weak.upgrade().and_then(|d| d.gateway.url()));
    let coalesce = zeroclaw_notify::notifier::COALESCE;
    #[cfg(feature = "test-hooks")]
    let coalesce = crate::test_hooks::notify_coalesce_from_env().unwrap_or(coalesce);
    let notifier = Notifier::start(Settings {
        data_dir: daemon.dirs.data_dir.clone(),
        store: daemon.sessions.store.clone(),
        channels,
        base_url,
        coalesce,
    });
    let active = zeroclaw_notify::ACTIVE_WINDOW;
    #[cfg(feature = "test-hooks")]
    let active = crate::test_hooks::notify_active_from_env().unwrap_or(active);
    daemon.sessions.set_tap(Arc::new(Tap {
        notifier: Arc::clone(&notifier),
        active,
    }));
    let _ = daemon.notifier.set(notifier);
}

//! The notifier service: takes [`Offer`]s from the sessions without ever making them wait
//! (a bounded queue, `try_send`; a full queue drops the offer and counts it), turns them
//! into notices ([`Triggers`]), skips what the owner is watching, coalesces to one notice
//! per session per window (the newest waiting one is sent when the window ends), and sends
//! each off the worker's loop: Web Push to every subscription of the owner, and every
//! `[notify.NAME]` channel that wants it. At most [`MAX_SENDING`] notices are being sent at
//! once; every request has a time limit.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use zeroclaw_protocol::SessionId;

use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;
use zeroclaw_config::notify::NotifyChannel;
use zeroclaw_store::Store;

use crate::offer::{Notice, Offer, Triggers};
use crate::push::Delivery;
use crate::vapid::Vapid;

/// Offers waiting for the worker, at most.
pub const QUEUE: usize = 1024;
/// Notices being sent at once, at most.
pub const MAX_SENDING: usize = 8;
/// One notice per session per this long (SPEC §24.3).
pub const COALESCE: Duration = Duration::from_secs(10);
/// A face active this recently counts as watching (SPEC §24.3).
pub const ACTIVE_WINDOW: Duration = Duration::from_secs(120);
/// The longest one push or channel request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// A notice's JSON is at most this long (SPEC §24.3: ≤ 3 KiB).
pub const MAX_PAYLOAD: usize = 3 * 1024;
/// Sessions remembered for coalescing, at most.
const MAX_SESSIONS: usize = 4096;

/// The channels in force (read at each notice: a config write takes effect at once).
pub type Channels = Arc<dyn Fn() -> BTreeMap<String, NotifyChannel> + Send + Sync>;
/// The dashboard's address (`http://127.0.0.1:9781`) while the gateway runs.
pub type BaseUrl = Arc<dyn Fn() -> Option<String> + Send + Sync>;

/// What the notifier needs of the daemon.
pub struct Settings {
    pub data_dir: PathBuf,
    pub store: Store,
    pub channels: Channels,
    /// The dashboard's address, for links that leave the browser (ntfy's `Click`,
    /// webhooks); `None`: links are relative (`/#/session/ID`).
    pub base_url: BaseUrl,
    /// [`COALESCE`], shorter in tests.
    pub coalesce: Duration,
}

/// The running notifier.
pub struct Notifier {
    tx: mpsc::Sender<Offer>,
    data_dir: PathBuf,
    vapid: Mutex<Option<Arc<Vapid>>>,
    dropped: AtomicU64,
}

impl Notifier {
    /// Starts the worker (on the current runtime).
    pub fn start(settings: Settings) -> Arc<Notifier> {
        let (tx, rx) = mpsc::channel(QUEUE);
        let notifier = Arc::new(Notifier {
            tx,
            data_dir: settings.data_dir.clone(),
            vapid: Mutex::new(None),
            dropped: AtomicU64::new(0),
        });
        let worker = Worker {
            notifier: Arc::downgrade(&notifier),
            settings: Arc::new(settings),
            http: None,
            triggers: Triggers::default(),
            last_sent: HashMap::new(),
            pending: HashMap::new(),
            sending: Arc::new(Semaphore::new(MAX_SENDING)),
        };
        tokio::spawn(worker.run(rx));
        notifier
    }

    /// Hands an offer over without waiting; dropped (and counted) when the queue is full.
    pub fn offer(&self, offer: Offer) {
        if self.tx.try_send(offer).is_err() {
            let n = self.dropped.fetch_add(1, Ordering::Relaxed) + 1;
            if n.is_power_of_two() {
                tracing::warn!(dropped = n, "notification queue full: offers dropped");
            }
        }
    }

    /// The daemon's VAPID key, made (and saved 0600) at first use.
    pub fn vapid(&self) -> std::io::Result<Arc<Vapid>> {
        let mut slot = self.vapid.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(v) = slot.as_ref() {
            return Ok(Arc::clone(v));
        }
        let v = Arc::new(Vapid::load_or_create(&self.data_dir)?);
        *slot = Some(Arc::clone(&v));
        Ok(v)
    }
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(REQUEST_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

struct Worker {
    notifier: std::sync::Weak<Notifier>,
    settings: Arc<Settings>,
    /// Made at the first notice sent: a daemon that never notifies never loads TLS.
    http: Option<reqwest::Client>,
    triggers: Triggers,
    /// When each session's last notice went out.
    last_sent: HashMap<SessionId, Instant>,
    /// The newest notice held back by the window, per session.
    pending: HashMap<SessionId, Notice>,
    sending: Arc<Semaphore>,
}

impl Worker {
    async fn run(mut self, mut rx: mpsc::Receiver<Offer>) {
        loop {
            let due = self.next_due();
            let offer = tokio::select! {
                offer = rx.recv() => match offer {
                    Some(offer) => Some(offer),
                    None => break,
                },
                () = sleep_until(due) => None,
            };
            if let Some(offer) = offer {
                self.take(offer).await;
            }
            self.flush_due().await;
        }
    }

    fn next_due(&self) -> Option<Instant> {
        self.pending
            .keys()
            .filter_map(|s| self.last_sent.get(s))
            .map(|at| *at + self.settings.coalesce)
            .min()
    }

    async fn take(&mut self, offer: Offer) {
        let Some(notice) = self.triggers.notice(&offer) else {
            return;
        };
        if offer.watched {
            tracing::debug!(session = %notice.session_id, event = notice.event, "not notified: the owner is watching");
            return;
        }
        let now = Instant::now();
        let recent = self
            .last_sent
            .get(&notice.session_id)
            .is_some_and(|at| now.duration_since(*at) < self.settings.coalesce);
        if recent {
            // A waiting request outranks a turn's end already said.
            self.pending.insert(notice.session_id.clone(), notice);
            return;
        }
        self.send(notice, now).await;
    }

    async fn flush_due(&mut self) {
        let now = Instant::now();
        let window = self.settings.coalesce;
        let due: Vec<SessionId> = self
            .pending
            .keys()
            .filter(|s| {
                self.last_sent
                    .get(*s)
                    .is_none_or(|at| now.duration_since(*at) >= window)
            })
            .cloned()
            .collect();
        for session in due {
            if let Some(notice) = self.pending.remove(&session) {
                self.send(notice, now).await;
            }
        }
        if self.last_sent.len() > MAX_SESSIONS {
            let pending = &self.pending;
            self.last_sent
                .retain(|s, at| pending.contains_key(s) || now.duration_since(*at) < window);
        }
    }

    async fn send(&mut self, notice: Notice, now: Instant) {
        self.last_sent.insert(notice.session_id.clone(), now);
        let Some(notifier) = self.notifier.upgrade() else {
            return;
        };
        // Waits only when MAX_SENDING notices are still going out; offers queue meanwhile.
        let Ok(permit) = Arc::clone(&self.sending).acquire_owned().await else {
            return;
        };
        let settings = Arc::clone(&self.settings);
        let http = self.http.get_or_insert_with(http_client).clone();
        tokio::spawn(async move {
            deliver(&notifier, &settings, &http, &notice).await;
            drop(permit);
        });
    }
}

async fn sleep_until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The notice as JSON: `{event, sessionId, title, text, url, requestId?}`, at most
/// [`MAX_PAYLOAD`] bytes (the text is cut to fit). No secrets: the title and text are
/// the update's own words, as every face of the owner sees them.
pub fn payload(notice: &Notice, base_url: Option<&str>) -> (Vec<u8>, String) {
    let mut url = format!("/#/session/{}", notice.session_id);
    if let Some(id) = &notice.request_id {
        url.push_str("?request=");
        url.push_str(id);
    }
    if let Some(base) = base_url {
        url = format!("{}{url}", base.trim_end_matches('/'));
    }
    let mut text = notice.text.clone();
    loop {
        let mut body = json!({
            "event": notice.event,
            "sessionId": notice.session_id,
            "title": notice.title,
            "text": text,
            "url": url,
        });
        if let Some(id) = &notice.request_id {
            body["requestId"] = id.clone().into();
        }
        let bytes = body.to_string().into_bytes();
        if bytes.len() <= MAX_PAYLOAD || text.is_empty() {
            return (bytes, url);
        }
        let keep = text.chars().count() * 3 / 4;
        text = crate::offer::clip(&text, keep.saturating_sub(1));
        if keep == 0 {
            text.clear();
        }
    }
}

async fn deliver(
    notifier: &Notifier,
    settings: &Settings,
    http: &reqwest::Client,
    notice: &Notice,
) {
    let (json, url) = payload(notice, (settings.base_url)().as_deref());
    let urgency = if notice.request_id.is_some() {
        "high"
    } else {
        "normal"
    };
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    match settings.store.push_subscriptions(&notice.owner).await {
        Ok(subs) if !subs.is_empty() => match notifier.vapid() {
            Ok(vapid) => {
                for sub in subs {
                    match crate::push::send(http, &vapid, &sub, &json, urgency, now).await {
                        Delivery::Sent => {}
                        Delivery::Gone => {
                            tracing::info!(endpoint = %sub.endpoint, "push subscription gone: dropped");
                            if let Err(e) = settings
                                .store
                                .remove_push_subscription(None, &sub.endpoint)
                                .await
                            {
                                tracing::warn!("cannot drop a push subscription: {e}");
                            }
                        }
                        Delivery::Failed(e) => {
                            tracing::warn!(endpoint = %sub.endpoint, "push not delivered: {e}")
                        }
                    }
                }
            }
            Err(e) => tracing::warn!("no VAPID key: {e}"),
        },
        Ok(_) => {}
        Err(e) => tracing::warn!("cannot read push subscriptions: {e}"),
    }
    for (name, channel) in (settings.channels)() {
        if !channel.wants(notice.event, &notice.owner) {
            continue;
        }
        if let Err(e) =
            crate::channel::deliver(http, &channel, &json, &notice.title, &notice.text, &url).await
        {
            tracing::warn!(channel = %name, "notification not delivered: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_fits_3_kib_and_links_the_request() {
        let notice = Notice {
            event: "approval_request",
            session_id: "s1".into(),
            owner: "operator".into(),
            title: "Approval needed".into(),
            text: "é".repeat(10_000),
            request_id: Some("apr_1".into()),
        };
        let (json, url) = payload(&notice, Some("https://h:9781/"));
        assert!(json.len() <= MAX_PAYLOAD, "{}", json.len());
        assert_eq!(url, "https://h:9781/#/session/s1?request=apr_1");
        let v: serde_json::Value = serde_json::from_slice(&json).expect("json");
        assert_eq!(v["requestId"], "apr_1");
        assert!(v["text"].as_str().is_some_and(|t| t.len() > 1000));
    }
}

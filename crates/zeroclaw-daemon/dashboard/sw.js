// The dashboard's service worker (SPEC §24.3), served at /sw.js so its scope is the whole
// dashboard. It shows the daemon's Web Push notifications — the payload is the notice's
// JSON {event, sessionId, title, text, url, requestId?}, already decrypted by the browser —
// and a click opens the session at the waiting card: an open dashboard window is focused
// and told where to go, else a new one is opened at the notice's URL. Nothing is cached.

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("push", (event) => {
  let notice = {};
  try {
    notice = event.data ? event.data.json() : {};
  } catch {
    notice = { title: "zeroclaw", text: event.data ? event.data.text() : "" };
  }
  const title = notice.title || "zeroclaw";
  event.waitUntil(self.registration.showNotification(title, {
    body: notice.text || "",
    // One notification per session on screen: a newer one replaces it.
    tag: notice.sessionId ? `session:${notice.sessionId}` : undefined,
    renotify: true,
    requireInteraction: Boolean(notice.requestId),
    icon: "/assets/icon-192.png",
    badge: "/assets/icon-192.png",
    data: { url: notice.url || "/#/sessions", sessionId: notice.sessionId, requestId: notice.requestId },
  }));
});

/// Where a click goes: the notice's URL, kept on this origin.
function target(data) {
  const url = new URL((data && data.url) || "/#/sessions", self.location.origin);
  return url.origin === self.location.origin ? url : new URL("/#/sessions", self.location.origin);
}

async function open(data) {
  const url = target(data);
  const windows = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
  for (const client of windows) {
    if (new URL(client.url).origin !== url.origin) continue;
    // The page follows the hash itself (notify.js `followClicks`): no reload, no new login.
    client.postMessage({ type: "zeroclaw:open", hash: url.hash });
    // Focusing needs the click's user activation; without it the window stays where it is.
    if ("focus" in client) await client.focus().catch(() => {});
    return client;
  }
  return self.clients.openWindow(url.href);
}

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  event.waitUntil(open(event.notification.data));
});

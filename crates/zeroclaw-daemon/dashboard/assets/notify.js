// Phone notifications (SPEC §24.3): the "Notify me" control, which registers the service
// worker (/sw.js), subscribes this browser to Web Push with the daemon's VAPID key
// (`push/key`) and hands the subscription to the daemon (`push/subscribe`); the opening of
// a session at the card a notification was about (`#/session/ID?request=REQ`); and the
// following of a click the service worker reports to an open window.
import { h } from "./dom.js";

const supported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

/// The VAPID key as pushManager.subscribe wants it.
function keyBytes(b64url) {
  const b64 = b64url.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((b64url.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
}

/// Registers the service worker (the dashboard is then installable); its registration.
export async function registerWorker() {
  if (!("serviceWorker" in navigator)) throw new Error("this browser has no service workers");
  const reg = await navigator.serviceWorker.register("/sw.js", { scope: "/" });
  await navigator.serviceWorker.ready;
  return reg;
}

/// Subscribes this browser and tells the daemon; the subscription.
export async function subscribe(rpc) {
  const reg = await registerWorker();
  if (Notification.permission !== "granted" && (await Notification.requestPermission()) !== "granted") {
    throw new Error("notifications are not allowed for this site");
  }
  const { publicKey } = await rpc.call("push/key", {});
  let sub = await reg.pushManager.getSubscription();
  if (!sub) sub = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(publicKey) });
  const json = sub.toJSON();
  await rpc.call("push/subscribe", { endpoint: json.endpoint, keys: json.keys });
  return sub;
}

/// The header's "Notify me" button (hidden where the caller may not subscribe).
export function notifyControl(rpc) {
  const button = h("button.link.notify", { type: "button", title: "Get a notification when a session waits for you" }, "Notify me");
  button.hidden = !rpc.can("push/subscribe");
  if (supported() && Notification.permission === "granted") button.textContent = "Notifying";
  // The worker is registered at once where it can be, so the app can be installed.
  if ("serviceWorker" in navigator) registerWorker().catch(() => {});
  button.onclick = async () => {
    if (!supported()) {
      button.textContent = "No notifications here";
      return;
    }
    button.disabled = true;
    try {
      await subscribe(rpc);
      button.textContent = "Notifying";
    } catch (e) {
      button.textContent = "Notify me";
      button.title = String(e && e.message ? e.message : e);
    } finally {
      button.disabled = false;
    }
  };
  return button;
}

/// Scrolls to the card of `requestId` in `root` once the session has drawn it (at most
/// 15 s), and marks it.
export function focusRequest(root, requestId) {
  const sel = `[data-request="${CSS.escape(requestId)}"]`;
  const show = (el) => {
    el.classList.add("focused");
    el.scrollIntoView({ block: "center" });
    const first = el.querySelector("button");
    if (first) first.focus({ preventScroll: true });
  };
  const found = root.querySelector(sel);
  if (found) return show(found);
  const watch = new MutationObserver(() => {
    const el = root.querySelector(sel);
    if (el) {
      watch.disconnect();
      show(el);
    }
  });
  watch.observe(root, { childList: true, subtree: true, attributes: true, attributeFilter: ["data-request"] });
  setTimeout(() => watch.disconnect(), 15000);
}

/// Follows the service worker's "open this" message (a notification clicked while a
/// dashboard window is open).
export function followClicks() {
  if (!("serviceWorker" in navigator)) return;
  navigator.serviceWorker.addEventListener("message", (ev) => {
    const m = ev.data;
    if (m && m.type === "zeroclaw:open" && typeof m.hash === "string" && m.hash.startsWith("#/")) {
      location.hash = m.hash;
    }
  });
}

// Browser service worker for pushspool secure jobs: Web Push brings {"secureId": "<id>"}; the worker
// fetches the text with the signed-in user's credentials (the fetch counts as `received`), shows
// it, reports `received`, and `opened` or `dismissed` when the user acts on it. Served from the
// same origin as pushspool serve (behind nginx, say), so no CORS is involved.

// The page stores "Basic base64(user:password)" in IndexedDB at sign-in (see index.html).
function authorization() {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open('pushspool', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('auth');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const get = open.result.transaction('auth').objectStore('auth').get('authorization');
      get.onsuccess = () => resolve(get.result);
      get.onerror = () => reject(get.error);
    };
  });
}

async function call(path, body) {
  const headers = { Authorization: await authorization() };
  if (body) headers['Content-Type'] = 'application/json';
  return fetch(path, body ? { method: 'POST', headers, body: JSON.stringify(body) } : { headers });
}

const report = (id, type) => call(`/api/notifications/${encodeURIComponent(id)}/events`, { type });

self.addEventListener('push', (event) => {
  const { secureId } = event.data ? event.data.json() : {};
  if (!secureId) return;
  event.waitUntil((async () => {
    // {"id", "title", "message", "url", "image", ...}: the text as this user's device shows it.
    const answer = await call(`/v1/notifications/${encodeURIComponent(secureId)}`);
    if (!answer.ok) {   // signed out, or expired (410): say something rather than nothing
      return self.registration.showNotification('New message', { body: 'Open the app to read it.' });
    }
    const n = await answer.json();
    await self.registration.showNotification(n.title || 'New message', {
      body: n.message, icon: n.image || undefined, tag: secureId, data: { id: secureId, url: n.url },
    });
    await report(secureId, 'received');   // counted by the fetch already: the server says "duplicate"
  })());
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const { id, url } = event.notification.data;
  event.waitUntil(Promise.all([report(id, 'opened'), clients.openWindow(url || '/')]));
});

self.addEventListener('notificationclose', (event) => {
  event.waitUntil(report(event.notification.data.id, 'dismissed'));
});

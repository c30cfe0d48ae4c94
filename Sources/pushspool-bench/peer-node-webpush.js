// The peer baseline for `pushspool-bench webpush`: Node's own crypto and http2 client doing the
// work pushspool does per notification, to the same kind of subscriptions (the import file the
// fake push service wrote) on the same fake:
//   a fresh ephemeral P-256 key and ECDH with the subscription's p256dh, a random salt,
//   HKDF-SHA-256 (RFC 8291 §3.3–3.4, RFC 8188 §2.2), AES-128-GCM over plaintext ‖ 0x02 (one
//   record, rs 4096, keyid = the ephemeral public key), and a POST with `Authorization: vapid
//   t=<JWT>, k=<key>` (ES256 JWT {aud: origin, exp: now + 12 h, sub}, signed once per origin),
//   `Content-Encoding: aes128gcm`, `Content-Type: application/octet-stream`, `TTL`, `Urgency`;
//   one http2 session per origin, the same number of streams in flight as pushspool.
// Prints one JSON line: {"ok", "failed", "byStatus", "ms", "cpuMs", "jwts"}.
'use strict';
const http2 = require('http2');
const fs = require('fs');
const crypto = require('crypto');
const { streams } = require('./peer-node-client.js');

const a = {};
for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
const concurrency = Number(a.concurrency);
const plaintext = Buffer.from(a.payload);
const ttl = String(a.ttl), urgency = a.urgency || 'normal';

const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();

// The import lines: {"id", "platform": "web", "handle": {"endpoint", "keys": {"p256dh", "auth"}}, …}
const subs = [];
for (const line of fs.readFileSync(a.subscriptions, 'utf8').split('\n')) {
  if (!line) continue;
  const h = JSON.parse(line).handle;
  const u = new URL(h.endpoint);
  subs.push({ origin: u.origin, path: u.pathname + u.search,
              p256dh: Buffer.from(h.keys.p256dh, 'base64url'), auth: Buffer.from(h.keys.auth, 'base64url') });
}
const count = subs.length;

// VAPID (RFC 8292): one token per origin.
const vapidKey = crypto.createPrivateKey(fs.readFileSync(a['vapid-key']));
const jwk = crypto.createPublicKey(vapidKey).export({ format: 'jwk' });
const k = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url')]).toString('base64url');
const b64 = (x) => Buffer.from(x).toString('base64url');
const tokens = new Map();
function authorization(origin) {
  let t = tokens.get(origin);
  if (!t) {
    const input = b64(JSON.stringify({ typ: 'JWT', alg: 'ES256' })) + '.' +
      b64(JSON.stringify({ aud: origin, exp: Math.floor(Date.now() / 1000) + 12 * 3600, sub: a.subject }));
    const sig = crypto.sign('sha256', Buffer.from(input), { key: vapidKey, dsaEncoding: 'ieee-p1363' });
    t = 'vapid t=' + input + '.' + sig.toString('base64url') + ', k=' + k;
    tokens.set(origin, t);
  }
  return t;
}

// RFC 8291: the aes128gcm body for one subscription. The fastest of Node's ways measured here:
// createECDH (a raw point, no KeyObject to build per subscription) and HKDF as HMACs (one
// extract and one expand block each, as the web-push/http_ece modules do; hkdfSync was ~70 µs
// slower per message).
const keyInfoPrefix = Buffer.from('WebPush: info\0');
const cekInfo = Buffer.from('Content-Encoding: aes128gcm\0\x01');
const nonceInfo = Buffer.from('Content-Encoding: nonce\0\x01');
const counter1 = Buffer.from([1]);   // HKDF-Expand T(1)
const delimiter = Buffer.from([2]);
const rsAndIdlen = Buffer.from([0, 0, 0x10, 0, 65]);   // rs 4096, keyid of 65 bytes
const hmac = (key, data) => crypto.createHmac('sha256', key).update(data).digest();
function encrypt(sub) {
  const ecdh = crypto.createECDH('prime256v1');
  const senderPublic = ecdh.generateKeys();
  const secret = ecdh.computeSecret(sub.p256dh);
  const salt = crypto.randomBytes(16);
  const ikm = hmac(hmac(sub.auth, secret), Buffer.concat([keyInfoPrefix, sub.p256dh, senderPublic, counter1]));
  const prk = hmac(salt, ikm);
  const cek = hmac(prk, cekInfo).subarray(0, 16);
  const nonce = hmac(prk, nonceInfo).subarray(0, 12);
  const cipher = crypto.createCipheriv('aes-128-gcm', cek, nonce);
  const sealed = [cipher.update(plaintext), cipher.update(delimiter), cipher.final(), cipher.getAuthTag()];
  return Buffer.concat([salt, rsAndIdlen, senderPublic, ...sealed]);
}

const ca = fs.readFileSync(a.ca);
const sessions = new Map();
function session(origin) {
  let s = sessions.get(origin);
  if (!s) {
    s = http2.connect(origin, { ca, settings: { enablePush: false } });
    s.on('error', (e) => { console.error('session error', e.message); });
    sessions.set(origin, s);
  }
  return s;
}

streams({ count, concurrency, okStatus: 201, cpu0, t0, open: (n) => {
  const sub = subs[n];
  const body = encrypt(sub);
  const req = session(sub.origin).request({
    ':method': 'POST', ':path': sub.path,
    authorization: authorization(sub.origin), 'content-encoding': 'aes128gcm',
    'content-type': 'application/octet-stream', ttl, urgency,
    // pushspool sends the per-subscription path as a never-indexed literal too.
    [http2.sensitiveHeaders]: [':path'],
  });
  return [req, body];
}, done: ({ ok, failed, byStatus, ms, cpuMs }) => {
  process.stdout.write(JSON.stringify({ ok, failed, byStatus, ms, cpuMs, jwts: tokens.size }) + '\n');
  for (const s of sessions.values()) s.close();
} });

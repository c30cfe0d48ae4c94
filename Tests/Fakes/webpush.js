// Fake Web Push service (RFC 8030) that checks what real push services check and, unlike them,
// also decrypts every message the way a browser would (RFC 8291), with the private keys of the
// subscriptions it generated itself. HTTPS, HTTP/2 with HTTP/1.1 allowed.
//
// Subscriptions: `--subscriptions N --out FILE` writes N import lines
//   {"id":"<--id-prefix, default web->i>","platform":"web","handle":{"endpoint":…,"keys":{…}},"tags":["campaign"]}
// whose endpoints are `https://<--endpoint-host, default 127.0.0.1>:<port>/push/<i>-<random>`.
// `--gone K`: the last K subscriptions are expired (410 Gone).
// `--throttle N`: the first N requests get 429 with Retry-After: 1.
// Every request is checked: VAPID (`Authorization: vapid t=<JWT>, k=<key>`; ES256 signature with
// k, aud = this server's origin, exp in the future and at most 24 h ahead, sub mailto:/https:),
// `Content-Encoding: aes128gcm`, a `TTL` header, a body of at most 4096 bytes that decrypts with
// the subscription's keys. Failures answer 401/403 (VAPID), 400 (headers, decryption) or 413.
// Stats (--state FILE), rewritten after every request: {requests, answered, byStatus, delivered,
// duplicates, gone, problems, plaintexts: {id: [text…]}, headers: {id: {ttl, urgency, topic}},
// vapid: {aud, sub, exp, k}, httpVersions, tlsConnections, openSessions}.
// For the benchmark (every request is still checked and decrypted the same way):
//   --track-limit N  plaintexts and headers only for the first N subscriptions delivered to
//                    (default: all; duplicates are counted for every subscription either way),
//   --flush-ms N     the state file at most every N ms while busy and at once when a connection
//                    closes, instead of after every request,
//   --verify-once    an Authorization header whose signature already verified is not verified
//                    again (its exp is still checked on every request), as the fake APNs does.
'use strict';
const http2 = require('http2');
const crypto = require('crypto');
const fs = require('fs');
const { args, tlsOptions, stateWriter, announce } = require('./common');

const a = args();
const writeState = stateWriter(a.state);
const count = Number(a.subscriptions || 0);
const goneCount = Number(a.gone || 0);
let throttleLeft = Number(a.throttle || 0);
const endpointHost = a['endpoint-host'] || '127.0.0.1';
const idPrefix = a['id-prefix'] || 'web-';
const trackLimit = a['track-limit'] === undefined ? Infinity : Number(a['track-limit']);
const flushMs = Number(a['flush-ms'] || 0);
const verified = a['verify-once'] ? new Map() : null;   // Authorization -> claims that verified

const stats = {
  requests: 0, answered: 0, byStatus: {}, delivered: 0, duplicates: 0, gone: 0, problems: [],
  plaintexts: {}, headers: {}, vapid: null, declarative: 0, classic: 0, httpVersions: {}, tlsConnections: 0, openSessions: 0,
};
const subscriptions = new Map();     // path token -> {id, ecdh, auth, gone, deliveries}
let tracked = 0;                     // subscriptions with plaintexts/headers in the stats

let dirty = false, timer = null;
function flush() { timer = null; if (dirty) { dirty = false; writeState(stats); } }
function touch() {
  if (flushMs <= 0) { writeState(stats); return; }
  dirty = true;
  if (!timer) timer = setTimeout(flush, flushMs);
}

function b64url(buf) { return Buffer.from(buf).toString('base64url'); }
function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

function answer(res, status, headers = {}) {
  stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
  stats.answered++;
  res.writeHead(status, headers);
  res.end();
  touch();
}

function hkdf(salt, ikm, info, length) {
  const prk = crypto.createHmac('sha256', salt).update(ikm).digest();
  return crypto.createHmac('sha256', prk).update(Buffer.concat([info, Buffer.from([1])])).digest().subarray(0, length);
}

// RFC 8291 §3.4 / RFC 8188: one record, keyid = the sender's ephemeral public key.
function decrypt(body, sub) {
  if (body.length < 21 + 65 + 17) throw new Error('body shorter than header + one record');
  const salt = body.subarray(0, 16);
  const rs = body.readUInt32BE(16);
  const idlen = body[20];
  if (idlen !== 65) throw new Error('keyid length ' + idlen);
  if (rs < 18) throw new Error('record size ' + rs);
  const senderPublic = body.subarray(21, 86);
  const record = body.subarray(86);
  if (record.length > rs) throw new Error('more than one record');
  const secret = sub.ecdh.computeSecret(senderPublic);
  const uaPublic = sub.ecdh.getPublicKey();
  const keyInfo = Buffer.concat([Buffer.from('WebPush: info\0'), uaPublic, senderPublic]);
  const ikm = hkdf(sub.auth, secret, keyInfo, 32);
  const cek = hkdf(salt, ikm, Buffer.from('Content-Encoding: aes128gcm\0'), 16);
  const nonce = hkdf(salt, ikm, Buffer.from('Content-Encoding: nonce\0'), 12);
  const decipher = crypto.createDecipheriv('aes-128-gcm', cek, nonce);
  decipher.setAuthTag(record.subarray(record.length - 16));
  let padded = Buffer.concat([decipher.update(record.subarray(0, record.length - 16)), decipher.final()]);
  let end = padded.length;
  while (end > 0 && padded[end - 1] === 0) end--;
  if (end === 0 || padded[end - 1] !== 2) throw new Error('no last-record delimiter 0x02');
  return padded.subarray(0, end - 1).toString('utf8');
}

// RFC 8292 §3: `vapid t=<JWT>, k=<uncompressed P-256 key, base64url>`.
function checkVAPID(header, origin) {
  const known = verified && verified.get(header);
  if (known) return checkTimes(known);
  const m = /^vapid\s+(.*)$/i.exec(header || '');
  if (!m) return { status: 401, why: 'no vapid Authorization' };
  const params = {};
  for (const part of m[1].split(',')) {
    const eq = part.indexOf('=');
    if (eq > 0) params[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  if (!params.t || !params.k) return { status: 401, why: 'vapid without t or k' };
  const k = Buffer.from(params.k, 'base64url');
  if (k.length !== 65 || k[0] !== 4) return { status: 401, why: 'k is not an uncompressed P-256 key' };
  const parts = params.t.split('.');
  if (parts.length !== 3) return { status: 401, why: 't is not a JWS' };
  let head, claims;
  try {
    head = JSON.parse(Buffer.from(parts[0], 'base64url').toString('utf8'));
    claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8'));
  } catch (e) { return { status: 401, why: 'JWT is not JSON' }; }
  if (head.alg !== 'ES256') return { status: 401, why: 'alg ' + head.alg };
  const key = crypto.createPublicKey({ key: { kty: 'EC', crv: 'P-256', x: b64url(k.subarray(1, 33)), y: b64url(k.subarray(33)) }, format: 'jwk' });
  const sig = Buffer.from(parts[2], 'base64url');
  const ok = sig.length === 64 && crypto.verify('sha256', Buffer.from(parts[0] + '.' + parts[1]), { key, dsaEncoding: 'ieee-p1363' }, sig);
  if (!ok) return { status: 403, why: 'VAPID signature does not verify with k' };
  if (claims.aud !== origin) return { status: 403, why: 'aud ' + claims.aud + ' is not ' + origin };
  if (typeof claims.sub !== 'string' || !/^(mailto:|https:)/.test(claims.sub)) return { status: 403, why: 'sub ' + claims.sub };
  const times = checkTimes(claims);
  if (times) return times;
  stats.vapid = { aud: claims.aud, sub: claims.sub, exp: claims.exp, k: params.k };
  if (verified) verified.set(header, claims);
  return null;
}

function checkTimes(claims) {
  const now = Math.floor(Date.now() / 1000);
  if (typeof claims.exp !== 'number' || claims.exp <= now) return { status: 403, why: 'exp missing or past' };
  if (claims.exp > now + 24 * 3600) return { status: 403, why: 'exp more than 24 h ahead' };
  return null;
}

// WebKit's declarative Web Push: a decrypted body with "web_push": 8030 must be a notification
// Safari can show without a service worker (title, an https navigate URL, typed optional
// members); Safari drops it otherwise, which the fake answers 400 so that a test sees it.
// stats.declarative / stats.classic count the two forms delivered.
function declarativeProblem(text) {
  let doc;
  try { doc = JSON.parse(text); } catch (e) { stats.classic++; return null; }
  if (!doc || typeof doc !== 'object' || doc.web_push === undefined) { stats.classic++; return null; }
  if (doc.web_push !== 8030) return 'web_push is not 8030';
  const n = doc.notification;
  if (!n || typeof n !== 'object' || Array.isArray(n)) return 'no notification object';
  if (typeof n.title !== 'string' || !n.title) return 'notification.title missing';
  if (typeof n.navigate !== 'string' || !/^https:\/\/\S+$/.test(n.navigate)) return 'notification.navigate is not an https URL';
  for (const k of ['body', 'lang', 'dir', 'tag']) if (n[k] !== undefined && typeof n[k] !== 'string') return 'notification.' + k + ' not a string';
  if (n.silent !== undefined && typeof n.silent !== 'boolean') return 'notification.silent not a boolean';
  if (doc.app_badge !== undefined && !(Number.isInteger(doc.app_badge) && doc.app_badge >= 0)) return 'app_badge not a whole number';
  if (doc.mutable !== undefined && typeof doc.mutable !== 'boolean') return 'mutable not a boolean';
  stats.declarative++;
  return null;
}

function handle(req, res, port) {
  stats.requests++;
  stats.httpVersions[req.httpVersion] = (stats.httpVersions[req.httpVersion] || 0) + 1;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const m = /^\/push\/([A-Za-z0-9_-]+)$/.exec(req.url);
    const sub = m && subscriptions.get(m[1]);
    if (req.method !== 'POST' || !sub) { problem('unknown endpoint ' + req.url); return answer(res, 404); }
    if (throttleLeft > 0) { throttleLeft--; return answer(res, 429, { 'retry-after': '1' }); }
    const vapid = checkVAPID(req.headers.authorization, 'https://' + endpointHost + ':' + port);
    if (vapid) { problem(sub.id + ': ' + vapid.why); return answer(res, vapid.status); }
    if (sub.gone) { stats.gone++; return answer(res, 410); }
    if (req.headers['content-encoding'] !== 'aes128gcm') { problem(sub.id + ': content-encoding ' + req.headers['content-encoding']); return answer(res, 400); }
    if (!/^[0-9]+$/.test(req.headers.ttl || '')) { problem(sub.id + ': TTL header ' + req.headers.ttl); return answer(res, 400); }
    if (body.length > 4096) { problem(sub.id + ': body of ' + body.length + ' bytes'); return answer(res, 413); }
    let text;
    try { text = decrypt(body, sub); } catch (e) { problem(sub.id + ': cannot decrypt: ' + e.message); return answer(res, 400); }
    const shape = declarativeProblem(text);
    if (shape) { problem(sub.id + ': declarative: ' + shape); return answer(res, 400); }
    if (sub.deliveries++ > 0) stats.duplicates++;
    let list = stats.plaintexts[sub.id];
    if (!list && tracked < trackLimit) { tracked++; list = stats.plaintexts[sub.id] = []; }
    if (list) {
      list.push(text);
      stats.headers[sub.id] = { ttl: req.headers.ttl, urgency: req.headers.urgency || null, topic: req.headers.topic || null };
    }
    stats.delivered++;
    answer(res, 201, { location: 'https://' + endpointHost + ':' + port + '/message/' + crypto.randomUUID() });
  });
}

const server = http2.createSecureServer(Object.assign({ allowHTTP1: true }, tlsOptions()));
server.on('secureConnection', (socket) => {
  stats.tlsConnections++; stats.openSessions++; touch();
  socket.on('close', () => { stats.openSessions--; dirty = true; flush(); });
});
server.on('listening', () => {
  const port = server.address().port;
  server.on('request', (req, res) => handle(req, res, port));
  const lines = [];
  for (let i = 0; i < count; i++) {
    const ecdh = crypto.createECDH('prime256v1');
    ecdh.generateKeys();
    const auth = crypto.randomBytes(16);
    const token = i + '-' + crypto.randomBytes(12).toString('base64url');
    const id = idPrefix + i;
    subscriptions.set(token, { id, ecdh, auth, gone: i >= count - goneCount, deliveries: 0 });
    const handle = { endpoint: 'https://' + endpointHost + ':' + port + '/push/' + token,
                     keys: { p256dh: b64url(ecdh.getPublicKey()), auth: b64url(auth) } };
    lines.push(JSON.stringify({ id, platform: 'web', handle, tags: ['campaign'] }));
  }
  if (a.out) fs.writeFileSync(a.out, lines.join('\n') + (lines.length ? '\n' : ''));
  writeState(stats);
});
announce(server);

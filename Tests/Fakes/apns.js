// Fake APNs provider API (HTTP/2 only, TLS from Fixtures) that checks what Apple checks and answers
// per device token, scripted by the token's first hex digits:
//   410a… 410 Unregistered, timestamp = now (ms)        410b… 410 Unregistered, timestamp 1 h ago
//   410e… 410 ExpiredToken                               400b… 400 BadDeviceToken
//   400d… 400 DeviceTokenNotForTopic                     400e… 400 an unknown reason (NewAppleReason)
// Before that it checks what Apple checks: the topic is --topic plus the push type's suffix
// (.voip, .push-type.liveactivity, …), background is priority 5, the size is within 4096 bytes
// (5120 for voip), and the payload has the shape the push type needs (content-available,
// content-changed, ActivityKit's keys): a shape the device would drop is answered 400 PayloadShape.
// A secure push (one with "secureId", the Secure Push tutorial's shape) must be either a background
// push at priority 5 with content-available: 1 and nothing that alerts, or an alert with
// mutable-content: 1 (for a Notification Service Extension); stats.secureIds lists the ids delivered.
// stats.deliveredByPushType counts the 200s per apns-push-type. Broadcast channels (iOS 18): see
// channelAnswer below.
//   503f… 503 ServiceUnavailable once, then 200          500f… 500 InternalServerError once, then 200
//   429f… 429 TooManyRequests once, then 200             429a… always 429 TooManyRequests
//   503c… 503 Shutdown once, then 200                    anything else: 200
// Options: --team-id T --key-id K --topic T (what the JWT and apns-topic must say; several apps:
//   --topic A,B and --keys TEAM:KEY,TEAM2:KEY2, every key signing with the fixture's key),
//   --disallow-topic T (answer 400 TopicDisallowed for that topic),
//   --refuse-key KEY (answer 403 InvalidProviderToken for JWTs of that key id: a revoked key),
//   --goaway-every N (after answering every Nth stream of a session, GOAWAY(NO_ERROR, that stream)),
//   --goaway-once N (the same, once in the fake's life: on the first connection to reach its Nth stream),
//   --auth-reason R (answer every request 403 R: InvalidProviderToken, Forbidden, …),
//   --track-limit N (per-token detail only for the first N tokens; default 2000, keeps the fake cheap),
//   --hold-ms N (answer each stream N ms after its request ended, so many streams are open at once),
//   --max-streams N (SETTINGS_MAX_CONCURRENT_STREAMS, default 1000 as Apple's),
//   --first-streams N (a new connection allows N streams until its first answer, then --max-streams,
//     as APNs allows one until a request with a valid JWT has succeeded),
//   --refuse-every N (every Nth stream: RST_STREAM(REFUSED_STREAM) unprocessed, which a client may resend),
//   --reset-every N (every Nth stream: RST_STREAM(INTERNAL_ERROR) with no answer: not delivered),
//   --retry-after S (429 and 503 answers carry Retry-After: S),
//   --outage-file F (while file F exists, every request is answered 503 ServiceUnavailable).
// Arrival times of requests (when each request's body has arrived) are kept as counts per second
// (stats.arrivals: {first, last (ms since the epoch), perSecond: {unix second: requests}}),
// so tests can check rate caps, pacing and how soon a cancel stops new requests.
// Stats (--state FILE) are written at most every 100 ms while busy and at once when a session closes.
'use strict';
const http2 = require('http2');
const fs = require('fs');
const path = require('path');
const { args, tlsOptions, stateWriter, announce, verifyJWT, fixtures } = require('./common');

const a = args();
const teamID = a['team-id'] || 'TEAMID1234';
const keyID = a['key-id'] || 'TESTKEY123';
const topics = new Set((a['topic'] || 'com.example.app').split(','));
// Every (team, key) pair whose JWTs are accepted.
const keys = new Set((a['keys'] || `${teamID}:${keyID}`).split(','));
const disallowed = a['disallow-topic'] || null;
const refusedKey = a['refuse-key'] || null;
const goawayEvery = Number(a['goaway-every'] || 0);
const goawayOnce = Number(a['goaway-once'] || 0);
let goawayOnceSent = false;
const authReason = a['auth-reason'] || null;
const trackLimit = Number(a['track-limit'] || 2000);
const holdMs = Number(a['hold-ms'] || 0);
const maxStreams = Number(a['max-streams'] || 1000);
const firstStreams = Number(a['first-streams'] || 0);
const refuseEvery = Number(a['refuse-every'] || 0);
const resetEvery = Number(a['reset-every'] || 0);
const retryAfter = a['retry-after'] || null;
const outageFile = a['outage-file'] || null;
const pubKey = fs.readFileSync(path.join(fixtures, 'AuthKey_TESTKEY123.pub.pem'));
const writeState = stateWriter(a.state);

const stats = {
  requests: 0, answered: 0, byStatus: {}, byReason: {}, tlsConnections: 0, sessions: 0, closedSessions: 0, openSessions: 0,
  nonH2Rejected: 0, goawaysSent: 0, refusedAfterGoaway: 0, refused: 0, resets: 0, jwts: 0, badJWTs: 0, tokensDelivered: 0, duplicateDeliveries: 0,
  maxStreamsOpen: 0, maxOpenSessions: 0, streamsPerSession: [], perToken: {}, lastHeaders: {}, problems: [], deliveredByPushType: {}, secureIds: [],
  arrivals: { first: null, last: null, perSecond: {} },
  deliveredByTopic: {}, jwtsByKey: {}, requestsByKey: {},
};
const jwtCache = new Map();          // jwt -> verdict (each distinct token is verified once)
const attempts = new Map();          // device token -> requests seen
const delivered = new Set();         // token/apns-id pairs answered 200

let dirty = false, timer = null;
function flush() { timer = null; if (dirty) { dirty = false; writeState(stats); } }
function touch() { dirty = true; if (!timer) timer = setTimeout(flush, 100); }

function problem(text) { if (stats.problems.length < 20) stats.problems.push(text); }

function checkJWT(auth) {
  if (!auth || !auth.startsWith('bearer ')) return 'MissingProviderToken';
  const jwt = auth.slice(7);
  let verdict = jwtCache.get(jwt);
  if (verdict === undefined) {
    stats.jwts++;
    const v = verifyJWT(jwt, pubKey, 'ES256');
    const now = Date.now() / 1000;
    const kid = v.header && v.header.kid;
    if (kid) stats.jwtsByKey[kid] = (stats.jwtsByKey[kid] || 0) + 1;
    if (!v.ok || !v.header || !v.claims || !keys.has(`${v.claims.iss}:${kid}`)) verdict = 'InvalidProviderToken';
    else if (refusedKey && kid === refusedKey) verdict = 'InvalidProviderToken';
    else if (typeof v.claims.iat !== 'number' || v.claims.iat > now + 60) verdict = 'InvalidProviderToken';
    else verdict = null;
    if (verdict) { stats.badJWTs++; problem('jwt: ' + (v.why || 'kid/iss/iat mismatch')); }
    jwtCache.set(jwt, verdict);
    if (!verdict && now - jwtCache.iatOf(jwt) > 3600) return 'ExpiredProviderToken';
  } else if (verdict === null && Date.now() / 1000 - jwtCache.iatOf(jwt) > 3600) {
    return 'ExpiredProviderToken';
  }
  return verdict;
}
jwtCache.iatOf = (jwt) => {
  try { return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url')).iat; } catch (e) { return 0; }
};

// The key id a request's JWT names (unverified: for counting only).
function keyOf(auth) {
  try { return JSON.parse(Buffer.from(auth.slice(7).split('.')[0], 'base64url')).kid; } catch (e) { return null; }
}

// Each push type's topic: the bundle id, or the bundle id with Apple's suffix for the type.
const topicSuffix = { alert: '', background: '', voip: '.voip', location: '.location-query', complication: '.complication',
  fileprovider: '.pushkit.fileprovider', mdm: '', liveactivity: '.push-type.liveactivity', pushtotalk: '.voip-ptt',
  widgets: '.push-type.widgets' };
const pushTypes = new Set(Object.keys(topicSuffix));

// What the device would drop (Apple answers 200 and the notification goes nowhere: "Unable to
// decode content state"), answered here as 400 PayloadShape so that a test sees it; null when fine.
function shapeProblem(pushType, p, priority) {
  const aps = p.aps;
  if (typeof aps !== 'object' || aps === null || Array.isArray(aps)) return 'aps is not an object';
  const alerting = aps.alert !== undefined || aps.sound !== undefined || aps.badge !== undefined;
  if (p.secureId !== undefined) {
    if (typeof p.secureId !== 'string' || !/^[A-Za-z0-9_-]{22,}$/.test(p.secureId)) return 'secureId is not an id';
    if (pushType === 'background') {
      if (priority !== '5') return 'secure background push not at priority 5';
      if (aps['content-available'] !== 1 || alerting || aps['mutable-content'] !== undefined) return 'secure background push without content-available: 1 alone';
    } else if (pushType === 'alert') {
      if (aps['mutable-content'] !== 1 || typeof aps.alert !== 'object' || aps.alert === null || typeof aps.alert.body !== 'string') return 'secure alert without mutable-content: 1 and an alert body';
    } else {
      return 'secureId in a ' + pushType + ' push';
    }
  }
  switch (pushType) {
    case 'background':
      if (aps['content-available'] !== 1) return 'background without content-available: 1';
      if (alerting) return 'background with alert, sound or badge';
      return null;
    case 'widgets':
      if (aps['content-changed'] !== true) return 'widgets without content-changed: true';
      return null;
    case 'liveactivity': {
      const ev = aps.event;
      if (!['start', 'update', 'end'].includes(ev)) return 'liveactivity without event start|update|end';
      if (!Number.isInteger(aps.timestamp)) return 'liveactivity without an integer timestamp';
      const state = aps['content-state'];
      if ((ev === 'start' || ev === 'update') && (typeof state !== 'object' || state === null || Array.isArray(state))) return ev + ' without content-state';
      if (aps['dismissal-date'] !== undefined && ev !== 'end') return 'dismissal-date outside end';
      for (const k of ['stale-date', 'dismissal-date']) if (aps[k] !== undefined && !Number.isInteger(aps[k])) return k + ' not UNIX seconds';
      if (ev === 'start' && (typeof aps['attributes-type'] !== 'string' || typeof aps.attributes !== 'object' || aps.alert === undefined)) return 'start without attributes-type, attributes and alert';
      if (ev !== 'start' && (aps['attributes-type'] !== undefined || aps.attributes !== undefined)) return 'attributes outside start';
      return null;
    }
    default:
      return null;
  }
}

// What Apple checks before looking at the token's state; returns [status, reason] or null.
function validate(h, token, body) {
  if (h[':method'] !== 'POST') return [405, 'MethodNotAllowed'];
  if (token === null) return [404, 'BadPath'];
  if (!/^[0-9a-f]{64,200}$/.test(token) || token.length % 2) return [400, 'BadDeviceToken'];
  const auth = checkJWT(h['authorization']);
  if (auth) return [403, auth];
  if (!h['apns-topic']) return [400, 'MissingTopic'];
  // The bundle id is the topic less the push type's suffix; a token of one kind answers only to
  // its push type's topic (a VoIP token under the bundle id is not for that topic).
  const pushTypeOf = h['apns-push-type'] || 'alert';
  const suffix = topicSuffix[pushTypeOf];
  const bundle = suffix !== undefined && h['apns-topic'].endsWith(suffix) ? h['apns-topic'].slice(0, h['apns-topic'].length - suffix.length) : h['apns-topic'];
  if (!topics.has(bundle)) return [400, 'DeviceTokenNotForTopic'];
  if (disallowed && bundle === disallowed) return [400, 'TopicDisallowed'];
  const pushType = h['apns-push-type'] || 'alert';
  if (!pushTypes.has(pushType)) return [400, 'InvalidPushType'];
  if (h['apns-topic'] !== bundle + topicSuffix[pushType]) return [400, 'DeviceTokenNotForTopic'];
  const prio = h['apns-priority'] || '10';
  if (!['1', '5', '10'].includes(prio) || (pushType === 'background' && prio === '10')) return [400, 'BadPriority'];
  if (h['apns-expiration'] !== undefined && !/^\d+$/.test(h['apns-expiration'])) return [400, 'BadExpirationDate'];
  if (h['apns-collapse-id'] !== undefined && Buffer.byteLength(h['apns-collapse-id']) > 64) return [400, 'BadCollapseId'];
  if (h['apns-id'] !== undefined && !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(h['apns-id'])) return [400, 'BadMessageId'];
  if (body.length === 0) return [400, 'PayloadEmpty'];
  if (body.length > (pushType === 'voip' ? 5120 : 4096)) return [413, 'PayloadTooLarge'];
  let payload;
  try { payload = JSON.parse(body); if (typeof payload !== 'object' || !payload.aps) return [400, 'BadPayload']; } catch (e) { return [400, 'BadPayload']; }
  const shape = shapeProblem(pushType, payload, prio);
  if (shape) { problem('shape: ' + shape); return [400, 'PayloadShape']; }
  if (authReason) return [403, authReason];
  return null;
}

// The token's scripted answer on its nth attempt (1-based).
function scripted(token, n) {
  const p = token.slice(0, 4);
  switch (p) {
    case '410a': return [410, 'Unregistered', Date.now()];
    case '410b': return [410, 'Unregistered', Date.now() - 3600 * 1000];
    case '410e': return [410, 'ExpiredToken'];
    case '400b': return [400, 'BadDeviceToken'];
    case '400d': return [400, 'DeviceTokenNotForTopic'];
    case '400e': return [400, 'NewAppleReason'];
    case '503f': return n === 1 ? [503, 'ServiceUnavailable'] : null;
    case '500f': return n === 1 ? [500, 'InternalServerError'] : null;
    case '429f': return n === 1 ? [429, 'TooManyRequests'] : null;
    case '429a': return [429, 'TooManyRequests'];
    case '503c': return n === 1 ? [503, 'Shutdown'] : null;
    case 'b16b': return [400, 'BadDeviceToken', undefined, 1 << 20];   // with a 1 MiB body
    default: return null;
  }
}

// iOS 18 broadcast channels: the channel management API (`/1/apps/<bundle>/channels`,
// `/1/apps/<bundle>/all-channels`; Apple serves it on api-manage-broadcast[.sandbox].push.apple.com,
// this fake on the same port as sends) and the broadcast send (`POST /4/broadcasts/apps/<bundle>`
// with apns-channel-id). Checked as Apple does: the JWT, the bundle id, push-type LiveActivity and a
// storage policy of 0 or 1 at creation; a known channel of that bundle, apns-push-type liveactivity,
// a required apns-expiration, the priority, the size and ActivityKit's shape (update or end) on a
// broadcast. stats.channels counts each call; stats.channels.broadcasts lists each broadcast
// (channel, event, apns-request-id).
const channels = new Map();          // channel id -> { bundle, policy }
stats.channels = { created: 0, deleted: 0, listed: 0, read: 0, live: [], broadcasts: [] };
function channelAnswer(stream, h, body) {
  const p = h[':path'] || '';
  const m = /^\/1\/apps\/([^/?]+)\/(channels|all-channels)$/.exec(p) || /^\/4\/broadcasts\/apps\/([^/?]+)$/.exec(p);
  if (!m) return false;
  const bundle = m[1], requestID = require('crypto').randomUUID();
  const reply = (status, doc, extra) => {
    stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
    if (doc && doc.reason) stats.byReason[doc.reason] = (stats.byReason[doc.reason] || 0) + 1;
    stream.respond({ ':status': status, 'apns-request-id': requestID, 'content-type': 'application/json', ...(extra || {}) });
    stream.end(doc ? JSON.stringify(doc) : undefined);
    stats.channels.live = [...channels.keys()];
    touch();
    return true;
  };
  stats.requests++; stats.answered++;
  const auth = checkJWT(h['authorization']);
  if (auth) return reply(403, { reason: auth });
  if (!topics.has(bundle)) return reply(400, { reason: 'BadTopic' });
  const method = h[':method'];
  const id = h['apns-channel-id'];
  const known = id !== undefined && channels.has(id) && channels.get(id).bundle === bundle;
  if (m[2] === 'all-channels') {
    if (method !== 'GET') return reply(405, { reason: 'MethodNotAllowed' });
    stats.channels.listed++;
    return reply(200, { channels: [...channels].filter(([, c]) => c.bundle === bundle).map(([k]) => k) });
  }
  if (m[2] === 'channels') {
    if (method === 'POST') {
      let doc;
      try { doc = JSON.parse(body); } catch (e) { return reply(400, { reason: 'BadPayload' }); }
      if (doc['push-type'] !== 'LiveActivity') return reply(400, { reason: 'InvalidPushType' });
      if (![0, 1].includes(doc['message-storage-policy'])) return reply(400, { reason: 'BadMessageStoragePolicy' });
      const newID = require('crypto').randomBytes(12).toString('base64');
      channels.set(newID, { bundle, policy: doc['message-storage-policy'] });
      stats.channels.created++;
      return reply(201, null, { 'apns-channel-id': newID });
    }
    if (id === undefined) return reply(400, { reason: 'MissingChannelId' });
    if (!known) return reply(404, { reason: 'ChannelNotRegistered' });
    if (method === 'GET') { stats.channels.read++; return reply(200, { 'message-storage-policy': channels.get(id).policy, 'push-type': 'LiveActivity' }); }
    if (method === 'DELETE') { channels.delete(id); stats.channels.deleted++; return reply(204, null); }
    return reply(405, { reason: 'MethodNotAllowed' });
  }
  // POST /4/broadcasts/apps/<bundle>
  if (method !== 'POST') return reply(405, { reason: 'MethodNotAllowed' });
  if (id === undefined) return reply(400, { reason: 'MissingChannelId' });
  if (!known) return reply(400, { reason: 'BadChannelId' });
  if (h['apns-push-type'] !== 'liveactivity') return reply(400, { reason: 'InvalidPushType' });
  if (h['apns-expiration'] === undefined || !/^\d+$/.test(h['apns-expiration'])) return reply(400, { reason: 'BadExpirationDate' });
  if (!['1', '5', '10'].includes(h['apns-priority'] || '10')) return reply(400, { reason: 'BadPriority' });
  if (body.length === 0) return reply(400, { reason: 'PayloadEmpty' });
  if (body.length > 4096) return reply(413, { reason: 'PayloadTooLarge' });
  let payload;
  try { payload = JSON.parse(body); } catch (e) { return reply(400, { reason: 'BadPayload' }); }
  const shape = shapeProblem('liveactivity', payload) || (payload.aps.event === 'start' ? 'start on a channel' : null);
  if (shape) { problem('shape: ' + shape); return reply(400, { reason: 'PayloadShape' }); }
  stats.channels.broadcasts.push({ channel: id, event: payload.aps.event, requestID });
  stats.byStatus[200] = (stats.byStatus[200] || 0) + 1;
  stats.deliveredByPushType.liveactivity = (stats.deliveredByPushType.liveactivity || 0) + 1;
  stream.respond({ ':status': 200, 'apns-request-id': requestID }, { endStream: true });
  touch();
  return true;
}

function answer(stream, h, body) {
  const session = stream.session;
  if (firstStreams && session && !session.raised) { session.raised = true; session.settings({ maxConcurrentStreams: maxStreams }); }
  if (channelAnswer(stream, h, body)) return;
  const m = /^\/3\/device\/([^/?]*)$/.exec(h[':path'] || '');
  const token = m ? m[1] : null;
  stats.requests++;
  const n = (attempts.get(token) || 0) + 1;
  attempts.set(token, n);
  const tracked = token !== null && (token in stats.perToken || Object.keys(stats.perToken).length < trackLimit);
  if (tracked) {
    stats.perToken[token] = n;
    stats.lastHeaders[token] = { topic: h['apns-topic'], pushType: h['apns-push-type'], priority: h['apns-priority'],
      expiration: h['apns-expiration'], collapseId: h['apns-collapse-id'], apnsId: h['apns-id'], bytes: body.length,
      contentType: h['content-type'], payload: (() => { try { return JSON.parse(body.toString()); } catch (e) { return null; } })() };
  }
  const kid = keyOf(h['authorization']);
  if (kid) stats.requestsByKey[kid] = (stats.requestsByKey[kid] || 0) + 1;
  const verdict = validate(h, token, body) || (outageFile && fs.existsSync(outageFile) ? [503, 'ServiceUnavailable'] : scripted(token, n));
  const apnsID = h['apns-id'] || require('crypto').randomUUID();
  stats.answered++;
  if (verdict) {
    const [status, reason, timestamp, padding] = verdict;
    stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
    stats.byReason[reason] = (stats.byReason[reason] || 0) + 1;
    const doc = timestamp === undefined ? { reason } : { reason, timestamp };
    if (padding) doc.padding = 'x'.repeat(padding);
    const headers = { ':status': status, 'apns-id': apnsID, 'content-type': 'application/json' };
    if (retryAfter && (status === 429 || status === 503)) headers['retry-after'] = retryAfter;
    stream.respond(headers);
    stream.end(JSON.stringify(doc));
  } else {
    stats.byStatus[200] = (stats.byStatus[200] || 0) + 1;
    // One notification = one device and one apns-id (pushspool's is stable per job and device,
    // so a resend after a crash is a duplicate, while the next job to the same device is not).
    const key = token + '/' + (h['apns-id'] || '');
    if (delivered.has(key)) stats.duplicateDeliveries++; else {
      delivered.add(key); stats.tokensDelivered++;
      const t = h['apns-topic'];
      stats.deliveredByTopic[t] = (stats.deliveredByTopic[t] || 0) + 1;
    }
    const type = h['apns-push-type'] || 'alert';
    stats.deliveredByPushType[type] = (stats.deliveredByPushType[type] || 0) + 1;
    try { const p = JSON.parse(body.toString()); if (typeof p.secureId === 'string' && stats.secureIds.length < trackLimit) stats.secureIds.push(p.secureId); } catch (e) {}
    stream.respond({ ':status': 200, 'apns-id': apnsID }, { endStream: true });
  }
  touch();
}

const server = http2.createSecureServer({ ...tlsOptions(), allowHTTP1: false, settings: { maxConcurrentStreams: firstStreams || maxStreams } });
// `openSessions` counts open TLS connections: after our GOAWAY, Node does not always emit the
// session's 'close' when the client goes, but the socket's 'close' always comes.
server.on('secureConnection', (socket) => {
  stats.tlsConnections++; stats.openSessions++; touch();
  if (stats.openSessions > stats.maxOpenSessions) stats.maxOpenSessions = stats.openSessions;
  socket.on('close', () => { stats.openSessions--; dirty = true; flush(); });
});
// A client that does not offer h2 in ALPN: Apple refuses it, so do we.
// Node 20 fails the handshake when ALPN has no h2 (no_application_protocol); older ones emit
// unknownProtocol after it.
server.on('unknownProtocol', (socket) => { stats.nonH2Rejected++; touch(); socket.destroy(); });
server.on('tlsClientError', (err) => {
  if (/ALPN|APPLICATION_PROTOCOL/i.test(String(err && (err.code || err.message)))) { stats.nonH2Rejected++; touch(); }
  else { problem('tls: ' + (err && err.message)); touch(); }
});
server.on('session', (session) => {
  const index = stats.sessions++;
  stats.streamsPerSession[index] = 0;
  let streamsSeen = 0, open = 0, goneAway = false, lastID = 0;
  session.on('stream', (stream, headers) => {
    // Streams above the GOAWAY's last-stream-id may still reach us (they were in the same read);
    // per RFC 9113 they are not processed: the client retries them on a new connection.
    if (goneAway && stream.id > lastID) {
      stats.refusedAfterGoaway++;
      stream.on('error', () => {});
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    streamsSeen++;
    stats.streamsPerSession[index] = streamsSeen;
    if (refuseEvery > 0 && streamsSeen % refuseEvery === 0) {
      stats.refused++; touch();
      stream.on('error', () => {});
      stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
      return;
    }
    if (resetEvery > 0 && streamsSeen % resetEvery === 0) {
      stats.resets++; touch();
      stream.on('error', () => {});
      stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    open++;
    if (open > stats.maxStreamsOpen) stats.maxStreamsOpen = open;
    // GOAWAY naming this stream as the last one: it and every earlier stream are answered; later
    // ones (already on the wire) are ignored by nghttp2, and the client must retry them elsewhere.
    const once = goawayOnce > 0 && !goawayOnceSent && streamsSeen === goawayOnce;
    if (once || (goawayEvery > 0 && !goneAway && streamsSeen % goawayEvery === 0)) {
      if (once) goawayOnceSent = true;
      goneAway = true;
      lastID = stream.id;
      stats.goawaysSent++;
      session.goaway(http2.constants.NGHTTP2_NO_ERROR, stream.id);
    }
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      const now = Date.now();
      if (stats.arrivals.first === null) stats.arrivals.first = now;
      stats.arrivals.last = now;
      const second = Math.floor(now / 1000);
      stats.arrivals.perSecond[second] = (stats.arrivals.perSecond[second] || 0) + 1;
      if (holdMs > 0) setTimeout(() => { if (!stream.closed) answer(stream, headers, Buffer.concat(chunks)); }, holdMs);
      else answer(stream, headers, Buffer.concat(chunks));
    });
    // Once every stream up to the GOAWAY's last-stream-id is answered, close the connection as
    // servers do (nghttp2 stops reading after its GOAWAY, so it would sit in CLOSE_WAIT).
    // close(), not destroy(): the last responses may still be queued for the socket.
    stream.on('close', () => { open--; if (goneAway && open === 0 && !session.closed) session.close(); });
    stream.on('error', () => {});
  });
  session.on('error', () => {});
  session.on('close', () => { stats.closedSessions++; touch(); });
});
writeState(stats);
announce(server);

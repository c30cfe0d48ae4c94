// Fake Firebase Cloud Messaging: the OAuth token endpoint (`POST /token`, Google's JWT-bearer
// grant) and HTTP v1 send (`POST /v1/projects/<id>/messages:send`) on one HTTPS server (HTTP/2,
// HTTP/1.1 allowed). It checks what Google checks and answers per registration token, scripted
// by the token's prefix:
//   gone…       404 UNREGISTERED                    invalid…    400 INVALID_ARGUMENT (not a valid token)
//   mismatch…   403 SENDER_ID_MISMATCH              thirdparty… 401 THIRD_PARTY_AUTH_ERROR
//   quota…      429 QUOTA_EXCEEDED + Retry-After: 1 once, then 200
//   flaky…      503 UNAVAILABLE once, then 200      anything else: 200 {"name": …}
// Options: --project ID (default pushspool-test), --client-email E (default the fixture's),
//   --expires-in S (access-token lifetime, default 3600),
//   --expire-first-token (sends with the first access token issued get 401 UNAUTHENTICATED, as if
//   it had expired), --token-status N (the token endpoint refuses every grant with HTTP N).
// `message.topic` and `message.condition` are accepted too (checked as FCM checks them, see
// handleServiceSend). Stats (--state FILE) are rewritten after every request.
// The Instance ID topic API (`POST /iid/v1:batchAdd` and `:batchRemove`) checks what Google
// checks (an issued bearer, `access_token_auth: true`, `to` = /topics/<valid name>, 1 to 1,000
// registration_tokens) and answers per token, scripted by the token's prefix: gone… NOT_FOUND,
// invalid… INVALID_ARGUMENT, internal… INTERNAL once then done, anything else `{}`.
// --iid-fail-first N: the first N Instance ID requests get 503 (then as above).
// --delay-ms N: every answer goes out N ms after its request came (a provider 100 ms away).
'use strict';
const http2 = require('http2');
const fs = require('fs');
const path = require('path');
const { args, tlsOptions, stateWriter, announce, verifyJWT, fixtures } = require('./common');

const a = args();
const project = a['project'] || 'pushspool-test';
const account = JSON.parse(fs.readFileSync(path.join(fixtures, 'service-account.json'), 'utf8'));
const clientEmail = a['client-email'] || account.client_email;
const expiresIn = Number(a['expires-in'] || 3600);
const expireFirst = !!a['expire-first-token'];
const tokenStatus = a['token-status'] ? Number(a['token-status']) : null;
const pubKey = fs.readFileSync(path.join(fixtures, 'service-account.pub.pem'));
// --bench: a benchmark's fake: per-token detail kept out of the state, which is written every
// 100 ms instead of after every request (100,000 sends would otherwise rewrite it 100,000 times).
const bench = !!a['bench'];
const writeEvery = stateWriter(a.state);
let lastWrite = 0;
const writeState = bench ? (s) => { const now = Date.now(); if (now - lastWrite >= 100) { lastWrite = now; writeEvery(s); } } : writeEvery;
if (bench) setInterval(() => writeEvery(stats), 100).unref();
const perToken = bench ? {} : null;
const scope = 'https://www.googleapis.com/auth/firebase.messaging';

const stats = {
  tokenRequests: 0, tokensIssued: 0, badGrants: 0, sends: 0, byStatus: {}, authFailures: 0,
  delivered: 0, duplicateDeliveries: 0, invalidRequests: 0, httpVersions: {}, perToken: {},
  grants: [], problems: [], serviceSends: [],
  iidRequests: 0, iidBatches: [], iidRefused: 0, subscriptions: {},
};
const iidFailFirst = Number(a['iid-fail-first'] || 0);
const iidAttempts = new Map();        // registration token -> Instance ID answers given
const issued = new Map();            // access token -> serial number (1-based)
const attempts = new Map();          // registration token -> attempts

function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

const delayMs = Number(a['delay-ms'] || 0);

function send(res, status, body, headers = {}) {
  if (delayMs > 0 && !res.delayed) {
    res.delayed = true;
    setTimeout(() => send(res, status, body, headers), delayMs);
    return;
  }
  stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
  res.writeHead(status, Object.assign({ 'content-type': 'application/json; charset=UTF-8' }, headers));
  res.end(JSON.stringify(body));
  writeState(stats);
}

function fcmError(status, grpc, message, errorCode, extra) {
  const details = [];
  if (errorCode) details.push({ '@type': 'type.googleapis.com/google.firebase.fcm.v1.FcmError', errorCode });
  if (extra) details.push(extra);
  return { error: { code: status, message, status: grpc, details } };
}

function invalid(res, why, field) {
  stats.invalidRequests++;
  problem('send: ' + why);
  const extra = field ? { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: [{ field, description: why }] } : null;
  send(res, 400, fcmError(400, 'INVALID_ARGUMENT', why, 'INVALID_ARGUMENT', extra));
}

function handleToken(req, res, body, port) {
  stats.tokenRequests++;
  const grant = { at: Date.now() / 1000 };
  stats.grants.push(grant);
  const refuse = (why) => {
    stats.badGrants++;
    grant.refused = why;
    problem('token: ' + why);
    send(res, 400, { error: 'invalid_grant', error_description: why });
  };
  if (req.method !== 'POST') return refuse('method ' + req.method);
  if (!String(req.headers['content-type'] || '').startsWith('application/x-www-form-urlencoded')) {
    return refuse('content-type ' + req.headers['content-type']);
  }
  if (tokenStatus) {
    stats.badGrants++;
    return send(res, tokenStatus, { error: 'invalid_grant', error_description: 'Invalid JWT Signature.' });
  }
  const form = new URLSearchParams(body.toString('utf8'));
  if (form.get('grant_type') !== 'urn:ietf:params:oauth:grant-type:jwt-bearer') return refuse('grant_type ' + form.get('grant_type'));
  const v = verifyJWT(form.get('assertion') || '', pubKey, 'RS256');
  if (!v.ok) return refuse('assertion: ' + v.why);
  const c = v.claims, now = Date.now() / 1000;
  const aud = `https://127.0.0.1:${port}/token`;
  if (v.header.typ !== undefined && v.header.typ !== 'JWT') return refuse('typ ' + v.header.typ);
  if (c.iss !== clientEmail) return refuse('iss ' + c.iss);
  if (typeof c.scope !== 'string' || !c.scope.split(' ').includes(scope)) return refuse('scope ' + c.scope);
  if (c.aud !== aud) return refuse('aud ' + c.aud);
  if (!Number.isInteger(c.iat) || Math.abs(c.iat - now) > 300) return refuse('iat ' + c.iat);
  if (!Number.isInteger(c.exp) || c.exp <= c.iat || c.exp - c.iat > 3600) return refuse('exp ' + c.exp);
  const token = `ya29.fake-${++stats.tokensIssued}-${Math.random().toString(36).slice(2)}`;
  issued.set(token, stats.tokensIssued);
  grant.issued = stats.tokensIssued;
  send(res, 200, { access_token: token, expires_in: expiresIn, token_type: 'Bearer' });
}

function isStringMap(o) {
  return o && typeof o === 'object' && !Array.isArray(o) && Object.values(o).every((x) => typeof x === 'string');
}

function handleSend(req, res, body) {
  stats.sends++;
  const auth = String(req.headers['authorization'] || '');
  const bearer = auth.startsWith('Bearer ') ? auth.slice(7) : null;
  const serial = bearer && issued.get(bearer);
  if (!serial || (expireFirst && serial === 1)) {
    stats.authFailures++;
    return send(res, 401, fcmError(401, 'UNAUTHENTICATED',
      'Request had invalid authentication credentials. Expected OAuth 2 access token.', null));
  }
  if (!String(req.headers['content-type'] || '').startsWith('application/json')) return invalid(res, 'content-type ' + req.headers['content-type']);
  let doc;
  try { doc = JSON.parse(body.toString('utf8')); } catch (e) { return invalid(res, 'body is not JSON'); }
  if (!doc || typeof doc !== 'object' || !doc.message || typeof doc.message !== 'object') return invalid(res, 'no message object');
  for (const k of Object.keys(doc)) if (k !== 'message' && k !== 'validate_only') return invalid(res, 'unknown field ' + k);
  const m = doc.message;
  const targets = ['token', 'topic', 'condition'].filter((k) => m[k] !== undefined);
  if (targets.length !== 1) return invalid(res, 'target must be exactly one of token, topic, condition', 'message.token');
  if (targets[0] !== 'token') return handleServiceSend(res, m, targets[0]);
  if (typeof m.token !== 'string') return invalid(res, 'target must be exactly one token', 'message.token');
  const { token, ...rest } = m;
  const size = Buffer.byteLength(JSON.stringify(rest));
  if (size > 4096) return invalid(res, `message too big (${size} bytes)`);
  if (m.data !== undefined && !isStringMap(m.data)) return invalid(res, 'data values must be strings', 'message.data');
  if (m.notification !== undefined && !isStringMap(m.notification)) return invalid(res, 'notification fields must be strings', 'message.notification');
  if (m.android !== undefined) {
    const an = m.android;
    if (an.ttl !== undefined && !/^\d+(\.\d{1,9})?s$/.test(an.ttl)) return invalid(res, 'android.ttl ' + an.ttl, 'message.android.ttl');
    if (an.priority !== undefined && !['NORMAL', 'HIGH', 'normal', 'high'].includes(an.priority)) return invalid(res, 'android.priority ' + an.priority);
    if (an.data !== undefined && !isStringMap(an.data)) return invalid(res, 'android.data values must be strings');
  }
  const n = (attempts.get(token) || 0) + 1;
  attempts.set(token, n);
  const detail = perToken || stats.perToken;
  const t = detail[token] = detail[token] || { attempts: 0, statuses: [], times: [] };
  t.attempts = n;
  t.times.push(Date.now() / 1000);
  const answer = (status, bodyObj, headers) => { t.statuses.push(status); send(res, status, bodyObj, headers); };
  if (token.startsWith('gone')) return answer(404, fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', 'UNREGISTERED'));
  if (token.startsWith('invalid')) return answer(400, fcmError(400, 'INVALID_ARGUMENT', 'The registration token is not a valid FCM registration token', 'INVALID_ARGUMENT'));
  if (token.startsWith('mismatch')) return answer(403, fcmError(403, 'PERMISSION_DENIED', 'SenderId mismatch', 'SENDER_ID_MISMATCH'));
  if (token.startsWith('thirdparty')) return answer(401, fcmError(401, 'UNAUTHENTICATED', 'Auth error from APNS or Web Push Service', 'THIRD_PARTY_AUTH_ERROR'));
  if (token.startsWith('quota') && n === 1) return answer(429, fcmError(429, 'RESOURCE_EXHAUSTED', 'Quota exceeded', 'QUOTA_EXCEEDED'), { 'retry-after': '1' });
  if (token.startsWith('flaky') && n === 1) return answer(503, fcmError(503, 'UNAVAILABLE', 'The service is currently unavailable.', 'UNAVAILABLE'));
  if (t.statuses.includes(200)) stats.duplicateDeliveries++;
  stats.delivered++;
  t.message = rest;
  answer(200, { name: `projects/${project}/messages/0:${Date.now()}%${stats.delivered}` });
}

// A topic or condition send: one request that FCM fans out. The topic name is checked as FCM
// does ([a-zA-Z0-9-_.~%]{1,900}, no /topics/ prefix), the condition's syntax and its at most 5
// topics too. stats.serviceSends records each one with the message name answered.
const topicName = /^[a-zA-Z0-9\-_.~%]{1,900}$/;
function conditionTopics(c) {
  const re = /\s*(!?\s*\(*)\s*(?:'([^']*)'|"([^"]*)")\s+in\s+topics\s*(\)*)\s*(&&|\|\||$)/y;
  const topics = [];
  let depth = 0, at = 0;
  while (at < c.length) {
    re.lastIndex = at;
    const m = re.exec(c);
    if (!m || m[0].length === 0) return null;
    const name = m[2] !== undefined ? m[2] : m[3];
    if (!topicName.test(name)) return null;
    depth += (m[1].match(/\(/g) || []).length - m[4].length;
    if (depth < 0) return null;
    topics.push(name);
    at = re.lastIndex;
    if (!m[5]) break;
  }
  return depth === 0 && at === c.length ? topics : null;
}
function handleServiceSend(res, m, kind) {
  const value = m[kind];
  if (typeof value !== 'string') return invalid(res, kind + ' must be a string', 'message.' + kind);
  if (kind === 'topic' && !topicName.test(value)) return invalid(res, 'invalid topic ' + value, 'message.topic');
  if (kind === 'condition') {
    const topics = conditionTopics(value);
    if (!topics) return invalid(res, 'invalid condition ' + value, 'message.condition');
    if (topics.length > 5) return invalid(res, 'condition with ' + topics.length + ' topics', 'message.condition');
  }
  const { [kind]: _, ...rest } = m;
  const size = Buffer.byteLength(JSON.stringify(rest));
  if (size > 4096) return invalid(res, `message too big (${size} bytes)`);
  stats.delivered++;
  const name = `projects/${project}/messages/${Date.now()}${stats.delivered}`;
  stats.serviceSends.push({ kind, value, name, message: rest });
  send(res, 200, { name });
}

// Instance ID batch (un)subscription. Google's errors for the whole request are
// `{"error": "<reason>"}` with an HTTP status; per-token ones sit in `results`, in order.
function handleIID(req, res, body, method) {
  stats.iidRequests++;
  const refuse = (status, why) => {
    stats.iidRefused++;
    problem('iid: ' + why);
    send(res, status, { error: why });
  };
  const auth = String(req.headers['authorization'] || '');
  const bearer = auth.startsWith('Bearer ') ? auth.slice(7) : null;
  if (!bearer || !issued.get(bearer)) return refuse(401, 'Unauthorized: no valid OAuth bearer');
  if (String(req.headers['access_token_auth'] || '') !== 'true') return refuse(401, 'Unauthorized: access_token_auth header missing');
  if (!String(req.headers['content-type'] || '').startsWith('application/json')) return refuse(400, 'content-type ' + req.headers['content-type']);
  if (stats.iidRequests <= iidFailFirst) return send(res, 503, { error: 'Service Unavailable' });
  let doc;
  try { doc = JSON.parse(body.toString('utf8')); } catch (e) { return refuse(400, 'InvalidParameters: body is not JSON'); }
  const to = doc && doc.to;
  if (typeof to !== 'string' || !to.startsWith('/topics/') || !topicName.test(to.slice(8))) return refuse(400, 'InvalidParameters: to ' + to);
  const tokens = doc.registration_tokens;
  if (!Array.isArray(tokens) || tokens.length === 0 || !tokens.every((t) => typeof t === 'string' && t.length > 0)) {
    return refuse(400, 'InvalidParameters: registration_tokens');
  }
  if (tokens.length > 1000) return refuse(400, 'InvalidParameters: ' + tokens.length + ' registration_tokens, at most 1000');
  for (const k of Object.keys(doc)) if (k !== 'to' && k !== 'registration_tokens') return refuse(400, 'InvalidParameters: unknown field ' + k);
  const topic = to.slice(8);
  const members = new Set(stats.subscriptions[topic] || []);
  const results = tokens.map((t) => {
    const n = (iidAttempts.get(t) || 0) + 1;
    iidAttempts.set(t, n);
    if (t.startsWith('gone')) return { error: 'NOT_FOUND' };
    if (t.startsWith('invalid')) return { error: 'INVALID_ARGUMENT' };
    if (t.startsWith('internal') && n === 1) return { error: 'INTERNAL' };
    if (method === 'batchAdd') members.add(t); else members.delete(t);
    return {};
  });
  stats.subscriptions[topic] = [...members];
  stats.iidBatches.push({ method, topic, count: tokens.length, errors: results.filter((r) => r.error).length });
  send(res, 200, { results });
}

const server = http2.createSecureServer(Object.assign(tlsOptions(), { allowHTTP1: true }));
server.on('request', (req, res) => {
  stats.httpVersions[req.httpVersion] = (stats.httpVersions[req.httpVersion] || 0) + 1;
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = req.url.split('?')[0];
    if (url === '/token') return handleToken(req, res, body, server.address().port);
    if (req.method === 'POST' && url === `/v1/projects/${project}/messages:send`) return handleSend(req, res, body);
    if (req.method === 'POST' && (url === '/iid/v1:batchAdd' || url === '/iid/v1:batchRemove')) return handleIID(req, res, body, url.slice(8));
    problem('unexpected ' + req.method + ' ' + url);
    send(res, 404, fcmError(404, 'NOT_FOUND', 'Requested entity was not found.', null));
  });
});
writeState(stats);
announce(server);

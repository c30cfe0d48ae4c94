// A fake Azure Notification Hubs namespace with one hub, for pushspool's integration tests.
// HTTPS (HTTP/2 or HTTP/1.1 by ALPN) on 127.0.0.1. It checks what the real hub checks — the SAS
// signature byte for byte on every call, the documented api-versions only, format, content type,
// payload limits, the installation schema — keeps the installations it is given, and evaluates
// each send's tag expression against them, recording which installations it reached.
//
// Options:
//   --hub NAME            hub name (default myhub)
//   --key-name NAME       SharedAccessKeyName expected in `skn` (default DefaultFullSharedAccessSignature)
//   --key KEY             SharedAccessKey the signature must be made with (default testkey)
//   --quota N             answer the first N correctly signed sends 403 "quota exceeded" (Retry-After: 1)
//   --max-entity BYTES    bodies above this get 413 (default 65536, the hub's entity limit)
//   --fail STATUS:N       answer the first N correctly signed sends STATUS (429/5xx) with Retry-After: 1
//   --fail-installations STATUS:N   the same for installation PUT/DELETE
//   --hang-installations  never answer installation PUT/DELETE (a hub that hangs); counted in
//                         state.installationOps.hung
//
// Answers: sends 201 + Location (notification id) + TrackingId; installations PUT 200, DELETE 204
// (404 when there is none); 401 for a bad/expired SAS; 400 BadApiVersion for an api-version the
// hub does not document; 403 quota; 403 "payload too large" above a platform's limit; 413 above
// --max-entity; 400 for a bad format/content type/body/installation; 404 for another path.
'use strict';
const http2 = require('http2');
const crypto = require('crypto');
const { args, tlsOptions, stateWriter, announce } = require('./common');

const opt = args();
const hub = opt.hub || 'myhub';
const keyName = opt['key-name'] || 'DefaultFullSharedAccessSignature';
const key = opt.key || 'testkey';
let quotaLeft = Number(opt.quota || 0);
const maxEntity = Number(opt['max-entity'] || 65536);
const [failStatus, failCount] = String(opt.fail || '0:0').split(':').map(Number);
let failLeft = failCount;
const [failInstStatus, failInstCount] = String(opt['fail-installations'] || '0:0').split(':').map(Number);
let failInstLeft = failInstCount;
const hangInstallations = Boolean(opt['hang-installations']);
const writeNow = stateWriter(opt.state);
// Installation traffic comes by the thousand: its state is written at most every 20 ms (tests
// poll for it); sends are written before they are answered.
let pendingWrite = null;
function writeSoon() {
  if (pendingWrite) return;
  pendingWrite = setTimeout(() => { pendingWrite = null; writeNow(state); }, 20);
}
function writeState() {
  if (pendingWrite) { clearTimeout(pendingWrite); pendingWrite = null; }
  writeNow(state);
}

// api-versions Microsoft documents for these operations: the REST reference's 2015-01 and the
// official .NET SDK's 2020-06. The portal's 2023-10-01-preview is refused, as real hubs do.
const documentedVersions = ['2015-01', '2020-06'];
// Installation platforms (case-insensitive on the wire) and the send format that reaches each.
const installationPlatforms = ['apns', 'wns', 'mpns', 'adm', 'baidu', 'gcm', 'fcmv1'];
const formatPlatform = { apple: 'apns', fcmV1: 'fcmv1', gcm: 'gcm', windows: 'wns' };
const tagRe = /^[A-Za-z0-9_@#.:-]{1,120}$/;

// Tag expressions: ! binds tightest, then &&, then ||; parentheses. Returns {eval, tags, onlyOr}.
function parseTags(text) {
  const tokens = text.match(/&&|\|\||!|\(|\)|[A-Za-z0-9_@#.:-]+|\S/g) || [];
  let i = 0;
  const tags = [];
  let onlyOr = true;
  const peek = () => tokens[i];
  function primary() {
    const t = tokens[i++];
    if (t === '!') { onlyOr = false; const e = primary(); return (s) => !e(s); }
    if (t === '(') { const e = or(); if (tokens[i++] !== ')') throw new Error('missing )'); return e; }
    if (t === undefined || !tagRe.test(t)) throw new Error('bad tag ' + t);
    tags.push(t);
    return (s) => s.has(t);
  }
  function and() {
    let e = primary();
    while (peek() === '&&') { i++; onlyOr = false; const l = e, r = primary(); e = (s) => l(s) && r(s); }
    return e;
  }
  function or() {
    let e = and();
    while (peek() === '||') { i++; const l = e, r = and(); e = (s) => l(s) || r(s); }
    return e;
  }
  const e = or();
  if (i !== tokens.length) throw new Error('trailing ' + tokens[i]);
  return { eval: e, tags, onlyOr };
}

// Platform payload limits the hub enforces (ANH caps APNs at 4 KB, VoIP included).
const limits = { apple: 4096, fcmV1: 4096, gcm: 4096, windows: 5000 };
const jsonType = 'application/json;charset=utf-8';

const state = {
  requests: [], statuses: {}, sasTokens: [], sasFailures: [], problems: [],
  installations: {}, installationOps: { put: 0, delete: 0, refused: 0, failed: 0 }, installationProblems: [],
};

function expectedSR(port) {
  return encodeURIComponent(`https://127.0.0.1:${port}/${hub}`.toLowerCase()).toLowerCase();
}

// Returns null when the SAS is valid, else why not.
function checkSAS(auth, port) {
  const prefix = 'SharedAccessSignature ';
  if (!auth || !auth.startsWith(prefix)) return 'no SharedAccessSignature';
  const fields = {};
  for (const part of auth.slice(prefix.length).split('&')) {
    const eq = part.indexOf('=');
    if (eq < 0) return 'malformed field';
    fields[part.slice(0, eq)] = part.slice(eq + 1);
  }
  const order = auth.slice(prefix.length).split('&').map((p) => p.split('=')[0]).join(',');
  if (order !== 'sr,sig,se,skn') return 'fields not sr,sig,se,skn: ' + order;
  if (fields.sr !== expectedSR(port)) return 'sr is not the encoded, lowercased resource URI: ' + fields.sr;
  if (fields.skn !== keyName) return 'wrong key name';
  if (!/^[0-9]+$/.test(fields.se)) return 'se is not integer seconds';
  const now = Date.now() / 1000;
  const se = Number(fields.se);
  if (se <= now) return 'ExpiredToken';
  if (se > now + 2 * 86400) return 'se too far in the future';
  const sig = crypto.createHmac('sha256', key).update(fields.sr + '\n' + fields.se).digest('base64');
  if (fields.sig !== encodeURIComponent(sig)) return 'signature mismatch';
  return null;
}

function errorBody(code, detail) {
  return `<Error><Code>${code}</Code><Detail>${detail}</Detail></Error>`;
}

const server = http2.createSecureServer({ ...tlsOptions(), allowHTTP1: true }, (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const port = server.address().port;
    const url = new URL(req.url, `https://127.0.0.1:${port}`);
    const h = req.headers;
    const format = h['servicebusnotification-format'];
    const record = {
      method: req.method, path: url.pathname, apiVersion: url.searchParams.get('api-version'),
      httpVersion: req.httpVersion, format, contentType: h['content-type'] || null,
      tags: h['servicebusnotification-tags'] === undefined ? null : h['servicebusnotification-tags'],
      wnsType: h['x-wns-type'] || null, body: body.toString('utf8'), bodyBytes: body.length,
      apns: {}, status: 0, at: Date.now(),
    };
    for (const k of ['apns-push-type', 'apns-priority', 'apns-expiration', 'apns-collapse-id', 'servicebusnotification-apns-expiry']) {
      if (h[k] !== undefined) record.apns[k] = h[k];
    }
    const headers = {};
    const answer = (status, detail) => {
      record.status = status;
      if (detail) record.detail = detail;
      state.requests.push(record);
      state.statuses[status] = (state.statuses[status] || 0) + 1;
      writeState(state);
      res.writeHead(status, { 'content-type': 'application/xml;charset=utf-8', ...headers });
      res.end(status >= 400 ? errorBody(status, detail) : '');
    };

    const installationPrefix = `/${hub}/installations/`;
    const isInstallation = url.pathname.startsWith(installationPrefix) && url.pathname.length > installationPrefix.length;
    if (!isInstallation && (req.method !== 'POST' || url.pathname !== `/${hub}/messages/`)) return answer(404, 'No message branch at this URI.');
    const auth = h.authorization;
    const why = checkSAS(auth, port);
    if (why) { state.sasFailures.push(why); return isInstallation ? answerInstallation(res, 401, why) : answer(401, why); }
    if (!state.sasTokens.includes(auth)) state.sasTokens.push(auth);
    if (!documentedVersions.includes(record.apiVersion)) {
      const detail = `BadApiVersion: the api-version '${record.apiVersion}' is not supported.`;
      return isInstallation ? answerInstallation(res, 400, detail) : answer(400, detail);
    }
    if (isInstallation) return installation(req, res, decodeURIComponent(url.pathname.slice(installationPrefix.length)), body);
    if (!(format in limits)) return answer(400, 'Invalid ServiceBusNotification-Format.');
    const raw = format === 'windows' && record.wnsType === 'wns/raw';
    const wantType = format === 'windows' ? (raw ? 'application/octet-stream' : 'application/xml') : jsonType;
    if (record.contentType !== wantType) return answer(400, `Content-Type ${record.contentType} for ${format}`);
    if (format === 'windows' && !/^wns\/(toast|tile|badge|raw)$/.test(record.wnsType || '')) return answer(400, 'X-WNS-Type is required.');
    if (body.length > maxEntity) return answer(413, `The request entity of ${body.length} bytes is too large.`);
    if (body.length > limits[format]) return answer(403, `The notification payload is too large (${body.length} > ${limits[format]} bytes).`);
    if (format !== 'windows') {
      let doc;
      try { doc = JSON.parse(record.body); } catch (e) { return answer(400, 'The payload is not valid JSON.'); }
      if (format === 'apple' && !doc.aps) return answer(400, 'apple payload without aps');
      if (format === 'fcmV1' && (!doc.message || doc.message.token || doc.message.topic || doc.message.condition)) {
        return answer(400, 'fcmV1 payload must be {"message":{...}} without a target');
      }
    } else if (!raw && !record.body.startsWith('<')) {
      return answer(400, 'windows payload is not XML');
    }
    // Which installations this send reaches: its format's platform, matching the expression.
    const platform = formatPlatform[format];
    let expr = null;
    if (record.tags !== null) {
      try { expr = parseTags(record.tags); } catch (e) { return answer(400, `Invalid tag expression: ${e.message}`); }
      const limit = expr.onlyOr ? 20 : 6;
      if (expr.tags.length > limit) return answer(400, `The tag expression has ${expr.tags.length} tags; the limit is ${limit}.`);
    }
    if (failLeft > 0) {
      failLeft--;
      headers['retry-after'] = '1';
      return answer(failStatus, failStatus === 429 ? 'Too many requests.' : 'The service is busy.');
    }
    if (quotaLeft > 0) {
      quotaLeft--;
      headers['retry-after'] = '1';
      return answer(403, 'Quota exceeded for this period.');
    }
    record.reached = Object.values(state.installations)
      .filter((i) => i.platform.toLowerCase() === platform && (expr === null || expr.eval(new Set(i.tags))))
      .map((i) => i.installationId).sort();
    const id = crypto.randomUUID().replace(/-/g, '');
    record.notificationId = id;
    record.trackingId = crypto.randomUUID();
    headers.location = `https://127.0.0.1:${port}/${hub}/messages/${id}?api-version=2015-04`;
    headers.trackingid = record.trackingId;
    return answer(201);
  });
});

function answerInstallation(res, status, detail) {
  state.statuses[status] = (state.statuses[status] || 0) + 1;
  if (status >= 400) state.installationProblems.push(`${status} ${detail}`);
  writeSoon();
  res.writeHead(status, status >= 400 ? { 'content-type': 'application/xml;charset=utf-8' } : {});
  res.end(status >= 400 ? errorBody(status, detail) : '');
}

// PUT/DELETE /<hub>/installations/<id>: the installation schema as the hub validates it.
function installation(req, res, id, body) {
  if (hangInstallations) {
    // Read and never answered: the connection stays open until the client gives up.
    state.installationOps.hung = (state.installationOps.hung || 0) + 1;
    writeSoon();
    return;
  }
  if (failInstLeft > 0) {
    failInstLeft--;
    state.installationOps.failed++;
    res.setHeader('retry-after', '1');
    return answerInstallation(res, failInstStatus, 'The service is busy.');
  }
  if (req.method === 'DELETE') {
    if (!state.installations[id]) return answerInstallation(res, 404, 'Installation not found.');
    delete state.installations[id];
    state.installationOps.delete++;
    return answerInstallation(res, 204);
  }
  if (req.method !== 'PUT') return answerInstallation(res, 405, 'Method not allowed.');
  const refuse = (detail) => { state.installationOps.refused++; return answerInstallation(res, 400, detail); };
  if (!/^application\/json/.test(req.headers['content-type'] || '')) return refuse('Content-Type must be application/json.');
  let doc;
  try { doc = JSON.parse(body.toString('utf8')); } catch (e) { return refuse('The installation is not valid JSON.'); }
  const known = ['installationId', 'platform', 'pushChannel', 'tags', 'templates', 'userId', 'expirationTime', 'pushVariables'];
  for (const k of Object.keys(doc)) if (!known.includes(k)) return refuse(`Unknown installation property ${k}.`);
  if (doc.installationId !== id) return refuse('installationId must equal the id in the URI.');
  if (typeof doc.platform !== 'string' || !installationPlatforms.includes(doc.platform.toLowerCase())) return refuse(`Invalid platform ${doc.platform}.`);
  if (typeof doc.pushChannel !== 'string' || doc.pushChannel.length === 0) return refuse('pushChannel is required.');
  const p = doc.platform.toLowerCase();
  if (p === 'apns' && !/^[0-9a-fA-F]{64,}$/.test(doc.pushChannel)) return refuse('pushChannel is not an APNs device token.');
  if (p === 'wns' && !/^https:\/\//.test(doc.pushChannel)) return refuse('pushChannel is not a WNS channel URI.');
  const tags = doc.tags === undefined ? [] : doc.tags;
  if (!Array.isArray(tags) || tags.length > 60 || !tags.every((t) => typeof t === 'string' && tagRe.test(t))) return refuse('Invalid tags.');
  state.installations[id] = { installationId: id, platform: doc.platform, pushChannel: doc.pushChannel, tags };
  state.installationOps.put++;
  return answerInstallation(res, 200);
}

writeState(state);
announce(server);

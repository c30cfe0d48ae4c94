// A fake Azure Notification Hubs namespace with one hub, for pushspool's integration tests.
// HTTPS (HTTP/2 or HTTP/1.1 by ALPN) on 127.0.0.1. It checks what the real hub checks on a
// native send — the SAS signature byte for byte, format, content type, payload limits — and
// records every request in the state file.
//
// Options:
//   --hub NAME            hub name (default myhub)
//   --key-name NAME       SharedAccessKeyName expected in `skn` (default DefaultFullSharedAccessSignature)
//   --key KEY             SharedAccessKey the signature must be made with (default testkey)
//   --quota N             answer the first N correctly signed sends 403 "quota exceeded" (Retry-After: 1)
//   --max-entity BYTES    bodies above this get 413 (default 65536, the hub's entity limit)
//   --fail STATUS:N       answer the first N correctly signed sends STATUS (429/5xx) with Retry-After: 1
//
// Answers: 201 + Location (notification id) + TrackingId; 401 for a bad/expired SAS; 403 quota;
// 403 "payload too large" above a platform's limit; 413 above --max-entity; 400 for a bad
// format/content type/body; 404 for another path.
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
const writeState = stateWriter(opt.state);

// Platform payload limits the hub enforces (ANH caps APNs at 4 KB, VoIP included).
const limits = { apple: 4096, fcmV1: 4096, gcm: 4096, windows: 5000 };
const jsonType = 'application/json;charset=utf-8';

const state = { requests: [], statuses: {}, sasTokens: [], sasFailures: [], problems: [] };

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

    if (req.method !== 'POST' || url.pathname !== `/${hub}/messages/`) return answer(404, 'No message branch at this URI.');
    const auth = h.authorization;
    const why = checkSAS(auth, port);
    if (why) { state.sasFailures.push(why); return answer(401, why); }
    if (!state.sasTokens.includes(auth)) state.sasTokens.push(auth);

    const wantVersion = opt['api-version'] || (format === 'fcmV1' ? '2023-10-01-preview' : '2015-01');
    if (record.apiVersion !== wantVersion) return answer(400, `api-version ${record.apiVersion} for format ${format}`);
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
    const id = crypto.randomUUID().replace(/-/g, '');
    record.notificationId = id;
    record.trackingId = crypto.randomUUID();
    headers.location = `https://127.0.0.1:${port}/${hub}/messages/${id}?api-version=2015-04`;
    headers.trackingid = record.trackingId;
    return answer(201);
  });
});

writeState(state);
announce(server);

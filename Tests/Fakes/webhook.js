// Fake webhook receiver: checks every POST's `Pushspool-Signature: t=<unix>,v1=<hex HMAC-SHA256
// (secret, "<t>.<body>")>` as a real receiver must (HMAC compared in constant time, `t` at most
// --tolerance seconds (default 300) away from now) and records the events it accepted.
// HTTPS with the test certificate (HTTP/1.1), or plain HTTP with --plain.
//   --secret S        the shared secret (required)
//   --fail N          the first N requests get 500
//   --throttle N      the next N requests get 429 with Retry-After: --retry-after (default 1)
//   --unavailable N   the next N requests get 503 with Retry-After: --retry-after
// Stats (--state FILE), rewritten after every request: {requests, byStatus, accepted, rejected,
// problems, events: [{id, type, data}], counts: {id: n}, firstRetryGapMs, times: [ms], raw: [{signature, body}] (last 5)}.
'use strict';
const http = require('http');
const https = require('https');
const crypto = require('crypto');
const { args, tlsOptions, stateWriter, announce } = require('./common');

const a = args();
const writeState = stateWriter(a.state);
const secret = String(a.secret || '');
const tolerance = Number(a.tolerance || 300);
let failLeft = Number(a.fail || 0);
let throttleLeft = Number(a.throttle || 0);
let unavailableLeft = Number(a.unavailable || 0);
const retryAfter = String(a['retry-after'] || '1');
const stats = { requests: 0, byStatus: {}, accepted: 0, rejected: 0, problems: [], events: [], counts: {}, times: [], raw: [] };

function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

function verify(header, body) {
  const parts = {};
  for (const p of String(header || '').split(',')) { const i = p.indexOf('='); if (i > 0) parts[p.slice(0, i)] = p.slice(i + 1); }
  const t = Number(parts.t);
  if (!Number.isInteger(t)) return 'no t';
  if (Math.abs(Date.now() / 1000 - t) > tolerance) return 'stale t';
  const expected = crypto.createHmac('sha256', secret).update(t + '.').update(body).digest();
  const given = Buffer.from(String(parts.v1 || ''), 'hex');
  if (given.length !== expected.length || !crypto.timingSafeEqual(given, expected)) return 'bad signature';
  return null;
}

function handle(req, res) {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    stats.requests++;
    stats.times.push(Date.now());
    let status = 200, headers = {};
    const why = req.method !== 'POST' ? 'method ' + req.method : verify(req.headers['pushspool-signature'], body);
    if (why) {
      status = 401;
      stats.rejected++;
      problem(why);
    } else if (failLeft > 0) {
      failLeft--; status = 500;
    } else if (throttleLeft > 0) {
      throttleLeft--; status = 429; headers['Retry-After'] = retryAfter;
    } else if (unavailableLeft > 0) {
      unavailableLeft--; status = 503; headers['Retry-After'] = retryAfter;
    } else {
      try {
        const e = JSON.parse(body.toString('utf8'));
        if (!e.id || !e.type || !e.created_at || typeof e.data !== 'object') problem('event without id, type, created_at or data');
        stats.accepted++;
        stats.counts[e.id] = (stats.counts[e.id] || 0) + 1;
        stats.events.push({ id: e.id, type: e.type, data: e.data });
      } catch (err) { status = 400; problem('not JSON: ' + err.message); }
    }
    stats.raw.push({ signature: String(req.headers['pushspool-signature'] || ''), body: body.toString('utf8'), status });
    if (stats.raw.length > 5) stats.raw.shift();
    stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
    res.writeHead(status, headers);
    res.end();
    writeState(stats);
  });
}

const server = a.plain ? http.createServer(handle) : https.createServer(tlsOptions(), handle);
writeState(stats);
announce(server);

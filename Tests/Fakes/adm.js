// Fake Amazon Device Messaging: the OAuth token endpoint (`POST /auth/o2/token`, client
// credentials with scope messaging:push) and `POST /messaging/registrations/<id>/messages` on
// one HTTPS server (Node built-ins only). It checks what Amazon checks: the grant's form and
// client, the bearer, X-Amzn-Type-Version and X-Amzn-Accept-Type, a JSON body whose `data` is an
// object of strings of at most 6 KB (413 MessageTooLarge above), `expiresAfter` a number.
// Answers by registration id:
//   gone…      400 Unregistered                 invalid…   400 InvalidRegistrationId
//   old-X      200 {"registrationID": "new-X"}  (the canonical id)
//   throttle…  429 MaxRateExceeded + Retry-After: 2 once, then 200
//   flaky…     503 + Retry-After: 1 once, then 200      anything else: 200 with the id sent
//   reason-R-… 400 {"reason": R} (InvalidData, InvalidConsolidationKey, InvalidExpiration, …)
//   status-N-… HTTP N (413 MessageTooLarge every time; 500 once, then 200)
// --expire-first-token: sends with the first access token get 401 AccessTokenExpired.
// --revoked: the token endpoint refuses the client (401 invalid_client).
// Stats (--state FILE): sends per registration id with their times and statuses.
'use strict';
const https = require('https');
const { args, tlsOptions, stateWriter, announce } = require('./common');
const { clientCredentials } = require('./oauth');

const a = args();
const clientID = a['client-id'] || 'amzn1.application-oa2-client.test';
const clientSecret = a['client-secret'] || 'adm-secret';
const expireFirst = !!a['expire-first-token'];
const revoked = !!a['revoked'];
const writeState = stateWriter(a.state);

const stats = {
  tokenRequests: 0, tokensIssued: 0, badGrants: 0, sends: 0, authFailures: 0, invalidRequests: 0,
  delivered: 0, duplicateDeliveries: 0, perDevice: {}, problems: [], lastBody: null,
};
function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

function answer(res, status, json, headers = {}) {
  const body = json === null ? '' : JSON.stringify(json);
  res.writeHead(status, Object.assign({ 'content-type': 'application/json', 'content-length': Buffer.byteLength(body),
    'x-amzn-requestid': 'rq-' + stats.sends }, headers));
  res.end(body);
  writeState(stats);
}

const oauth = clientCredentials({ clientID, clientSecret, extra: { scope: 'messaging:push' }, revoked, prefix: 'Atc|adm.fake',
  answerExtra: { scope: 'messaging:push', token_type: 'bearer' }, stats, answer, problem });

function handleSend(req, res, raw, id) {
  stats.sends++;
  const d = stats.perDevice[id] = stats.perDevice[id] || { attempts: 0, statuses: [], times: [] };
  d.attempts++;
  d.times.push(Date.now() / 1000);
  const reply = (status, json, headers) => { d.statuses.push(status); answer(res, status, json, headers); };
  const serial = oauth.serial(req);
  if (!serial || (expireFirst && serial === 1)) { stats.authFailures++; return reply(401, { reason: 'AccessTokenExpired' }); }
  const bad = (reason, why) => { stats.invalidRequests++; problem(id + ': ' + why); reply(400, { reason }); };
  if (req.headers['x-amzn-type-version'] !== 'com.amazon.device.messaging.ADMMessage@1.0') return bad('InvalidType', 'X-Amzn-Type-Version');
  if (req.headers['x-amzn-accept-type'] !== 'com.amazon.device.messaging.ADMSendResult@1.0') return bad('InvalidType', 'X-Amzn-Accept-Type');
  if (!String(req.headers['content-type'] || '').startsWith('application/json')) return bad('InvalidData', 'content-type');
  let body;
  try { body = JSON.parse(raw.toString('utf8')); } catch (e) { return bad('InvalidData', 'not JSON'); }
  if (!body.data || typeof body.data !== 'object' || Array.isArray(body.data)) return bad('InvalidData', 'data');
  if (Object.values(body.data).some((v) => typeof v !== 'string')) return bad('InvalidData', 'data values must be strings');
  if (Buffer.byteLength(JSON.stringify(body.data)) > 6144) { problem(id + ': data over 6 KB'); return reply(413, { reason: 'MessageTooLarge' }); }
  if (body.expiresAfter !== undefined && !Number.isInteger(body.expiresAfter)) return bad('InvalidExpiration', 'expiresAfter');
  stats.lastBody = body;
  d.data = body.data;
  if (id.startsWith('gone')) return reply(400, { reason: 'Unregistered' });
  if (id.startsWith('invalid')) return reply(400, { reason: 'InvalidRegistrationId' });
  if (id.startsWith('throttle') && d.attempts === 1) return reply(429, { reason: 'MaxRateExceeded' }, { 'retry-after': '2' });
  if (id.startsWith('flaky') && d.attempts === 1) return reply(503, null, { 'retry-after': '1' });
  const scripted = /^(reason|status)-([A-Za-z0-9]+)-/.exec(id);
  if (scripted && scripted[1] === 'reason') return reply(400, { reason: scripted[2] });
  if (scripted && scripted[2] === '413') return reply(413, { reason: 'MessageTooLarge' });
  if (scripted && d.attempts === 1) return reply(Number(scripted[2]), { reason: 'n/a' });
  if (d.statuses.includes(200)) stats.duplicateDeliveries++;
  stats.delivered++;
  reply(200, { registrationID: id.startsWith('old-') ? 'new-' + id.slice(4) : id });
}

const server = https.createServer(tlsOptions(), (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = req.url.split('?')[0];
    if (req.method === 'POST' && url === '/auth/o2/token') return oauth.handle(req, res, body);
    const m = /^\/messaging\/registrations\/([^/]+)\/messages$/.exec(url);
    if (req.method === 'POST' && m) return handleSend(req, res, body, decodeURIComponent(m[1]));
    problem('unexpected ' + req.method + ' ' + url);
    answer(res, 404, { reason: 'NotFound' });
  });
});
writeState(stats);
announce(server);

// Fake Huawei Push Kit: the OAuth token endpoint (`POST /oauth2/v3/token`, client credentials)
// and `POST /v1/<app id>/messages:send` on one HTTPS server (Node built-ins only). It checks what
// Huawei checks: the grant's form and client, the bearer (issued here, for this app), a JSON
// body `{"validate_only", "message": {…, "token": [1 to 1,000 strings]}}` whose size without the
// tokens is at most 4,096 bytes, `data` a string, an `android.notification` with its
// `click_action`. Answers (`{"code","msg","requestId"}`, HTTP 200 unless said):
//   tokens named illegal…  listed in an 80100000 partial answer (80300007 when all are)
//   --code C               every send answered with code C (HTTP --http-status, default 200)
//   --spelling S           the partial list's member: illegal_tokens (default) or illegalTokens
//   --expire-first-token   sends with the first access token get 80200003 (token expired)
//   --revoked              the token endpoint refuses the client (401 invalid_client)
//   --busy-first N         the first N sends get HTTP 503 + Retry-After: 1
//   --delay-ms N           sends are answered after N ms
// Stats (--state FILE): sends, tokens per send, the first 100 sends' tokens and data, deliveries per token (a token delivered twice
// is counted in duplicateDeliveries), duplicate tokens within one request, problems.
'use strict';
const https = require('https');
const { args, tlsOptions, stateWriter, announce } = require('./common');
const { clientCredentials } = require('./oauth');

const a = args();
const appID = a['app-id'] || '104000001';
const clientID = a['client-id'] || '104000001';
const clientSecret = a['client-secret'] || 'hms-secret';
const code = a['code'] || null;
const httpStatus = Number(a['http-status'] || 200);
const spelling = a['spelling'] || 'illegal_tokens';
const expireFirst = !!a['expire-first-token'];
const revoked = !!a['revoked'];
let busyLeft = Number(a['busy-first'] || 0);
const delayMs = Number(a['delay-ms'] || 0);
const writeState = stateWriter(a.state);
const sendPath = `/v1/${appID}/messages:send`;

const stats = {
  tokenRequests: 0, tokensIssued: 0, badGrants: 0, sends: 0, authFailures: 0, invalidRequests: 0,
  tokensPerSend: [], delivered: 0, duplicateDeliveries: 0, duplicateInRequest: 0, illegal: 0,
  byCode: {}, problems: [], lastMessage: null, lastBodyBytes: 0, sent: [],
};
const deliveredTokens = new Map();   // token -> deliveries (kept out of the state: 100,000 of them in a benchmark)
let last = 0;
function save() { const now = Date.now(); if (now - last > 100) { last = now; writeState(stats); } }
function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

function answer(res, status, json, headers = {}) {
  const body = JSON.stringify(json);
  res.writeHead(status, Object.assign({ 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, headers));
  res.end(body);
  save();
}

const oauth = clientCredentials({ clientID, clientSecret, revoked, prefix: 'hms.fake', answerExtra: { token_type: 'Bearer' },
  stats, answer, problem });

function reply(res, c, msg, status = httpStatus) {
  stats.byCode[c] = (stats.byCode[c] || 0) + 1;
  answer(res, status, { code: c, msg, requestId: 'req-' + stats.sends });
}

function handleSend(req, res, raw) {
  stats.sends++;
  const serial = oauth.serial(req);
  if (!serial) { stats.authFailures++; return reply(res, '80200001', 'Oauth authentication error', 401); }
  if (expireFirst && serial === 1) { stats.authFailures++; return reply(res, '80200003', 'Oauth Token expired', 401); }
  const bad = (why) => { stats.invalidRequests++; problem(why); reply(res, '80100003', 'Incorrect message structure: ' + why, 400); };
  if (!String(req.headers['content-type'] || '').startsWith('application/json')) return bad('content-type');
  let body;
  try { body = JSON.parse(raw.toString('utf8')); } catch (e) { return bad('body is not JSON'); }
  if (typeof body.validate_only !== 'boolean') return bad('validate_only');
  const m = body.message;
  if (!m || typeof m !== 'object') return bad('message');
  const tokens = m.token;
  if (!Array.isArray(tokens) || tokens.some((t) => typeof t !== 'string' || !t)) return bad('token');
  if (tokens.length < 1 || tokens.length > 1000) {
    problem('token count ' + tokens.length);
    return reply(res, '80300010', 'The number of tokens is out of range');
  }
  if (new Set(tokens).size !== tokens.length) { stats.duplicateInRequest++; problem('a token twice in one request'); }
  // The size Huawei limits: the body without its tokens.
  const size = raw.length - Buffer.byteLength(JSON.stringify(tokens)) + 2;
  stats.lastBodyBytes = size;
  if (size > 4096) { problem('message body ' + size + ' bytes'); return reply(res, '80100001', 'message body too large', 400); }
  if (m.data !== undefined && typeof m.data !== 'string') return bad('data must be a string');
  if (m.android && m.android.notification && !(m.android.notification.click_action && m.android.notification.click_action.type)) {
    return bad('android.notification.click_action');
  }
  if (m.android && m.android.ttl !== undefined && !/^\d+(\.\d+)?s$/.test(m.android.ttl)) return bad('android.ttl');
  if (m.android && m.android.urgency !== undefined && !['HIGH', 'NORMAL'].includes(m.android.urgency)) return bad('android.urgency');
  stats.tokensPerSend.push(tokens.length);
  stats.lastMessage = Object.assign({}, m, { token: undefined });
  // The first sends' tokens and data, as the apps would read them.
  if (stats.sent.length < 100) stats.sent.push({ tokens, data: m.data === undefined ? null : m.data });
  if (busyLeft > 0) { busyLeft--; stats.byCode['503'] = (stats.byCode['503'] || 0) + 1; res.writeHead(503, { 'retry-after': '1', 'content-length': 0 }); res.end(); return save(); }
  if (code) return reply(res, code, 'scripted');
  const illegal = tokens.filter((t) => t.startsWith('illegal'));
  for (const t of tokens) {
    if (t.startsWith('illegal')) { stats.illegal++; continue; }
    if (deliveredTokens.has(t)) stats.duplicateDeliveries++;
    deliveredTokens.set(t, (deliveredTokens.get(t) || 0) + 1);
    stats.delivered++;
  }
  if (illegal.length === 0) return reply(res, '80000000', 'Success');
  if (illegal.length === tokens.length) return reply(res, '80300007', 'All the tokens are invalid');
  reply(res, '80100000', JSON.stringify({ success: tokens.length - illegal.length, failure: illegal.length, [spelling]: illegal }));
}

const server = https.createServer(tlsOptions(), (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = req.url.split('?')[0];
    if (req.method === 'POST' && url === '/oauth2/v3/token') return oauth.handle(req, res, body);
    if (req.method === 'POST' && url === sendPath) {
      return delayMs ? setTimeout(() => handleSend(req, res, body), delayMs) : handleSend(req, res, body);
    }
    problem('unexpected ' + req.method + ' ' + url);
    answer(res, 404, { code: '80100001', msg: 'no such path' });
  });
});
setInterval(() => writeState(stats), 100).unref();
writeState(stats);
announce(server);

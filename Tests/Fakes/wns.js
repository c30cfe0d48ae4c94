// Fake Windows Push Notification Services: the OAuth token endpoint (`POST /token`, client
// credentials) and channel endpoints (`POST /ch/<name>?token=…`) on one HTTPS HTTP/1.1 server.
// It checks what Microsoft checks (bearer token, X-WNS-Type, Content-Type, Content-Length, no
// chunked bodies or Expect, ≤ 5000 bytes, well-formed toast XML) and answers per channel name:
//   gone…      410 (channel expired)               missing…  404 (channel unknown)
//   forbidden… 403 (token's app does not own it)  dropped…  200 X-WNS-Status: dropped
//   throttle…  406 + X-WNS-CONTINUE-AFTER: 1 once, then 200
//   flaky…     503 once, then 200                 anything else: 200 X-WNS-Status: received
// Tiles need visual/binding, badges a value; X-WNS-Tag is at most 16 characters.
// With --tenant T it is Microsoft Entra instead (Windows App SDK apps): the token endpoint is
//   `POST /<T>/oauth2/v2.0/token` with scope https://wns.windows.com/.default, and channels take
//   only toast and raw from such a token (Microsoft's migration guide; the exact refusal is
//   unconfirmed: 400 here). stats.deliveredByType counts the 200s per X-WNS-Type.
// Options: --client-id ID --client-secret S (what the grant must carry), --scope S (default
//   notify.windows.com, or Entra's with --tenant), --expires-in S (default 86400), --expire-first-token (channel posts
//   with the first access token get 401, as if it had expired), --delay-ms N (channel answers
//   wait N ms, like a WNS node across the internet).
// Stats (--state FILE) are rewritten after every request.
'use strict';
const https = require('https');
const { args, tlsOptions, stateWriter, announce } = require('./common');

const a = args();
const clientID = a['client-id'] || 'ms-app://s-1-15-2-test';
const clientSecret = a['client-secret'] || 'test-secret';
const tenant = a['tenant'] || null;
const scope = a['scope'] || (tenant ? 'https://wns.windows.com/.default' : 'notify.windows.com');
const tokenPath = tenant ? `/${tenant}/oauth2/v2.0/token` : '/token';
const expiresIn = Number(a['expires-in'] || 86400);
const expireFirst = !!a['expire-first-token'];
const delayMs = Number(a['delay-ms'] || 0);
const writeState = stateWriter(a.state);

const stats = {
  tokenRequests: 0, tokensIssued: 0, badGrants: 0, posts: 0, byStatus: {}, authFailures: 0,
  delivered: 0, duplicateDeliveries: 0, invalidRequests: 0, perChannel: {}, problems: [], deliveredByType: {},
  tokenPaths: {},
};
const issued = new Map();
const types = { 'wns/toast': 'toast', 'wns/tile': 'tile', 'wns/badge': 'badge', 'wns/raw': null };

function problem(text) { if (stats.problems.length < 50) stats.problems.push(text); }

function answer(res, status, headers = {}, body = '') {
  stats.byStatus[status] = (stats.byStatus[status] || 0) + 1;
  res.writeHead(status, Object.assign({ 'content-length': Buffer.byteLength(body) }, headers));
  res.end(body);
  writeState(stats);
}

// A small well-formedness check (no DTDs): one root, nested tags, quoted attributes, valid entities.
function parseXML(s) {
  const entity = /&(amp|lt|gt|quot|apos|#[0-9]+|#x[0-9a-fA-F]+);/y;
  const decode = (t) => t.replace(/&(amp|lt|gt|quot|apos);/g, (m, e) => ({ amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" })[e])
    .replace(/&#x([0-9a-fA-F]+);/g, (m, h) => String.fromCodePoint(parseInt(h, 16)))
    .replace(/&#([0-9]+);/g, (m, d) => String.fromCodePoint(parseInt(d, 10)));
  const checkText = (t) => {
    for (let k = 0; k < t.length; k++) {
      if (t[k] === '<') return 'raw < in text';
      if (t[k] === '&') { entity.lastIndex = k; if (!entity.test(t)) return 'bad entity at ' + k; }
    }
    return null;
  };
  let i = 0, root = null;
  const stack = [];
  if (s.startsWith('<?xml')) { const e = s.indexOf('?>'); if (e < 0) return { why: 'unterminated declaration' }; i = e + 2; }
  while (i < s.length) {
    if (s[i] !== '<') {
      const next = s.indexOf('<', i);
      const text = s.slice(i, next < 0 ? s.length : next);
      const bad = checkText(text);
      if (bad) return { why: bad };
      if (!stack.length) { if (text.trim()) return { why: 'text outside the root' }; }
      else stack[stack.length - 1].text += decode(text);
      i = next < 0 ? s.length : next;
      continue;
    }
    if (s.startsWith('<!--', i)) { const e = s.indexOf('-->', i); if (e < 0) return { why: 'unterminated comment' }; i = e + 3; continue; }
    if (s.startsWith('</', i)) {
      const m = /^<\/([A-Za-z_][\w.:-]*)\s*>/.exec(s.slice(i));
      if (!m) return { why: 'bad end tag at ' + i };
      const open = stack.pop();
      if (!open || open.name !== m[1]) return { why: `</${m[1]}> does not close <${open ? open.name : ''}>` };
      i += m[0].length;
      continue;
    }
    const m = /^<([A-Za-z_][\w.:-]*)((?:\s+[A-Za-z_][\w.:-]*\s*=\s*(?:"[^"<]*"|'[^'<]*'))*)\s*(\/?)>/.exec(s.slice(i));
    if (!m) return { why: 'bad start tag at ' + i };
    const attrs = {};
    const re = /([A-Za-z_][\w.:-]*)\s*=\s*(?:"([^"]*)"|'([^']*)')/g;
    let am;
    while ((am = re.exec(m[2]))) {
      const v = am[2] !== undefined ? am[2] : am[3];
      const bad = checkText(v);
      if (bad) return { why: 'attribute ' + am[1] + ': ' + bad };
      if (attrs[am[1]] !== undefined) return { why: 'duplicate attribute ' + am[1] };
      attrs[am[1]] = decode(v);
    }
    const node = { name: m[1], attrs, children: [], text: '' };
    if (stack.length) stack[stack.length - 1].children.push(node);
    else if (root) return { why: 'two root elements' };
    else root = node;
    if (!m[3]) stack.push(node);
    i += m[0].length;
  }
  if (stack.length) return { why: `<${stack[stack.length - 1].name}> not closed` };
  if (!root) return { why: 'no root element' };
  return { root };
}

function handleToken(req, res, body) {
  stats.tokenRequests++;
  const form = new URLSearchParams(body.toString('utf8'));
  const refuse = (why) => {
    stats.badGrants++;
    problem('token: ' + why);
    answer(res, 400, { 'content-type': 'application/json' }, JSON.stringify({ error: 'invalid_client', error_description: why }));
  };
  if (!String(req.headers['content-type'] || '').startsWith('application/x-www-form-urlencoded')) return refuse('content-type');
  if (form.get('grant_type') !== 'client_credentials') return refuse('grant_type');
  if (form.get('client_id') !== clientID) return refuse('client_id');
  if (form.get('client_secret') !== clientSecret) return refuse('client_secret');
  if (form.get('scope') !== scope) return refuse('scope ' + form.get('scope'));
  const token = `wns.fake-${++stats.tokensIssued}-${Math.random().toString(36).slice(2)}`;
  issued.set(token, stats.tokensIssued);
  answer(res, 200, { 'content-type': 'application/json' },
    JSON.stringify({ access_token: token, token_type: 'bearer', expires_in: expiresIn }));
}

function handleChannel(req, res, body, name) {
  stats.posts++;
  const auth = String(req.headers['authorization'] || '');
  const serial = auth.startsWith('Bearer ') ? issued.get(auth.slice(7)) : undefined;
  if (!serial || (expireFirst && serial === 1)) {
    stats.authFailures++;
    return answer(res, 401, { 'x-wns-error-description': 'Token expired or invalid' });
  }
  const bad = (why) => { stats.invalidRequests++; problem(name + ': ' + why); answer(res, 400, { 'x-wns-error-description': why }); };
  const type = req.headers['x-wns-type'];
  if (!(type in types)) return bad('X-WNS-Type ' + type);
  const wantCT = type === 'wns/raw' ? 'application/octet-stream' : 'text/xml';
  if (String(req.headers['content-type'] || '').split(';')[0].trim() !== wantCT) return bad('Content-Type ' + req.headers['content-type']);
  if (req.headers['transfer-encoding']) return bad('chunked body');
  if (req.headers['expect']) return bad('Expect header');
  if (Number(req.headers['content-length']) !== body.length) return bad('Content-Length');
  if (req.headers['x-wns-ttl'] !== undefined && !/^\d+$/.test(req.headers['x-wns-ttl'])) return bad('X-WNS-TTL');
  const tag = req.headers['x-wns-tag'];
  if (tag !== undefined && (tag.length === 0 || tag.length > 16)) return bad('X-WNS-Tag longer than 16 characters');
  if (tenant && (type === 'wns/tile' || type === 'wns/badge')) return bad(type + ' from a Windows App SDK (Entra) app');
  if (body.length > 5000) { problem(name + ': payload too large'); return answer(res, 413); }
  let template = null, texts = null;
  if (types[type]) {
    const doc = parseXML(body.toString('utf8'));
    if (!doc.root) return bad('XML: ' + doc.why);
    if (doc.root.name !== types[type]) return bad('root element ' + doc.root.name);
    if (type === 'wns/toast' || type === 'wns/tile') {
      const visual = doc.root.children.find((n) => n.name === 'visual');
      const binding = visual && visual.children.find((n) => n.name === 'binding');
      if (!binding || !binding.attrs.template) return bad(types[type] + ' without visual/binding template');
      template = binding.attrs.template;
      texts = binding.children.filter((n) => n.name === 'text').map((n) => n.text);
    }
    if (type === 'wns/badge' && doc.root.attrs.value === undefined) return bad('badge without value');
    if (type === 'wns/badge') texts = [doc.root.attrs.value];
  }
  const c = stats.perChannel[name] = stats.perChannel[name] || { attempts: 0, statuses: [], times: [] };
  c.attempts++;
  c.times.push(Date.now() / 1000);
  Object.assign(c, { type, ttl: req.headers['x-wns-ttl'] || null, tag: tag || null, template, texts,
    contentType: req.headers['content-type'], bytes: body.length,
    // A raw push's body as the app's background task reads it (RawNotification.Content).
    raw: type === 'wns/raw' ? body.toString('utf8') : null });
  const reply = (status, headers) => { c.statuses.push(status); answer(res, status, headers); };
  if (name.startsWith('gone')) return reply(410, { 'x-wns-status': 'dropped' });
  if (name.startsWith('missing')) return reply(404, {});
  if (name.startsWith('forbidden')) return reply(403, { 'x-wns-error-description': 'Channel not owned by this app' });
  if (name.startsWith('throttle') && c.attempts === 1) return reply(406, { 'x-wns-continue-after': '1' });
  if (name.startsWith('flaky') && c.attempts === 1) return reply(503, {});
  if (name.startsWith('dropped')) return reply(200, { 'x-wns-status': 'dropped', 'x-wns-msg-id': 'D' + stats.posts });
  if (c.statuses.includes(200)) stats.duplicateDeliveries++;
  stats.delivered++;
  stats.deliveredByType[type] = (stats.deliveredByType[type] || 0) + 1;
  reply(200, { 'x-wns-status': 'received', 'x-wns-msg-id': 'M' + stats.posts });
}

const server = https.createServer(tlsOptions(), (req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const body = Buffer.concat(chunks);
    const url = req.url.split('?')[0];
    if (req.method === 'POST' && url === tokenPath) { stats.tokenPaths[url] = (stats.tokenPaths[url] || 0) + 1; return handleToken(req, res, body); }
    if (req.method === 'POST' && url.startsWith('/ch/')) {
      const name = decodeURIComponent(url.slice(4));
      return delayMs ? setTimeout(() => handleChannel(req, res, body, name), delayMs) : handleChannel(req, res, body, name);
    }
    problem('unexpected ' + req.method + ' ' + url);
    answer(res, 405);
  });
});
writeState(stats);
announce(server);

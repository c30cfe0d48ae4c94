// The peer baseline for `pushspool-bench apns`: Node's own http2 client sending the same APNs
// requests (ES256 JWT, same headers and payload) to the same fake over ONE session with the same
// number of streams in flight. Prints one JSON line: {"ok", "failed", "ms", "cpuMs"}.
// Run by `node`, it is that peer; required, it lends `streams` (below) to peer-node-webpush.js.
'use strict';
const http2 = require('http2');
const fs = require('fs');
const crypto = require('crypto');

// The APNs peer itself (when run, not required).
function main() {
  const a = {};
  for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  const count = Number(a.count), concurrency = Number(a.concurrency), offset = Number(a.offset || 0);

  const b64 = (x) => Buffer.from(x).toString('base64url');
  const signingInput = b64(JSON.stringify({ alg: 'ES256', kid: a['key-id'] })) + '.' +
    b64(JSON.stringify({ iss: a['team-id'], iat: Math.floor(Date.now() / 1000) }));
  const sig = crypto.sign('sha256', Buffer.from(signingInput),
    { key: fs.readFileSync(a.key), dsaEncoding: 'ieee-p1363' });
  const jwt = signingInput + '.' + sig.toString('base64url');
  const body = Buffer.from(a.payload);

  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const session = http2.connect('https://127.0.0.1:' + a.port, { ca: fs.readFileSync(a.ca),
    settings: { enablePush: false } });
  session.on('error', (e) => { console.error('session error', e.message); });

  streams({ count, concurrency, okStatus: 200, cpu0, t0, open: (n) => {
    const i = offset + n;
    const req = session.request({
      ':method': 'POST', ':path': '/3/device/' + i.toString(16).padStart(64, '0'),
      authorization: 'bearer ' + jwt, 'apns-topic': a.topic, 'apns-push-type': 'alert',
      'apns-priority': '10', 'apns-id': crypto.randomUUID(), 'content-type': 'application/json',
    });
    return [req, body];
  }, done: ({ ok, failed, ms, cpuMs }) => {
    process.stdout.write(JSON.stringify({ ok, failed, ms, cpuMs }) + '\n');
    session.close();
  } });
}

// What both peers share: `count` requests over the same number of streams in flight as pushspool,
// `open(n)` starting the n-th (0-based) and returning [request, body]; answers with `okStatus` count
// as ok, the rest as failed. Once all have closed, `done({ok, failed, byStatus, ms, cpuMs})`, the
// wall time and CPU counted from `t0` (process.hrtime.bigint()) and `cpu0` (process.cpuUsage()).
function streams({ count, concurrency, okStatus, open, t0, cpu0, done }) {
  let next = 0, closed = 0, ok = 0, failed = 0;
  const byStatus = {};
  function finish() {
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    const c = process.cpuUsage(cpu0);
    done({ ok, failed, byStatus, ms, cpuMs: (c.user + c.system) / 1000 });
  }
  function one() {
    if (next >= count) return;
    const [req, body] = open(next++);
    let status = 0;
    req.on('response', (h) => { status = h[':status']; });
    req.on('data', () => {});
    req.on('error', () => {});
    req.on('close', () => {
      byStatus[status] = (byStatus[status] || 0) + 1;
      if (status === okStatus) ok++; else failed++;
      if (++closed === count) finish(); else one();
    });
    req.end(body);
  }
  if (count === 0) finish();
  for (let k = 0; k < Math.min(concurrency, count); k++) one();
}
module.exports = { streams };
if (require.main === module) main();

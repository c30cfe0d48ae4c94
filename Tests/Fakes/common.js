// Shared plumbing for the fake provider servers (Node built-ins only).
// Every fake: listens on 127.0.0.1 with an ephemeral port, prints one line `{"port": N}` on stdout
// when ready, and rewrites its stats JSON file (`--state FILE`) after every request, so a test can
// read what the fake received once the binary under test has exited (a fake that writes it at most
// every N ms answers `sync N` on stdin with a fresh write: FakeServer.syncedState).
'use strict';
const fs = require('fs');
const path = require('path');

const fixtures = path.join(__dirname, '..', 'Fixtures');

function args() {
  const out = {};
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    if (argv[i].startsWith('--')) {
      const key = argv[i].slice(2);
      const next = argv[i + 1];
      if (next === undefined || next.startsWith('--')) out[key] = true; else { out[key] = next; i++; }
    }
  }
  return out;
}

function tlsOptions() {
  return {
    key: fs.readFileSync(path.join(fixtures, 'server-key.pem')),
    cert: fs.readFileSync(path.join(fixtures, 'server.pem')),
  };
}

// The state last written, and how to write it again: `sync N` on stdin (see `announce`).
let written = null;

function stateWriter(file) {
  return function write(state) {
    written = { state, write };
    if (!file) return;
    // Synchronous and atomic: the test may read the file right after the client exits.
    const tmp = file + '.tmp';
    try {
      fs.writeFileSync(tmp, JSON.stringify(state, null, 1));
      fs.renameSync(tmp, file);
    } catch (e) {
      // The test is over and its folder removed before we were stopped: nobody reads it now.
      if (e.code !== 'ENOENT') throw e;
    }
  };
}

function announce(server) {
  // `--port N`: a fixed port (a test restarting a server on the port its client knows).
  const fixed = Number(args().port || 0);
  // `--host ADDRESS`: another address than 127.0.0.1 (pg-proxy in a test's network namespace).
  server.listen(fixed, args().host || '127.0.0.1', () => {
    process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n');
  });
  const stop = () => { server.close(); process.exit(0); };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  // Never outlive the test that started us.
  process.stdin.on('end', stop);
  // `sync N` on stdin: write the state now, with `sync: N`. A fake that writes at most every
  // 100 ms still holds its first state file when a quick client has come and gone; a state that
  // carries the test's N was written after the test asked, so it counts everything before.
  let pending = '';
  process.stdin.on('data', (data) => {
    pending += data;
    let end;
    while ((end = pending.indexOf('\n')) >= 0) {
      const m = /^sync (\d+)$/.exec(pending.slice(0, end));
      pending = pending.slice(end + 1);
      if (m && written) { written.state.sync = Number(m[1]); written.write(written.state); }
    }
  });
}

function b64urlDecode(s) {
  return Buffer.from(s.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

// Verifies a compact JWS with `alg` ES256 (raw r||s) or RS256 against a PEM public key.
function verifyJWT(token, publicKeyPem, expectedAlg) {
  const crypto = require('crypto');
  const parts = String(token).split('.');
  if (parts.length !== 3) return { ok: false, why: 'not a JWS' };
  let header, claims;
  try {
    header = JSON.parse(b64urlDecode(parts[0]).toString('utf8'));
    claims = JSON.parse(b64urlDecode(parts[1]).toString('utf8'));
  } catch (e) { return { ok: false, why: 'bad JSON in JWT' }; }
  if (header.alg !== expectedAlg) return { ok: false, why: 'alg ' + header.alg, header, claims };
  const sig = b64urlDecode(parts[2]);
  const data = Buffer.from(parts[0] + '.' + parts[1]);
  const key = crypto.createPublicKey(publicKeyPem);
  const ok = expectedAlg === 'ES256'
    ? sig.length === 64 && crypto.verify('sha256', data, { key, dsaEncoding: 'ieee-p1363' }, sig)
    : crypto.verify('sha256', data, key, sig);
  return { ok, why: ok ? null : 'bad signature', header, claims };
}

module.exports = { args, tlsOptions, stateWriter, announce, verifyJWT, fixtures };

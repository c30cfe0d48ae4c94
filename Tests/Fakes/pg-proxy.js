// A TCP door to a PostgreSQL server's unix socket (`--target PATH`), listening on `--host`
// (default 127.0.0.1): a host then reaches the database over a network that a test can cut.
// Started in a test's network namespace (`ip netns exec`), it is reached over a veth pair,
// whose end taken down drops every packet: a partition, not a refusal.
'use strict';
const net = require('net');
const { args, announce } = require('./common');

const a = args();
const server = net.createServer((client) => {
  const upstream = net.connect(a.target);
  client.pipe(upstream);
  upstream.pipe(client);
  const end = () => { client.destroy(); upstream.destroy(); };
  for (const s of [client, upstream]) { s.on('error', end); s.on('close', end); }
});
announce(server);

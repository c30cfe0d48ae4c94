import Foundation
import Testing

/// `serve` with `http.tls`: HTTPS with the configured certificate (the test CA's server
/// certificate for 127.0.0.1), checked by a client that verifies it (Node's https module).
@Suite(.enabled(if: Paths.nodeAvailable)) struct ServeTLSTests {
    @Test func servesHTTPSWithTheConfiguredCertificate() throws {
        let dir = TempDir("pushspool-tls")
        FrontDoorFiles.write(into: dir)
        dir.write("server.pem", try String(contentsOf: Paths.fixture("server.pem"), encoding: .utf8), mode: 0o644)
        dir.write("server-key.pem", try String(contentsOf: Paths.fixture("server-key.pem"), encoding: .utf8), mode: 0o600)
        dir.write("pushspool.json", #"{"spool": "spool", \#(FrontDoorFiles.section(#", "tls": {"cert_file": "server.pem", "key_file": "server-key.pem"}"#))}"#)
        try initSpool(["--config", dir.path("pushspool.json")], cwd: dir.url)
        let check = try runPushspool(["config", "--check", "--config", dir.path("pushspool.json")], cwd: dir.url)
        #expect(check.status == 0, "\(check.stdout)\(check.stderr)")
        let serve = try ServeProcess(config: dir.path("pushspool.json"), cwd: dir.url)
        #expect(serve.log.contains("serving https://"))
        let script = """
            const https = require('https'), fs = require('fs');
            const ca = fs.readFileSync(process.argv[1]);
            const get = (path, auth) => new Promise((ok, fail) => {
              const req = https.request({host: '127.0.0.1', port: \(serve.port), path, ca, method: 'GET',
                                         headers: auth ? {authorization: auth} : {}}, res => {
                let body = ''; res.on('data', d => body += d); res.on('end', () => ok(res.statusCode + ' ' + body.trim()));
              });
              req.on('error', fail); req.end();
            });
            (async () => {
              console.log(await get('/healthz'));
              console.log(await get('/v1/devices?count=1', '\(FrontDoorFiles.bearer)'));
            })().catch(e => { console.log('error ' + e.code); process.exit(1); });
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["node", "-e", script, Paths.fixture("ca.pem").path]
        let out = Pipe()
        p.standardOutput = out
        try p.run()
        let text = String(decoding: readToEnd(out.fileHandleForReading.fileDescriptor), as: UTF8.self)
        p.waitUntilExit()
        #expect(text == "200 ok\n200 {\"count\":0}\n", "\(text)")
        // Plain HTTP on the TLS port gets no answer in clear.
        #expect((try? serve.client().request("GET", "/healthz"))?.status != 200)
    }
}

import PushspoolKit
import PushspoolServer
import Dispatch
import Foundation
import PushspoolCore
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `serve`: the HTTP front door on `http.listen`, until SIGINT, SIGTERM or SIGHUP. It writes job
/// files and registry changes and never sends a push; `run` beside it does.
enum ServeCommand {
    static func run(_ args: Arguments) throws(CLIError) -> ExitCode {
        // First: a stop that comes while serve starts is not lost.
        StopSignals.install()
        // A hub-routed platform's registrations (of any app) go to the hub too: its credentials
        // must resolve.
        let runtime = try Runtime(args, requireSecretsIf: HubLink.isHubRouted)
        let config = runtime.config
        let http = config.http ?? HTTPConfig()
        let log = Log.shared.with(.component, "serve")
        var authenticator: (any RequestAuthenticator)?
        if http.usersFile != nil || http.tokensFile != nil || http.operatorsFile != nil {
            do {
                authenticator = try Authenticator(config: http, resolve: config.resolve, log: log)
            } catch {
                throw CLIError(.config, "serve: \(error)")
            }
        } else {
            log.warning("http.users_file and http.tokens_file are not set: only /healthz answers; every other route says 401")
        }
        let tls = try tlsPair(http, config)
        // Hub writes go through a durable queue in the spool, written in the background: a slow
        // hub never holds up a registration (the registry is the record).
        let hubStopping = Mutex(false)
        let registry = try runtime.openRegistry(log: log)
        let hub = try HubLink.open(config, spool: runtime.spool, registry: registry, isStopping: { hubStopping.withLock { $0 } })
        let hubQueue: HubQueue?
        do {
            hubQueue = try hub.map { try HubQueue(spool: runtime.spool, writer: $0.writer, registry: registry, log: log) }
        } catch {
            throw CLIError(.ioError, "serve: cannot make the hub queue in the spool (hub/): \(error)")
        }
        hubQueue?.start()
        let server: FrontDoorServer
        let bound: ListenAddress
        do {
            server = try FrontDoorServer(.init(config: config, spool: runtime.spool, registry: registry,
                                               registrations: RegistrationService(registry: registry, hub: hub?.writer, hubQueue: hubQueue),
                                               authenticator: authenticator, log: log, tls: tls))
            bound = try server.start()
        } catch {
            throw CLIError(error.description.hasPrefix("http.listen") ? .config : .ioError, "serve: \(error)")
        }
        log.info("serving \(tls == nil ? "http" : "https")://\(bound) for spool \(runtime.spool.root.path)",
                 [(.listen, bound.description), (.tls, tls == nil ? "off" : "on")])
        // serve's own metrics file (beside the dispatchers' ones, never one of theirs).
        let textfile = MetricsTextfile.forProcess(config, spool: runtime.spool, role: .serve, log: log)
        // Made only when there is a file to write: a Dispatch source released while still
        // suspended (never resumed) traps in libdispatch, which made every stop exit 132.
        let metricsTimer: (any DispatchSourceTimer)? = textfile.map { textfile in
            let timer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
            let interval = Double(config.metrics.intervalSeconds)
            timer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(100))
            timer.setEventHandler { Self.writeMetrics(server, to: textfile, log: log) }
            timer.resume()
            return timer
        }
        // A client that goes away mid-listing closes the pipe the listing writes into.
        signal(SIGPIPE, SIG_IGN)
        StopSignals.wait()
        Thread.detachNewThread {
            // A second signal ends it at once: everything answered 2xx is already durable.
            StopSignals.wait()
            CLI.end(0)
        }
        log.info("stopping: no new connections; answering the requests in progress (at most 10 s, then 503)")
        // Afterwards nothing of serve's touches the registry: it may close.
        let drained = server.stop(grace: 10)
        if let textfile {
            metricsTimer?.cancel()
            writeMetrics(server, to: textfile, log: log)
        }
        log.info("stopped: \(server.intake.jobsWritten) job files made durable in \(server.intake.groupsWritten) fsync groups")
        // Writes to the hub in flight are cut short; what is not written stays in hub/pending/.
        hubStopping.withLock { $0 = true }
        hubQueue?.stop()
        hub?.close()
        hubQueue?.waitForWrites(seconds: 2)
        if drained {
            registry.close()
        } else {
            // Closing it under a running query would crash; every answered change is committed.
            log.warning("stopped with registry work still running after the grace time; the registry is left to the exit")
        }
        return .ok
    }

    private static func writeMetrics(_ server: FrontDoorServer, to textfile: MetricsTextfile, log: Log) {
        do {
            try textfile.write(server.renderMetrics())
        } catch {
            log.warning("metrics: \(error)")
        }
    }

    /// The PEM key and certificate `http.tls` names, read once at start.
    static func tlsPair(_ http: HTTPConfig, _ config: Config) throws(CLIError) -> (key: String, cert: String)? {
        guard let keyFile = http.tlsKeyFile, let certFile = http.tlsCertFile else { return nil }
        do {
            let key = try String(contentsOf: config.resolve(keyFile), encoding: .utf8)
            let cert = try String(contentsOf: config.resolve(certFile), encoding: .utf8)
            return (key, cert)
        } catch {
            throw CLIError(.config, "serve: http.tls: cannot read \(keyFile) or \(certFile): \(error.localizedDescription)")
        }
    }
}

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
        // A hub-routed platform's registrations go to the hub too: its credentials must resolve.
        let hubRouted = (try? Runtime.loadConfig(args))?.routes.values.contains("azure") ?? false
        let runtime = try Runtime(args, requireSecrets: hubRouted)
        let config = runtime.config
        let http = config.http ?? HTTPConfig()
        let log = Log.shared.with(.component, "serve")
        var authenticator: (any RequestAuthenticator)?
        if http.usersFile != nil || http.tokensFile != nil {
            do {
                authenticator = try Authenticator(config: http, resolve: config.resolve, log: log)
            } catch {
                throw CLIError(.config, "serve: \(error)")
            }
        } else {
            log.warning("http.users_file and http.tokens_file are not set: only /healthz answers; every other route says 401")
        }
        let tls = try tlsPair(http, config)
        let hub = try HubLink.open(config, spool: runtime.spool)
        let registry = try runtime.openRegistry(log: log)
        let server: FrontDoorServer
        let bound: ListenAddress
        do {
            server = try FrontDoorServer(.init(config: config, spool: runtime.spool, registry: registry,
                                               registrations: RegistrationService(registry: registry, hub: hub?.writer),
                                               authenticator: authenticator, log: log, tls: tls))
            bound = try server.start()
        } catch {
            throw CLIError(error.description.hasPrefix("http.listen") ? .config : .ioError, "serve: \(error)")
        }
        log.info("serving \(tls == nil ? "http" : "https")://\(bound) for spool \(runtime.spool.root.path)",
                 [(.listen, bound.description), (.tls, tls == nil ? "off" : "on")])
        // serve's own metrics file (beside the dispatchers' ones, never one of theirs).
        let textfile = MetricsTextfile.forProcess(config, spool: runtime.spool, role: .serve, log: log)
        let metricsTimer = DispatchSource.makeTimerSource(queue: .global(qos: .utility))
        if let textfile {
            let interval = Double(config.metrics.intervalSeconds)
            metricsTimer.schedule(deadline: .now(), repeating: interval, leeway: .milliseconds(100))
            metricsTimer.setEventHandler { Self.writeMetrics(server, to: textfile, log: log) }
            metricsTimer.resume()
        }
        // A client that goes away mid-listing closes the pipe the listing writes into.
        signal(SIGPIPE, SIG_IGN)
        let stopped = DispatchSemaphore(value: 0)
        let signals = Mutex(0)
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                // A second signal ends it at once: everything answered 2xx is already durable.
                if signals.withLock({ n in n += 1; return n }) > 1 { exit(0) }
                stopped.signal()
            }
            source.resume()
            sources.append(source)
        }
        stopped.wait()
        log.info("stopping: no new connections; answering the requests in progress (at most 10 s)")
        server.stop(grace: 10)
        if let textfile {
            metricsTimer.cancel()
            writeMetrics(server, to: textfile, log: log)
        }
        log.info("stopped: \(server.intake.jobsWritten) job files made durable in \(server.intake.groupsWritten) fsync groups")
        hub?.close()
        registry.close()
        _ = sources
        return .ok
    }

    private static func writeMetrics(_ server: FrontDoorServer, to textfile: MetricsTextfile, log: Log) {
        do {
            try textfile.write(server.metrics.render())
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

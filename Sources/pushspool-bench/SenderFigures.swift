/// What one sender (pushspool, a Node peer, h2load) did for N requests to a fresh fake: its rate,
/// its own CPU per request and peak RSS, what the fake counted, and the fake's own CPU per request
/// while serving it. The APNs and Web Push rounds add what only their fake checks.
struct SenderFigures {
    var rate: Double
    var cpuMicrosPerRequest: Double
    var peakRSS: Int
    var delivered: Int
    var duplicates: Int
    var connections: Int
    var fakeMicrosPerRequest: Double

    /// From the measured sender of `count` requests (`rate`: the one it reports itself, as h2load
    /// does, else the count over its wall time) and the fake's settled state, whose counts of
    /// deliveries and duplicates go by `deliveredKey` and `duplicatesKey` (-1 where missing).
    init(_ m: Measured, count: Int, rate: Double? = nil, fake state: [String: Any], fakeMicros: Double,
         deliveredKey: String, duplicatesKey: String) {
        self.rate = rate ?? Double(count) / m.seconds
        cpuMicrosPerRequest = m.cpuSeconds / Double(count) * 1e6
        peakRSS = m.peakRSS
        delivered = state[deliveredKey] as? Int ?? -1
        duplicates = state[duplicatesKey] as? Int ?? -1
        connections = state["tlsConnections"] as? Int ?? -1
        fakeMicrosPerRequest = fakeMicros
    }
}

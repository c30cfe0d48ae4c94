import CNghttp2
import Foundation

/// What a connection hands back to its poll loop: finished requests, and requests the server
/// refused unprocessed, to be sent again elsewhere.
protocol H2ConnectionSink: AnyObject {
    func finished(_ stream: H2Stream, _ result: Result<HTTPResponse, HTTPTransportError>)
    func refused(_ stream: H2Stream)
}

/// One HTTP/2 connection: an nghttp2 client session over a `TLSSocket`, with the requests in
/// flight on it. nghttp2 does the framing, HPACK and flow control; this class moves bytes between
/// it and the socket and turns its callbacks into answers. Poll thread only.
final class H2Connection {
    let origin: Origin
    let socket: TLSSocket
    private var session: OpaquePointer!
    private unowned let sink: any H2ConnectionSink
    private let ourStreamLimit: Int

    private(set) var streams: [Int32: H2Stream] = [:]
    /// The server's first SETTINGS has arrived: its stream limit is known.
    private(set) var ready = false
    /// No new streams: the server sent GOAWAY, or the service condemned the connection.
    var draining = false
    private(set) var goawayLastStreamID: Int32?
    private(set) var serverStreamLimit = Int(Int32.max)
    /// Set once the connection is beyond use; the loop then tears it down.
    private(set) var failure: String?
    /// Streams opened over the connection's life.
    private(set) var opened = 0
    /// Responses received over the connection's life. Until the first, a connection's stream
    /// limit is not what it will be: APNs allows a token-authenticated connection one stream
    /// until a request with a valid JWT has succeeded, then raises it by SETTINGS.
    private(set) var answered = 0

    let createdAt = monotonicNow()
    private var lastReadAt = monotonicNow()
    private var pingSentAt: Double?

    /// What nghttp2 gave to send, `outCount` bytes of which `outSent` are written. A buffer of our
    /// own, copied into with `memcpy`: appending to a `[UInt8]` cost more than the copy itself.
    private var out = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * H2Connection.writeSize, alignment: 16)
    private var outCount = 0
    private var outSent = 0
    /// nghttp2's output is coalesced up to this many bytes per write.
    static let writeSize = 65_536
    private(set) var wantsWrite = false

    /// Our receive windows: responses are small, but thousands arrive at once.
    static let connectionWindow: Int32 = 16 << 20
    static let streamWindow: UInt32 = 1 << 20

    init(origin: Origin, socket: TLSSocket, sink: any H2ConnectionSink, maxConcurrentStreams: Int) throws(HTTPTransportError) {
        self.origin = origin
        self.socket = socket
        self.sink = sink
        ourStreamLimit = max(1, maxConcurrentStreams)
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else {
            throw HTTPTransportError("nghttp2_session_callbacks_new failed")
        }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks, h2OnFrameRecv)
        nghttp2_session_callbacks_set_on_header_callback(callbacks, h2OnHeader)
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, h2OnDataChunk)
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, h2OnStreamClose)
        nghttp2_session_callbacks_set_on_frame_not_send_callback(callbacks, h2OnFrameNotSent)
        var s: OpaquePointer?
        guard nghttp2_session_client_new(&s, callbacks, Unmanaged.passUnretained(self).toOpaque()) == 0, let s else {
            throw HTTPTransportError("nghttp2_session_client_new failed")
        }
        session = s
        var settings = [
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_ENABLE_PUSH.rawValue), value: 0),
            nghttp2_settings_entry(settings_id: Int32(NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE.rawValue), value: Self.streamWindow),
        ]
        _ = nghttp2_submit_settings(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
        _ = nghttp2_session_set_local_window_size(s, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, Self.connectionWindow)
    }

    deinit {
        nghttp2_session_del(session)
        out.deallocate()
    }

    /// Streams this connection carries at once: the server's limit or ours, the smaller.
    var streamLimit: Int { min(ourStreamLimit, serverStreamLimit) }

    /// Streams this connection may still take now.
    var capacity: Int {
        guard ready, !draining, failure == nil else { return 0 }
        return max(0, streamLimit - streams.count)
    }

    /// Open for new streams: neither going away nor broken (it may still be starting).
    var usable: Bool { !draining && failure == nil }

    /// Finished with: nothing in flight and no new work allowed, or broken.
    var isDone: Bool { failure != nil || (draining && streams.isEmpty && !wantsWrite) }

    // MARK: Requests

    /// Queues the request's HEADERS (and DATA) in the session; `flush` writes them.
    /// False when the connection can take no more streams (the caller requeues it).
    func submit(_ stream: H2Stream) -> Bool {
        stream.resetAttempt()
        // The stream rides along as nghttp2's stream data: the callbacks find it there, not by a
        // lookup in `streams` per header field.
        let data = Unmanaged.passUnretained(stream).toOpaque()
        let id: Int32
        if stream.request.body.isEmpty {
            id = nghttp2_submit_request(session, nil, stream.header.fields, stream.header.count, nil, data)
        } else {
            var provider = nghttp2_data_provider(source: nghttp2_data_source(ptr: data), read_callback: h2ReadBody)
            id = nghttp2_submit_request(session, nil, stream.header.fields, stream.header.count, &provider, data)
        }
        if id < 0 {
            // Stream ids used up (after about a billion requests) or the session is closing.
            draining = true
            return false
        }
        streams[id] = stream
        opened += 1
        return true
    }

    /// Cancels a stream whose deadline passed; its close callback reports the timeout.
    func cancel(_ id: Int32) {
        guard let s = streams[id], !s.timedOut else { return }
        s.timedOut = true
        _ = nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), id, NGHTTP2_CANCEL.rawValue)
    }

    // MARK: I/O

    /// Reads everything the socket has and feeds it to nghttp2.
    func readAvailable(into buffer: UnsafeMutableRawBufferPointer) {
        TLSSocket.clearErrors()
        while failure == nil {
            switch socket.read(into: buffer) {
            case .bytes(let n):
                lastReadAt = monotonicNow()
                let rc = nghttp2_session_mem_recv(session, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), n)
                if rc < 0 { fail("HTTP/2 protocol error: \(String(cString: nghttp2_strerror(Int32(rc))))") }
            case .wouldBlock:
                return
            case .closed:
                fail(goawayLastStreamID == nil ? "connection closed by the server" : "connection closed after GOAWAY")
            case .failed(let why):
                fail(why)
            }
        }
    }

    /// Writes what nghttp2 has to send, coalesced up to 64 KB per write.
    func flush() {
        TLSSocket.clearErrors()
        while failure == nil {
            if outSent < outCount {
                switch socket.write(UnsafeRawBufferPointer(rebasing: out[outSent..<outCount])) {
                case .bytes(let n): outSent += n; continue
                case .wouldBlock: wantsWrite = true; return
                case .closed: fail("connection closed by the server"); return
                case .failed(let why): fail(why); return
                }
            }
            outCount = 0
            outSent = 0
            while outCount < Self.writeSize {
                var data: UnsafePointer<UInt8>?
                let n = nghttp2_session_mem_send(session, &data)
                if n < 0 { fail("HTTP/2: \(String(cString: nghttp2_strerror(Int32(n))))"); return }
                guard n > 0, let data else { break }
                if outCount + n > out.count {
                    // A frame bigger than the room left (the peer allows frames over 64 KB).
                    let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: 2 * (outCount + n), alignment: 16)
                    bigger.copyMemory(from: UnsafeRawBufferPointer(rebasing: out[..<outCount]))
                    out.deallocate()
                    out = bigger
                }
                (out.baseAddress! + outCount).copyMemory(from: data, byteCount: n)
                outCount += n
            }
            if outCount == 0 {
                wantsWrite = false
                if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 && streams.isEmpty {
                    draining = true   // the session is over (GOAWAY both ways)
                }
                return
            }
        }
    }

    /// Liveness: a connection that has read nothing for `interval` gets a PING; one unanswered
    /// for `timeout` is dead.
    func checkLiveness(now: Double, interval: Double, timeout: Double) {
        if let sent = pingSentAt {
            if now - sent > timeout { fail("no answer to PING within \(Int(timeout)) s") }
        } else if now - lastReadAt > interval {
            pingSentAt = now
            _ = nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
        }
        if !ready && now - createdAt > timeout { fail("no SETTINGS from the server within \(Int(timeout)) s") }
    }

    /// When `checkLiveness` next has something to do: the PING's answer is late, the quiet
    /// interval ends, or the first SETTINGS is late.
    func livenessDue(interval: Double, timeout: Double) -> Double {
        let due = pingSentAt.map { $0 + timeout } ?? lastReadAt + interval
        return ready ? due : min(due, createdAt + timeout)
    }

    /// Says goodbye politely (GOAWAY NO_ERROR) once nothing is in flight.
    func close() {
        _ = nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
        flush()
    }

    func fail(_ why: String) {
        if failure == nil { failure = why }
    }

    /// Takes every stream still open, for the loop to answer or requeue after a failure.
    func takeStreams() -> [(Int32, H2Stream)] {
        defer { streams.removeAll() }
        // No callback may reach a stream this connection no longer holds.
        for id in streams.keys { _ = nghttp2_session_set_stream_user_data(session, id, nil) }
        return streams.map { ($0.key, $0.value) }
    }

    /// Whether the server may have processed stream `id` (it did not refuse it by GOAWAY).
    func mayHaveProcessed(_ id: Int32) -> Bool {
        guard let last = goawayLastStreamID else { return true }
        return id <= last
    }

    // MARK: nghttp2 callbacks (through the C trampolines below)

    fileprivate func onFrame(_ frame: UnsafePointer<nghttp2_frame>) {
        let hd = frame.pointee.hd
        switch UInt32(hd.type) {
        case NGHTTP2_SETTINGS.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) == 0:
            serverStreamLimit = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            ready = true
        case NGHTTP2_GOAWAY.rawValue:
            goawayLastStreamID = frame.pointee.goaway.last_stream_id
            draining = true
        case NGHTTP2_PING.rawValue where hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0:
            pingSentAt = nil
        case NGHTTP2_HEADERS.rawValue, NGHTTP2_DATA.rawValue:
            if hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0 { stream(hd.stream_id)?.ended = true }
        default:
            break
        }
    }

    /// The open stream `id`, from the data it was submitted with (nil once taken out of `streams`).
    private func stream(_ id: Int32) -> H2Stream? {
        nghttp2_session_get_stream_user_data(session, id).map { Unmanaged<H2Stream>.fromOpaque($0).takeUnretainedValue() }
    }

    private static let status: StaticString = ":status"

    fileprivate func onHeader(_ id: Int32, name: UnsafeBufferPointer<UInt8>, value: UnsafeBufferPointer<UInt8>) {
        guard let s = stream(id) else { return }
        if name.count == 7 && memcmp(name.baseAddress!, Self.status.utf8Start, 7) == 0 {
            var status = 0
            for b in value where b >= 0x30 && b <= 0x39 { status = status * 10 + Int(b - 0x30) }
            if status >= 200 || s.status == 0 { s.status = status }
        } else if s.status >= 200 {   // not an informational (1xx) block's fields
            if let wanted = s.request.responseHeaders,
               !wanted.contains(where: { $0.utf8.count == name.count && $0.utf8.elementsEqual(name) }) { return }
            // Room for a typical answer's few fields at once, not regrown field by field.
            if s.responseFields.isEmpty { s.responseFields.reserveCapacity(6) }
            s.responseFields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
        }
    }

    fileprivate func onData(_ id: Int32, _ data: UnsafeBufferPointer<UInt8>) {
        guard let s = stream(id) else { return }
        let keep = min(data.count, max(0, HTTPResponse.maxBodyBytes - s.body.count))   // the rest is read and dropped
        if keep > 0 { s.body.append(contentsOf: UnsafeBufferPointer(rebasing: data[..<keep])) }
    }

    fileprivate func onClose(_ id: Int32, errorCode: UInt32) {
        guard let s = streams.removeValue(forKey: id) else { return }
        if s.timedOut {
            sink.finished(s, .failure(s.timeoutFailure))
        } else if s.ended && s.status >= 200 {
            answered += 1
            sink.finished(s, .success(s.response))
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue || !mayHaveProcessed(id) {
            // Never processed (RFC 9113 §8.7): safe to send again, on another connection.
            sink.refused(s)
        } else {
            let code = String(cString: nghttp2_http2_strerror(errorCode))
            sink.finished(s, .failure(HTTPTransportError("stream reset by the server (\(code)) before a complete response")))
        }
    }

    /// A request's HEADERS that nghttp2 dropped unsent: a GOAWAY came or the session began
    /// closing while they waited in its queue (the socket was full), or the stream was cancelled
    /// there. nghttp2 opens a stream only when its HEADERS go, so no close callback comes for it:
    /// without this the request would sit in `streams` until the connection dies. It never
    /// reached the server, so it is sent again elsewhere (a timed-out one is answered so).
    fileprivate func onNotSent(_ frame: UnsafePointer<nghttp2_frame>) {
        guard UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue,
              let s = streams.removeValue(forKey: frame.pointee.hd.stream_id) else { return }
        if s.timedOut { sink.finished(s, .failure(s.timeoutFailure)) } else { sink.refused(s) }
    }

    fileprivate func readBody(_ stream: H2Stream, into buf: UnsafeMutablePointer<UInt8>, length: Int, flags: UnsafeMutablePointer<UInt32>) -> Int {
        let n = min(length, stream.request.body.count - stream.bodySent)
        stream.request.body.withUnsafeBufferPointer { body in
            (buf).update(from: body.baseAddress! + stream.bodySent, count: n)
        }
        stream.bodySent += n
        if stream.bodySent == stream.request.body.count { flags.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
        return n
    }
}

// C function pointers cannot capture: the connection comes back through `user_data`.

private func connection(_ userData: UnsafeMutableRawPointer?) -> H2Connection {
    Unmanaged<H2Connection>.fromOpaque(userData!).takeUnretainedValue()
}

private let h2OnFrameRecv: nghttp2_on_frame_recv_callback = { _, frame, userData in
    if let frame { connection(userData).onFrame(frame) }
    return 0
}

private let h2OnHeader: nghttp2_on_header_callback = { _, frame, name, nameLength, value, valueLength, _, userData in
    guard let frame, UInt32(frame.pointee.hd.type) == NGHTTP2_HEADERS.rawValue else { return 0 }
    connection(userData).onHeader(frame.pointee.hd.stream_id,
                                  name: UnsafeBufferPointer(start: name, count: nameLength),
                                  value: UnsafeBufferPointer(start: value, count: valueLength))
    return 0
}

private let h2OnDataChunk: nghttp2_on_data_chunk_recv_callback = { _, _, id, data, length, userData in
    connection(userData).onData(id, UnsafeBufferPointer(start: data, count: length))
    return 0
}

private let h2OnStreamClose: nghttp2_on_stream_close_callback = { _, id, errorCode, userData in
    connection(userData).onClose(id, errorCode: errorCode)
    return 0
}

private let h2OnFrameNotSent: nghttp2_on_frame_not_send_callback = { _, frame, _, userData in
    if let frame { connection(userData).onNotSent(frame) }
    return 0
}

private let h2ReadBody: nghttp2_data_source_read_callback = { _, _, buf, length, flags, source, userData in
    let stream = Unmanaged<H2Stream>.fromOpaque(source!.pointee.ptr!).takeUnretainedValue()
    return connection(userData).readBody(stream, into: buf!, length: length, flags: flags!)
}

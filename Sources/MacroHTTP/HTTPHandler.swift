import Logging
import MacroDaemon
import MacroEngineCore
import MacroRPC
import NIOCore
import NIOHTTP1
import NIOWebSocket

/// Answers the dashboard's plain HTTP requests: the page and its assets, `GET /config.json`
/// (the channels and their ranges), CodeMirror's files, `GET /metrics` (Prometheus),
/// `POST /rpc` (one JSON-RPC message, its reply as the response), `POST /code` (a one-time code,
/// with the token) and `POST /session` (the token, for a one-time code). Every request passes ``RequestGuard`` first; every response
/// carries a strict Content-Security-Policy and no CORS header. A `GET /ws` that reaches this
/// handler was not upgraded: it is answered with the guard's refusal, or 400.
final class HTTPHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let guardian: RequestGuard
    private let gateway: RPCGateway
    private let files: StaticFiles
    private let maxBodyBytes: Int
    private let codes: OneTimeCodes
    private let logger: Logger
    private var head: HTTPRequestHead?
    private var body: [UInt8] = []
    private var tooLarge = false
    /// The largest body of the current request: `max_line_bytes` with the token,
    /// ``publicBodyBytes`` without it.
    private var bodyLimit = 0
    /// A request without the token (`POST /session`) may send this much at most.
    static let publicBodyBytes = 1024
    /// The request was answered from its head (refused, or too large): its body is not read.
    private var answered = false

    init(guardian: RequestGuard, gateway: RPCGateway, files: StaticFiles, maxBodyBytes: Int, codes: OneTimeCodes, logger: Logger) {
        self.guardian = guardian
        self.gateway = gateway
        self.files = files
        self.maxBodyBytes = maxBodyBytes
        self.codes = codes
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
            body = []
            tooLarge = false
            answered = false
            // Judged from its head, before any body is read: a request without the token, or
            // with a body larger than allowed, never gets a byte of it buffered.
            let decision = guardian.check(head)
            bodyLimit = decision == .allow(authenticated: true) ? maxBodyBytes : Self.publicBodyBytes
            if case .refuse = decision {
                answered = true
                self.head = nil
                respond(to: head, context: context, close: true)
            } else if let length = head.headers.first(name: "Content-Length").flatMap(Int.init), length > bodyLimit {
                answered = true
                self.head = nil
                send(.payloadTooLarge, text: tooLargeText(head), head: head, context: context, close: true)
            }
        case .body(var buffer):
            guard !tooLarge, !answered else { return }
            if body.count + buffer.readableBytes > bodyLimit {
                tooLarge = true
                body = []
            } else if let bytes = buffer.readBytes(length: buffer.readableBytes) {
                body += bytes
            }
        case .end:
            guard let head else { return }
            self.head = nil
            respond(to: head, context: context)
        }
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext, close: Bool = false) {
        let path = RequestGuard.path(of: head.uri)
        switch guardian.check(head) {
        case .refuse(let status, let message):
            var headers = HTTPHeaders()
            if status == .unauthorized { headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"macrod\"") }
            logger.debug("dashboard: refused \(head.method) \(path): \(status.code)")
            send(status, text: message + "\n", headers: headers, head: head, context: context, close: close)
            return
        case .allow:
            break
        }
        if tooLarge {
            send(.payloadTooLarge, text: tooLargeText(head), head: head, context: context, close: true)
            return
        }
        switch (head.method, path) {
        case (.POST, "/rpc"): rpc(head: head, context: context)
        case (.POST, "/code"):
            // Only a holder of the token gets here (the guard): a code for the URL `macro dashboard` opens.
            let code = codes.issue()
            let reply: MacroValue = ["code": .string(code), "expiresInMs": .number(Double(OneTimeCodes.lifetime.components.seconds * 1000))]
            send(.ok, body: Array(reply.jsonText().utf8), contentType: "application/json", head: head, context: context)
        case (.POST, "/session"): session(head: head, context: context)
        case (_, "/code"), (_, "/session"):
            send(.methodNotAllowed, text: "405 Method Not Allowed: POST\n", headers: ["Allow": "POST"], head: head, context: context)
        case (_, "/rpc"): send(.methodNotAllowed, text: "405 Method Not Allowed: POST a JSON-RPC message\n", headers: ["Allow": "POST"], head: head, context: context)
        case (.GET, "/ws"): send(.badRequest, text: "400 Bad Request: /ws is a WebSocket endpoint\n", head: head, context: context)
        case (.GET, "/config.json"), (.HEAD, "/config.json"):
            var channels: [MacroValue] = []
            for channel in gateway.channels {
                channels.append(["name": .string(channel.name), "min": .number(channel.minimum), "max": .number(channel.maximum)])
            }
            let config: MacroValue = ["channels": .array(channels), "codemirror": .bool(files.hasCodeMirror)]
            send(.ok, body: Array(config.jsonText().utf8), contentType: "application/json", head: head, context: context)
        case (.GET, "/metrics"), (.HEAD, "/metrics"): metrics(head: head, context: context)
        case (.GET, _), (.HEAD, _):
            if let file = StaticFiles.page[path] ?? (path.hasPrefix("/codemirror/") ? files.codeMirror(path) : nil) {
                send(.ok, body: file.body, contentType: file.contentType, head: head, context: context)
            } else {
                send(.notFound, text: "404 Not Found: \(path)\n", head: head, context: context)
            }
        default:
            send(.methodNotAllowed, text: "405 Method Not Allowed\n", headers: ["Allow": "GET, HEAD"], head: head, context: context)
        }
    }

    /// `POST /session` with `{"code": CODE}`: the token for a one-time code, once, within
    /// ``OneTimeCodes/lifetime``; else 401 saying why. A code presented a second time is logged
    /// (once per code): someone else may have traded it first (it was on a browser's command line).
    private func session(head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let request = try? JSONParser.parse(body, maximumDepth: 4), let code = request["code"].stringValue else {
            send(.badRequest, text: "400 Bad Request: send {\"code\": CODE}, the one-time code of the URL `macro dashboard` opened\n", head: head, context: context)
            return
        }
        do {
            try codes.redeem(code)
        } catch {
            if error == .used {
                logger.warning(
                    "dashboard: a one-time code was presented again after it was traded for the token; if the page that opened it says so, someone else on this machine may have traded it first: restart macrod to make a new token"
                )
            }
            send(.unauthorized, text: "401 Unauthorized: \(error.message)\n", head: head, context: context)
            return
        }
        let reply: MacroValue = ["token": .string(guardian.token.value)]
        send(.ok, body: Array(reply.jsonText().utf8), contentType: "application/json", head: head, context: context)
    }

    /// The 413's text for the current request's limit.
    private func tooLargeText(_ head: HTTPRequestHead) -> String {
        bodyLimit == maxBodyBytes
            ? "413 Payload Too Large: at most \(maxBodyBytes) bytes (config: max_line_bytes)\n"
            : "413 Payload Too Large: at most \(Self.publicBodyBytes) bytes without the token\n"
    }

    /// One JSON-RPC message on a connection that lives for this request only.
    private func rpc(head: HTTPRequestHead, context: ChannelHandlerContext) {
        let connection = gateway.open(context.channel, framing: DiscardFraming())
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        let gateway = gateway
        gateway.handle(body, from: connection).whenComplete { result in
            gateway.close(connection)
            let (handler, context) = loopBound.value
            switch result {
            case .success(let reply?):
                handler.send(.ok, body: reply.bytes, contentType: "application/json", head: head, context: context)
            case .success(nil):
                handler.send(.noContent, body: [], contentType: nil, head: head, context: context)
            case .failure(let error):
                handler.send(.internalServerError, text: "500 Internal Server Error: \(error)\n", head: head, context: context)
            }
        }
    }

    /// Prometheus' scrape: the metrics in its text format (the token as for every request).
    private func metrics(head: HTTPRequestHead, context: ChannelHandlerContext) {
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        gateway.metrics(on: context.eventLoop).whenSuccess { body in
            let (handler, context) = loopBound.value
            handler.send(.ok, body: body, contentType: EngineMetrics.contentType, head: head, context: context)
        }
    }

    private func send(
        _ status: HTTPResponseStatus, text: String, headers: HTTPHeaders = [:], head: HTTPRequestHead,
        context: ChannelHandlerContext, close: Bool = false
    ) {
        send(status, body: Array(text.utf8), contentType: "text/plain; charset=utf-8", headers: headers, head: head, context: context, close: close)
    }

    private func send(
        _ status: HTTPResponseStatus, body: [UInt8], contentType: String?, headers extra: HTTPHeaders = [:],
        head: HTTPRequestHead, context: ChannelHandlerContext, close: Bool = false
    ) {
        var headers = SecurityHeaders.for(host: head.headers.first(name: "Host") ?? "")
        headers.add(contentsOf: extra)
        if let contentType { headers.add(name: "Content-Type", value: contentType) }
        headers.add(name: "Content-Length", value: "\(body.count)")
        let keepAlive = head.isKeepAlive && !close
        headers.add(name: "Connection", value: keepAlive ? "keep-alive" : "close")
        context.write(wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))), promise: nil)
        if head.method != .HEAD, !body.isEmpty {
            var buffer = context.channel.allocator.buffer(capacity: body.count)
            buffer.writeBytes(body)
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        }
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in
            if !keepAlive { channel.close(promise: nil) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A refused upgrade (the guard said no) is reported here too; its request is answered above.
        if error is NIOWebSocketUpgradeError { return }
        logger.debug("dashboard: HTTP connection error: \(error)")
        context.close(promise: nil)
    }
}

/// A one-shot `POST /rpc` connection has nobody to notify: notifications are dropped.
struct DiscardFraming: MessageFraming {
    func write(_ message: RPCMessage, to channel: any Channel) {}
    func drained(_ channel: any Channel) -> EventLoopFuture<Void> { channel.eventLoop.makeSucceededVoidFuture() }
}

/// The headers of every response: a strict Content-Security-Policy (scripts and styles from this
/// server only, no inline code, no framing, WebSocket to this host only), no sniffing, no referrer,
/// no caching. There is no Access-Control-* header: other origins get nothing.
enum SecurityHeaders {
    static func `for`(host: String) -> HTTPHeaders {
        let socket = host.isEmpty ? "" : " ws://\(host)"
        return [
            "Content-Security-Policy":
                "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'\(socket); base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
            "X-Content-Type-Options": "nosniff",
            "X-Frame-Options": "DENY",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Resource-Policy": "same-origin",
            "Cache-Control": "no-store",
        ]
    }
}

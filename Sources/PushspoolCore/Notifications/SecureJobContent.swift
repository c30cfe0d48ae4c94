import Foundation

/// What a secure job says, kept once per job in the registry (never per device) until its
/// `secure_ttl_seconds` pass: enough to give each device the text it would have shown, its
/// language from `localized` and the `From` prefix, as `PayloadRenderer` would have rendered it.
public struct SecureJobContent: Sendable, Equatable {
    public var message: String
    public var from: String?
    public var title: String?
    public var localized: [LanguageTag: LocalizedText]
    public var data: [String: String]
    public var url: String?
    public var image: String?

    public init(message: String, from: String? = nil, title: String? = nil, localized: [LanguageTag: LocalizedText] = [:],
                data: [String: String] = [:], url: String? = nil, image: String? = nil) {
        self.message = message
        self.from = from
        self.title = title
        self.localized = localized
        self.data = data
        self.url = url
        self.image = image
    }

    /// The content of a send job.
    public init(_ send: SendJob) {
        self.init(message: send.message.text, from: send.message.from, title: send.message.title, localized: send.localized,
                  data: send.message.data, url: send.message.native.url, image: send.message.native.image)
    }

    /// Title and text as a device of `language` shows them: the best match among `localized`
    /// (exact, then the primary subtag), else the job's own; `From <from>: ` prefixed. The same
    /// rule the engine applies when it picks a device's rendition (`SendJob.message(in:)`).
    public func shown(in language: LanguageTag?) -> (title: String?, message: String) {
        var m = Message(text: message, from: from, title: title)
        if let language, !localized.isEmpty, let match = language.bestMatch(in: Set(localized.keys)), let text = localized[match] {
            m = m.localized(text)
        }
        return (m.title, m.displayText)
    }

    /// As stored: one JSON object, keys in a fixed order.
    public var json: JSONValue {
        var pairs: [(String, JSONValue)] = [("message", .string(message))]
        if let from { pairs.append(("from", .string(from))) }
        if let title { pairs.append(("title", .string(title))) }
        if !localized.isEmpty {
            pairs.append(("localized", .object(localized.keys.sorted().map { key in
                let text = localized[key]!
                var entry: [(String, JSONValue)] = [("message", .string(text.message))]
                if let t = text.title { entry.append(("title", .string(t))) }
                return (key.value, .object(entry))
            })))
        }
        if !data.isEmpty { pairs.append(("data", .object(data.keys.sorted().map { ($0, .string(data[$0]!)) }))) }
        if let url { pairs.append(("url", .string(url))) }
        if let image { pairs.append(("image", .string(image))) }
        return .object(pairs)
    }

    /// Reads `json`'s form back; nil when it is not that form.
    public init?(json: JSONValue) {
        guard let message = json["message"]?.stringValue else { return nil }
        self.init(message: message, from: json["from"]?.stringValue, title: json["title"]?.stringValue,
                  url: json["url"]?.stringValue, image: json["image"]?.stringValue)
        if case .object(let entries)? = json["localized"] {
            for (key, value) in entries {
                guard let tag = LanguageTag(key), let m = value["message"]?.stringValue else { return nil }
                localized[tag] = LocalizedText(message: m, title: value["title"]?.stringValue)
            }
        }
        if case .object(let entries)? = json["data"] {
            for (key, value) in entries { data[key] = value.stringValue ?? "" }
        }
    }
}

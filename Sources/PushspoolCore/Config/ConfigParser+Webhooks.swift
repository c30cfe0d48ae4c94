/// The `webhooks` array: each entry's URL (https, or http to loopback), secret, events and apps.
extension ConfigParser.Reader {
    mutating func webhooks(_ v: JSONValue?, into c: inout Config) {
        guard let v, v != .null else { return }
        guard case .array(let items) = v else { problem("webhooks", "must be an array of webhooks, got \(v.typeName)"); return }
        let appIDs = c.apps.keys.sorted()
        for (i, item) in items.enumerated() {
            let key = "webhooks[\(i)]"
            guard let w = object(item, key, allowed: ConfigKeys.webhook) else {
                if item == .null { problem(key, "must be an object") }
                continue
            }
            var ok = true
            let url = required(w["url"], "\(key).url")
            if !url.isEmpty, let why = Self.webhookURLProblem(url) { problem("\(key).url", why); ok = false }
            if w["secret"] == nil || w["secret"] == .null {
                problem("\(key).secret", "is required (the key receivers check Pushspool-Signature with; write \"env:NAME\")")
                ok = false
            }
            let secret = string(w["secret"], "\(key).secret")
            if let s = secret, unset["\(key).secret"] == nil, s.utf8.count < 16 {
                problem("\(key).secret", "must be at least 16 characters")
                ok = false
            }
            var events: [WebhookConfig.Event] = []
            if let list = w["events"], list != .null {
                if case .array(let names) = list, !names.isEmpty {
                    for (j, name) in names.enumerated() {
                        if let text = name.stringValue, let e = WebhookConfig.Event(rawValue: text) {
                            if !events.contains(e) { events.append(e) }
                        } else {
                            let shown = name.stringValue.map(JSONValue.quoted) ?? name.typeName
                            let expected = WebhookConfig.Event.allCases.map(\.rawValue).joined(separator: ", ")
                            problem("\(key).events[\(j)]", "unknown event \(shown) (expected \(expected))")
                            ok = false
                        }
                    }
                } else {
                    problem("\(key).events", "must be a non-empty array of event names")
                    ok = false
                }
            } else {
                problem("\(key).events", "is required (job.finished, device.unregistered)")
                ok = false
            }
            var apps: [String]?
            if let list = w["apps"], list != .null {
                if case .array(let names) = list, !names.isEmpty {
                    apps = []
                    for (j, name) in names.enumerated() {
                        guard let id = name.stringValue, c.apps[id] != nil else {
                            let shown = name.stringValue.map(JSONValue.quoted) ?? name.typeName
                            problem("\(key).apps[\(j)]", "unknown app \(shown) (expected \(appIDs.joined(separator: ", ")))")
                            ok = false
                            continue
                        }
                        apps?.append(id)
                    }
                } else {
                    problem("\(key).apps", "must be a non-empty array of app names")
                    ok = false
                }
            }
            let privateAddresses = bool(w["private_addresses"], "\(key).private_addresses") ?? false
            guard ok, let secret else { continue }
            var hook = WebhookConfig(url: url, secret: Secret(secret), events: events, apps: apps)
            hook.privateAddresses = privateAddresses
            c.webhooks.append(hook)
        }
    }

    /// Why `url` cannot be a webhook's, nil when it can. Names the host at most: a URL's path
    /// or query may carry a receiver's token.
    static func webhookURLProblem(_ url: String) -> String? {
        guard let p = WebhookConfig.parts(url) else {
            return "must be an https URL with a plain host name or address (no user info, spaces or escapes)"
        }
        if !p.https && !WebhookConfig.isLoopback(p.host) {
            return "must be https (plain http only to a loopback address such as 127.0.0.1), got an http URL to \(p.host)"
        }
        return nil
    }
}

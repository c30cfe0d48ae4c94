import PushspoolCore

/// Compact JWS: base64url(header).base64url(claims).base64url(signature).
public enum JWT {
    /// Signs ordered header and claims objects. ES256 for EC keys, RS256 for RSA keys.
    public static func sign(header: [(String, JSONValue)], claims: [(String, JSONValue)], key: SigningKey) throws -> String {
        let signingInput = Base64URL.encode(JSONValue.object(header).encoded()) + "." +
            Base64URL.encode(JSONValue.object(claims).encoded())
        let signature = try key.signSHA256(Array(signingInput.utf8))
        return signingInput + "." + Base64URL.encode(signature)
    }
}

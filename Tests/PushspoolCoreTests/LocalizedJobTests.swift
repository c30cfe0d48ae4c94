import Testing
import PushspoolCore

@Suite struct LocalizedJobTests {
    static func parse(_ text: String) throws(JobError) -> SendJob {
        let job = try JobParser.parse(Array(text.utf8), fileName: "j.json")
        guard case .send(let send) = job.kind else { preconditionFailure("not a send job") }
        return send
    }

    @Test func parsesAndCanonicalizesLanguages() throws {
        let send = try Self.parse(#"{"to_tag": "a", "pns": "apns", "from": "bob", "message": "hi", "title": "T", "localized": {"pt-br": {"message": "olá", "title": "Oi"}, "fr": {"message": "salut"}}}"#)
        #expect(send.localized.keys.map(\.value).sorted() == ["fr", "pt-BR"])
        let pt = send.message(in: LanguageTag("pt-BR"))
        #expect(pt.displayText == "From bob: olá")
        #expect(pt.title == "Oi")
        // A language without a title of its own has none (not the default language's title).
        #expect(send.message(in: LanguageTag("fr")).title == nil)
        #expect(send.message(in: nil).displayText == "From bob: hi")
    }

    @Test(arguments: [
        (#""localized": []"#, "localized: must be a non-empty object of language → {\"message\", \"title\"?}, got array"),
        (#""localized": {}"#, "localized: must be a non-empty object of language → {\"message\", \"title\"?}, got object"),
        (#""localized": {"f_r": {"message": "x"}}"#, "localized.f_r: \"f_r\" is not a BCP 47 language tag such as fr, pt-BR or zh-Hant"),
        (#""localized": {"fr": {"title": "x"}}"#, "localized.fr.message: required"),
        (#""localized": {"fr": {"message": ""}}"#, "localized.fr.message: must be a non-empty string"),
        (#""localized": {"fr": {"mesage": "x"}}"#, "localized.fr.mesage: unknown field (did you mean \"message\"?)"),
        (#""localized": {"fr": "salut"}"#, "localized.fr: must be an object with \"message\" and optionally \"title\", got string"),
        (#""localized": {"fr": {"message": "a"}, "FR": {"message": "b"}}"#, "localized.FR: names fr again"),
    ])
    func refusesBadLocalizedTexts(_ field: String, _ message: String) {
        let error = #expect(throws: JobError.self) { try Self.parse(#"{"to_tag": "a", "pns": "apns", "message": "hi", \#(field)}"#) }
        #expect(error?.problems.map(\.description).contains(message) == true, "\(error?.problems.map(\.description) ?? [])")
    }

    @Test func everyLocalizedTextIsSizeChecked() {
        let long = String(repeating: "x", count: 5000)
        let error = #expect(throws: JobError.self) {
            try Self.parse(#"{"to_tag": "a", "pns": "apns", "message": "hi", "localized": {"de": {"message": "\#(long)"}}}"#)
        }
        #expect(error?.problems.first?.field == "localized.de.message")
    }

    @Test func hubAudiencesAreNarrowedSoEachDeviceGetsItsBestMatchOnly() throws {
        let keys: Set<LanguageTag> = [LanguageTag("pt")!, LanguageTag("pt-BR")!, LanguageTag("fr")!]
        let audience = Audience.tag("username:alice")
        #expect(audience.narrowed(to: LanguageTag("pt"), among: keys).hubTags == "username:alice && lang:pt && !lang:pt-BR")
        #expect(audience.narrowed(to: LanguageTag("pt-BR"), among: keys).hubTags == "username:alice && lang:pt-BR")
        #expect(audience.narrowed(to: nil, among: keys).hubTags == "username:alice && !lang:fr && !lang:pt && !lang:pt-BR")
        #expect(Audience.broadcast.narrowed(to: LanguageTag("fr"), among: keys).hubTags == "lang:fr")
        #expect(audience.narrowed(to: nil, among: []) == audience)
        let expr = Audience.expression(try TagExpression.parse("a || b"), source: "a || b")
        #expect(expr.narrowed(to: LanguageTag("fr"), among: keys).hubTags == "(a || b) && lang:fr")

        // Against every kind of device, the narrowed audiences select exactly one text each,
        // the same one the direct route's best match picks.
        let deviceLanguages: [LanguageTag?] = [nil, LanguageTag("pt"), LanguageTag("pt-BR"), LanguageTag("pt-PT"),
                                               LanguageTag("fr"), LanguageTag("fr-CA"), LanguageTag("de")]
        for lang in deviceLanguages {
            let tags = Set(["username:alice"] + (lang?.hubTags ?? []))
            let chosen = ([nil] + keys.sorted()).filter { key in
                audience.narrowed(to: key, among: keys).tagExpression?.matches(tags) == true
            }
            #expect(chosen.count == 1, "\(String(describing: lang))")
            #expect(chosen.first == lang?.bestMatch(in: keys), "\(String(describing: lang))")
        }
    }
}

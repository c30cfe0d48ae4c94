import Testing
import PushspoolCore

@Suite struct LanguageTagTests {
    @Test(arguments: [
        ("fr", "fr"), ("FR", "fr"), ("pt-br", "pt-BR"), ("zh-hant-tw", "zh-Hant-TW"), ("es-419", "es-419"),
        ("sr-Latn", "sr-Latn"), ("de-CH-1996", "de-CH-1996"),
    ])
    func canonicalizes(_ text: String, _ canonical: String) {
        #expect(LanguageTag(text)?.value == canonical)
    }

    @Test(arguments: ["", "-", "fr-", "-fr", "fr--CA", "f r", "123", "fr_CA", "abcdefghi", "fr-abcdefghi", "fré"])
    func refuses(_ text: String) {
        #expect(LanguageTag(text) == nil)
    }

    @Test func bestMatchIsExactThenPrimary() throws {
        let available: Set<LanguageTag> = [LanguageTag("pt")!, LanguageTag("pt-BR")!, LanguageTag("es")!]
        #expect(LanguageTag("pt-BR")!.bestMatch(in: available)?.value == "pt-BR")
        #expect(LanguageTag("pt-PT")!.bestMatch(in: available)?.value == "pt")
        #expect(LanguageTag("es-MX")!.bestMatch(in: available)?.value == "es")
        #expect(LanguageTag("fr")!.bestMatch(in: available) == nil)
        #expect(LanguageTag("pt")!.bestMatch(in: [LanguageTag("pt-BR")!]) == nil)
    }

    @Test func hubTagsCarryThePrimarySubtagToo() {
        #expect(LanguageTag("pt-BR")!.hubTags == ["lang:pt-BR", "lang:pt"])
        #expect(LanguageTag("fr")!.hubTags == ["lang:fr"])
    }
}

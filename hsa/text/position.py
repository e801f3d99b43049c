"""Words with which a text points at where other text stands ("the rules below", "las
herramientas listadas más abajo", "ci-dessous", "weiter unten", "le regole qui sotto",
"инструменты перечислены ниже", "الأدوات المذكورة أدناه"), in the languages other than English,
Chinese and Japanese that harnesses are written in: Spanish, Portuguese, French, German,
Italian, Dutch, Polish, Turkish, Indonesian, Vietnamese, Russian, Ukrainian, Greek, Hebrew,
Arabic, Hindi and Korean. The prompt transforms (which keep a prompt's order and places where
its text points at positions) and the skill rewrite (which keeps a skill's order where its
text does) add them to their English, Chinese and Japanese words.

Read generously: text kept in order only loses a variant, while text reordered under "the
section below" points the model at the wrong one. A threshold ("sotto 500 euro", "acima de 500
reais") is no position.
"""

from __future__ import annotations

# A noun of what a prompt or skill is made of, in each language, before "next", "previous".
_ES_NOUNS = r"secci[oó]n|secciones|reglas|herramientas|habilidades|instrucciones|pasos|notas"
_PT_NOUNS = r"se[cç][aã]o|se[cç][oõ]es|regras|ferramentas|habilidades|instru[cç][oõ]es|passos"
_FR_NOUNS = r"section|sections|règles|outils|instructions|étapes|compétences"
_DE_NOUNS = r"abschnitt\w*|regeln|werkzeuge|tools|anweisungen|schritte|fähigkeiten"
_IT_NOUNS = r"sezione|sezioni|regole|strumenti|istruzioni|competenze|passaggi|note|elenco"
# Where a number follows, an "above"/"below" is a threshold.
_NO_AMOUNT = r"(?!\s+(?:de|del|di|à|a)?\s*[\d$€£¥R])"
# Likewise in the other scripts' words ("выше 500 ₽", "powyżej 100 zł").
_NO_NUMBER = r"(?!\s*[\d$€£¥₽₴₺₹])"
_RU_NOUNS = r"раздел\w*|правил\w*|инструмент\w*|навык\w*|инструкци\w*|списк\w*"
# "Below"/"above" alone are also "lower"/"higher" ("показание ниже предыдущего", "выше нормы"):
# a position where it ends a clause, or beside a word for what is shown ("перечисленные ниже").
_CLAUSE_END = r"(?=\s*(?:[.,:;)!?»]|$))"
_RU_SHOWN = (
    r"(?:(?:перечислен|приведён|приведен|указан|описан|представлен|показан|изложен)"
    r"(?:ы|о|а|н\w*)?\b|см\.?)"
)

POSITION = (
    r"(?:\b(?:"
    # Spanish
    rf"(?:más\s+)?(?:abajo|arriba){_NO_AMOUNT}|a\s+continuación|anteriormente|susodich[oa]s?"
    rf"|(?:{_ES_NOUNS})\s+(?:siguientes?|anterior(?:es)?|precedentes?|posteriores?)"
    rf"|(?:siguientes?|anteriores?)\s+(?:{_ES_NOUNS})"
    # Portuguese
    rf"|(?:mais\s+)?(?:abaixo|acima){_NO_AMOUNT}|a\s+seguir|supracitad\w*"
    rf"|(?:{_PT_NOUNS})\s+(?:seguintes?|anterior(?:es)?)"
    # French
    r"|ci-dessous|ci-dessus|ci-après|ci-avant|plus\s+(?:haut|bas|loin)|précédemment"
    r"|susmentionn\w*"
    rf"|(?:{_FR_NOUNS})\s+(?:suivante?s?|précédente?s?)"
    # German
    r"|(?:weiter\s+)?(?:oben|unten)|nachstehend\w*|vorstehend\w*|untenstehend\w*|obenstehend\w*"
    r"|obige[nrs]?|nachfolgend\w*"
    rf"|(?:folgende[nrs]?|vorherige[nrs]?)\s+(?:{_DE_NOUNS})"
    # Italian
    r"|qui\s+(?:sotto|sopra)|più\s+(?:sopra|sotto|avanti)|di\s+seguito|in\s+precedenza"
    r"|(?:elencat|indicat|riportat|descritt|mostrat|citat|menzionat)[aoie]\s+"
    r"(?:qui\s+|più\s+)?(?:sopra|sotto|avanti)"
    r"|sopra\s*(?:elencat|riportat|indicat|citat|descritt)\w*"
    r"|sotto\s*(?:elencat|riportat|indicat)\w*"
    r"|suddett[aoie]|sottostant[ei]|soprastant[ei]|in\s+fondo\s+al"
    r"|(?<!di\s)(?:sopra|sotto)(?=\s*[.,:;)!?]|\s*$)|sotto\s+trovi"
    rf"|(?:{_IT_NOUNS})\s+(?:successiv[aoie]|precedent[ei]|seguent[ei])"
    # Dutch
    r"|hieronder|hierboven|hiervoor|hierna|(?:de\s+)?volgende\s+(?:secties?|regels|tools|"
    r"stappen|vaardigheden|instructies)"
    # Polish
    rf"|poniżej{_NO_NUMBER}|powyżej{_NO_NUMBER}|następując\w+|wymienion\w+\s+(?:niżej|wyżej)"
    # Turkish
    r"|aşağıda(?:ki)?|yukarıda(?:ki)?|aşağıdaki|yukarıdaki"
    # Indonesian
    r"|di\s+bawah\s+ini|di\s+atas\s+ini|berikut\s+ini|tersebut\s+di\s+atas"
    # Vietnamese
    r"|dưới\s+đây|ở\s+trên|sau\s+đây|nêu\s+trên"
    # Russian and Ukrainian
    rf"|(?:ниже|выше|нижче|вище){_CLAUSE_END}|{_RU_SHOWN}\s+(?:ниже|выше)"
    rf"|(?:ниже|выше)\s+{_RU_SHOWN}"
    r"|вышеуказанн\w*|вышеперечисленн\w*|вышеизложенн\w*|нижеследующ\w*|нижеперечисленн\w*"
    rf"|следующ\w*\s+(?:{_RU_NOUNS})|предыдущ\w*\s+(?:{_RU_NOUNS})"
    r"|наступн\w*\s+(?:розділ\w*|правил\w*|інструмент\w*|крок\w*)"
    # Greek
    r"|παρακάτω|παραπάνω|ακόλουθ\w*|προηγούμεν\w*"
    # Arabic
    r"|أدناه|ادناه|أعلاه|اعلاه|فيما\s+يلي"
    r"|(?:الأدوات|القواعد|الأقسام|الخطوات|التعليمات|المهارات|الفحوص)\s+(?:التالية|الآتية|السابقة)"
    r")\b"
    # Hindi, whose vowel signs end a word where \b sees no boundary (नीचे); Hebrew and Korean,
    # whose prefixes and particles are written without a space (שלהלן, 아래의, 위에서)
    r"|नीचे|ऊपर|निम्नलिखित|निम्न|उपर्युक्त|उपरोक्त|आगे\s+दिए|להלן|לעיל|למטה|למעלה"
    r"|아래|위의|위에서|위에\s+(?:나열|설명|적힌)|다음(?:의)?\s+(?:도구|섹션|규칙|단계|지침|스킬))"
)

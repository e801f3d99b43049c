"""Words with which a text points at where other text stands ("the rules below", "las
herramientas listadas más abajo", "ci-dessous", "weiter unten", "le regole qui sotto"), in the
European languages harnesses are often written in: Spanish, Portuguese, French, German and
Italian. The prompt transforms (which keep a prompt's order and places where its text points at
positions) and the skill rewrite (which keeps a skill's order where its text does) add them to
their English, Chinese and Japanese words.

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

EUROPEAN_POSITION = (
    r"\b(?:"
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
    r")\b"
)

"""Whether a text reads as English (hsa.text.language), and the English phrase tables that ask
it: a German, Spanish or French text keeps words it spells as English does."""

from __future__ import annotations

import pytest

from hsa.augment.recipe import Recipe
from hsa.augment.variant import Variant
from hsa.dataset.pipeline import augment_episode
from hsa.errors import HsaError
from hsa.model.episode import Episode
from hsa.model.gold import Gold
from hsa.model.harness import Harness
from hsa.text.language import _function_words, mixes_latin_words, reads_english


@pytest.mark.parametrize(
    ("text", "english"),
    [
        ("Returns the price of a product.", True),
        ("Maximum number of results to return", True),
        ("non-empty list of ids, in order", True),
        ("Sucht freie Termine in einem Zeitraum. Maximum 14 Tage pro Abfrage.", False),
        ("Zeitraum der Suche (Minimum ein Tag).", False),
        ("Details zur Sprechstunde", False),
        ("Devuelve los horarios libres del médico.", False),
        ("Renvoie la liste des rendez-vous.", False),
        ("Restituisce il prezzo del prodotto.", False),
        ("Retorna a lista de consultas do paciente.", False),
        ("Haalt de lijst van afspraken op.", False),
        # words in code and in names are not the text's own
        ("Maximum 14 jours après from_date, pour la suite.", False),
        ("Do not retry; e.g. wait for the job.", True),
    ],
)
def test_a_text_reads_as_the_language_of_its_function_words(text, english):
    assert reads_english(text, default=not english) is english


def test_a_text_without_function_words_takes_its_documents_judgement():
    # "e" of "e.g." is no Portuguese "and" (BFCL's "Music genre e.g., Rock, Pop").
    for text in ("Order ID", "Details", "Maximum", "", "Special dietary needs, e.g. vegan."):
        assert reads_english(text, default=True) is True
        assert reads_english(text, default=False) is False
    # A word in code or in a name is none: "from" in `from_date` made this French text English.
    assert reads_english("Maximum 14 jours dès `from_date` inclus.", default=False) is False
    # The texts of a document are read together.
    assert not reads_english("Details", "Holt die Stammdaten einer Patientin.")


def test_a_word_of_another_language_that_english_uses_too_is_refused(tmp_path):
    path = tmp_path / "words.yaml"
    path.write_text("en: [the, and, is]\nnl: [het, een, is]\n")
    with pytest.raises(HsaError, match=r"nl lists English function words \['is'\]"):
        _function_words(path)
    english, others = _function_words()  # the shipped table passes its own check
    assert "the" in english and set(others) == {"de", "fr", "es", "it", "pt", "nl"}


def _tool(name: str, description: str, properties: dict) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties},
    }


def _variants(harness: Harness, transform: str, seeds: int = 12) -> list[Episode]:
    episode = Episode(
        "e",
        harness,
        ({"role": "user", "content": "hallo"},),
        Gold.from_dict({"no_call": True}, n_messages=1),
    )
    out = []
    for seed in range(seeds):
        recipe = Recipe.from_dict(
            {
                "recipe_version": 1,
                "name": f"t-{transform}",
                "seed": seed,
                "variants_per_episode": 1,
                "keep_original": False,
                "pipeline": [{transform: {}}],
            }
        )
        (variant,) = augment_episode(recipe, episode)
        assert isinstance(variant, Variant), str(variant)
        out.append(variant.episode)
    return out


def test_descriptions_of_a_german_harness_keep_the_words_german_spells_as_english_does():
    """A clinic's German tools: "Maximum 14 Tage" came back as "Greatest 14 Tage" and
    "Details zur Sprechstunde" as "Particulars zur Sprechstunde". The harness's one English
    description is still reworded; a description without a function word ("Details") is German
    in a German harness."""
    german = {
        "findSlots": "Sucht freie Termine bei einer Ärztin. Maximum 14 Tage pro Abfrage.",
        "listDoctors": "Listet die Ärzte mit Details zur Sprechstunde.",
        "getPatient": "Details",
        "cancelAppointment": "Storniert einen Termin und gibt die Bestätigung zurück.",
    }
    tools = [_tool(name, text, {"id": {"type": "string"}}) for name, text in german.items()]
    tools.append(_tool("getPrice", "Gets the price of a slot based on its date.", {}))
    harness = Harness.from_dict({"name": "klinik", "tools": tools})
    english_changed = 0
    for variant in _variants(harness, "tool_description_paraphrase"):
        for name, text in german.items():
            assert variant.harness.tool(name).description == text
        english_changed += variant.harness.tool("getPrice").description != tools[-1]["description"]
    assert english_changed


def test_a_skill_body_keeps_english_phrases_in_its_german_blocks():
    """A body with an English paragraph and a German one, both writing "e.g.": the English one
    may be reworded, the German one keeps what it wrote."""
    german = "Nenne dem Patienten die Details, e.g. den Preis und die Dauer der Behandlung."
    english = "Always answer the patient briefly and politely, e.g. in one sentence."
    body = f"# Termine\n\n{english}\n\n{german}\n"
    harness = Harness.from_dict(
        {
            "name": "klinik",
            "skills": [{"id": "termine", "description": "Termine.", "content": body}],
            "tools": [_tool("findSlots", "Sucht freie Termine.", {})],
        }
    )
    english_changed = 0
    for variant in _variants(harness, "skill_content_rewrite", seeds=16):
        content = variant.harness.skill("termine").content
        assert german in content.replace("\n", " ") or german in content
        english_changed += english not in content
    assert english_changed


def test_a_skill_of_kanji_and_katakana_in_a_japanese_harness_keeps_its_words():
    """A warehouse harness in Japanese: one skill body is kanji and katakana alone (no
    hiragana), which read by itself is no Japanese, and Chinese synonyms were written into its
    terms (商品区分 -> 宝贝区分, 注意事項 -> 关注事項). The harness is the document."""
    terms = "# 出荷区分\n\n- 商品区分: 冷蔵商品。\n- 注意事項: 別梱包。\n"
    harness = Harness.from_dict(
        {
            "name": "souko",
            "skills": [
                {"id": "shukka", "description": "出荷の区分です。", "content": terms},
                {
                    "id": "annai",
                    "description": "案内の仕方です。",
                    "content": "# 案内\n\n在庫を確認してから、丁寧にお答えください。\n",
                },
            ],
            "tools": [_tool("CreateShipment", "出荷を作成します。", {})],
        }
    )
    for variant in _variants(harness, "skill_content_rewrite", seeds=16):
        content = variant.harness.skill("shukka").content
        for word in ("商品区分", "冷蔵商品", "注意事項"):
            assert word in content, content


@pytest.mark.parametrize(
    ("text", "mixed"),
    [
        # Hinglish, however many of its words are Latin
        ("UPI transaction fail हो गया तो bank server timeout देखें। अगर phone खो गया है", True),
        (
            "Customer ka UPI payment fail हो गया, please check the transaction status और refund करें",
            True,
        ),
        # an English text quoting a reply in Arabic: its English words are its own
        (
            'Porting takes three days. Tell the customer: "سيتم نقل رقمك خلال ثلاثة أيام" and '
            "never promise a date. Check the donor operator first.",
            False,
        ),
    ],
)
def test_code_mixed_prose_is_read_outside_quotes(text, mixed):
    assert mixes_latin_words([text], set()) is mixed

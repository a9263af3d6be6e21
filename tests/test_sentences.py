"""Sentence splitting per script family, and the sentence-count sanity check."""

import pytest

from xling.data.sentences import LANGUAGES, check_sentence_count, split_sentences, splitter


@pytest.mark.parametrize(
    "lang, text, expected",
    [
        (
            "en",
            "Dr. Smith went to Washington. He arrived at 5 p.m. on Monday! Did Mr. Jones come? Yes.",
            ["Dr. Smith went to Washington.", "He arrived at 5 p.m. on Monday!", "Did Mr. Jones come?", "Yes."],
        ),
        (
            "de",
            "Das ist z. B. ein Test. Er kam am 3. Oktober an.",
            ["Das ist z. B. ein Test.", "Er kam am 3. Oktober an."],
        ),
        ("zh", "我今天很高兴。你呢？我们走吧！好的", ["我今天很高兴。", "你呢？", "我们走吧！", "好的"]),
        ("hi", "मैं घर जा रहा हूँ। तुम कहाँ जा रहे हो? ठीक है।", ["मैं घर जा रहा हूँ।", "तुम कहाँ जा रहे हो?", "ठीक है।"]),
        (
            "ur",
            "میں گھر جا رہا ہوں۔ تم کہاں جا رہے ہو؟ ٹھیک ہے۔",
            ["میں گھر جا رہا ہوں۔", "تم کہاں جا رہے ہو؟", "ٹھیک ہے۔"],
        ),
        ("ar", "ذهبت إلى المدرسة. هل ذهبت أنت؟ نعم ذهبت.", ["ذهبت إلى المدرسة.", "هل ذهبت أنت؟", "نعم ذهبت."]),
        ("el", "Πού πας; Πάω σπίτι. Τι κάνεις;", ["Πού πας;", "Πάω σπίτι.", "Τι κάνεις;"]),
        (
            "ru",
            "Я иду домой. Ты куда? Это было в 1990 г. в Москве.",
            ["Я иду домой.", "Ты куда?", "Это было в 1990 г. в Москве."],
        ),
        ("vi", "Tôi đi học. Bạn đi đâu?", ["Tôi đi học.", "Bạn đi đâu?"]),
        ("sw", "Ninakwenda nyumbani. Unakwenda wapi?", ["Ninakwenda nyumbani.", "Unakwenda wapi?"]),
    ],
)
def test_split_by_script(lang, text, expected):
    assert split_sentences(text, lang) == expected


def test_greek_question_mark_u037e_is_a_boundary_and_kept():
    assert split_sentences("Πού πας\u037e Πάω σπίτι.", "el") == ["Πού πας\u037e", "Πάω σπίτι."]


def test_thai_has_no_punctuation_spaces_separate_sentences():
    text = "วันนี้อากาศดีมาก ฉันจะไปเที่ยวทะเล เธอจะไปด้วยไหม"
    assert split_sentences(text, "th") == ["วันนี้อากาศดีมาก", "ฉันจะไปเที่ยวทะเล", "เธอจะไปด้วยไหม"]


def test_line_breaks_end_sentences_and_whitespace_is_collapsed():
    assert split_sentences("One  sentence\twithout end\n\nTwo. Three.\n", "en") == [
        "One sentence without end",
        "Two.",
        "Three.",
    ]
    assert split_sentences("  \n", "en") == []


@pytest.mark.parametrize("lang, opener", [("en", '"'), ("en", "("), ("ru", "«"), ("fr", "«")])
def test_unbalanced_quote_does_not_glue_a_paragraph(lang, opener):
    closer = {"«": "»", "(": ")"}.get(opener, opener)
    text = f"He said {opener}no. " + " ".join(f"Sentence number {i} is {closer}here{opener}." for i in range(200))
    sentences = split_sentences(text, lang, max_chars=500)
    assert len(sentences) > 150
    assert max(map(len, sentences)) <= 500
    assert "".join(sentences).replace(" ", "") == text.replace(" ", "")  # nothing lost or changed


def test_every_configured_language_splits():
    for lang in LANGUAGES:
        assert split_sentences("A b c. D e f.", lang), lang


@pytest.mark.parametrize("lang", ["xx", "EN", "eng", ""])
def test_unknown_language(lang):
    with pytest.raises(ValueError, match="no sentence splitter configured"):
        split_sentences("A b.", lang)
    with pytest.raises(ValueError):
        splitter(lang)


def test_splitter_binds_language():
    assert splitter("zh")("一。二。") == ["一。", "二。"]


def test_check_sentence_count(caplog):
    check_sentence_count("sw", 1000, 1000, 0.9)
    check_sentence_count("sw", 950, 1000, 0.9)
    assert "fewer than the 1000 asked" in caplog.text
    with pytest.raises(ValueError, match=r"sw: got 10 sentences but 1000 were asked"):
        check_sentence_count("sw", 10, 1000, 0.9)
    with pytest.raises(ValueError, match="min_fraction"):
        check_sentence_count("sw", 10, 1000, 1.5)

"""lib.common.templates: seeded sentences, labels, swaps and token labels."""
import numpy as np
import pytest

from lib.common.templates import TemplateEngine, token_labels


@pytest.fixture
def eng():
    return TemplateEngine(
        templates=["{name} works as a {occupation} .", "The {occupation} met {friend:name} in New York ."],
        lexicons={"name": [("Alice", {"gender": "f"}), ("Bob", {"gender": "m"}), ("Carol Ann", {"gender": "f"})],
                  "occupation": ["nurse", "software engineer"]},
    )


def test_seeded_and_labelled(eng):
    a = eng.sample(50, np.random.default_rng(0))
    b = eng.sample(50, np.random.default_rng(0))
    assert [s.text for s in a] == [s.text for s in b]
    assert {s.template for s in a} == {0, 1}
    for s in a:
        for slot, (i, j) in s.spans.items():
            assert s.text[i:j] == s.slots[slot]
        assert s.labels["template"] == s.template
        if s.template == 0:
            assert s.labels["gender"] == ("m" if s.slots["name"] == "Bob" else "f")
        else:
            assert s.labels["friend.gender"] == ("m" if s.slots["friend"] == "Bob" else "f")


def test_swap_changes_only_one_slot(eng):
    s = eng.render(0, {"name": "Bob", "occupation": "nurse"})
    t = eng.swap(s, "name", "Carol Ann")
    assert s.text == "Bob works as a nurse ." and t.text == "Carol Ann works as a nurse ."
    assert t.labels["gender"] == "f" and t.slots["occupation"] == "nurse"
    with pytest.raises(ValueError, match="not in lexicon"):
        eng.swap(s, "name", "Zed")
    with pytest.raises(ValueError, match="no slot"):
        eng.swap(s, "friend", "Bob")


def test_words_and_token_labels(eng):
    s = eng.render(1, {"occupation": "software engineer", "friend": "Carol Ann"})
    words = s.words()
    assert ("software", "occupation") in words and ("engineer", "occupation") in words
    assert ("Ann", "name") in words and ("York", None) in words
    from tokenizers import Tokenizer, models, pre_tokenizers

    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(sorted({w for w, _ in words}))}, unk_token="met"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    [(ids, labs)] = token_labels(tok, [s])
    assert len(ids) == len(words) and labs == [lab for _, lab in words]


def test_bad_templates(eng):
    with pytest.raises(ValueError, match="not defined"):
        TemplateEngine(["{colour} car"], {"name": ["x"]})
    with pytest.raises(ValueError, match="appears twice"):
        TemplateEngine(["{name} and {name}"], {"name": ["x"]})
    with pytest.raises(ValueError, match="Generator"):
        eng.sample(2, 0)

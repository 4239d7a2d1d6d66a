"""Graph-Transformer (Duan et al. 2020, reconstructed): layer behaviour, the exact reduction to a standard layer,
Table 2 parameter counts and cached generation (the fresh-process export: test_graph_and_syntax_infused_export.py)."""

import pytest
import torch

from hf_syntax import GraphTransformerConfig, GraphTransformerForConditionalGeneration, SyntaxTransformerConfig
from hf_syntax import SyntaxTransformerForConditionalGeneration
from hf_syntax.attention import padding_mask
from hf_syntax.graph_transformer import ATTENTION_PARTS, GraphEncoderLayer, GraphStreams
from hf_syntax.layers import EncoderLayer
from hf_syntax.variants import ARCHITECTURES, DUAN2020_SIZES, PAPER_TABLE_ROWS, config_for
from random_weights import spread_weights

TINY = dict(
    vocab_size=90, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
)
# (fusion, half_dim, shared_qkv): every fusion with each flag on and off, and all four flag combinations.
VARIANTS = [
    ("sum", False, False), ("sum", True, True), ("gate", False, True), ("gate", True, False),
    ("self_gate", False, False), ("self_gate", True, True),
]


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


# The readings of the lost equations the config can select (the default first), as config overrides.
READINGS = {
    "default": {},
    "residual_branch": {"graph_increment": "residual_branch"},
    "middle_full": {"graph_middle_stream": "full"},
    "first_layer_graph_middle_full": {"graph_first_layer": "graph", "graph_middle_stream": "full"},
    "sum_new_groups": {"graph_new_groups": "sum"},
    "mean_new_groups": {"graph_new_groups": "mean"},
}


def _untrained_parameters(model) -> set[str]:
    input_ids, attention_mask = _batch()
    model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :6]).loss.backward()
    return {name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0}


@pytest.mark.parametrize(("fusion", "half_dim", "shared_qkv"), VARIANTS)
def test_every_variant_trains_every_parameter(fusion, half_dim, shared_qkv):
    torch.manual_seed(0)
    model = GraphTransformerForConditionalGeneration(_graph_config(fusion, half_dim, shared_qkv, dropout=0.0))
    input_ids, attention_mask = _batch()
    output = model(input_ids=input_ids, attention_mask=attention_mask, labels=input_ids[:, :6], output_attentions=True)
    output.loss.backward()
    assert output.logits.shape == (3, 6, 90)
    assert output.encoder_last_hidden_state.shape == (3, 8, 32)
    # The first layer is a standard one (the high part only); the split layers have high, middle_incremental and
    # middle_previous.
    assert [weights.shape for weights in output.encoder_attentions] == [(3, 4, 8, 8), (3, 3 * 4, 8, 8)]
    no_gradient = [name for name, p in model.named_parameters() if p.grad is None or not p.grad.abs().sum() > 0]
    assert no_gradient == []
    first, split = model.model.encoder.layers
    assert isinstance(split, GraphEncoderLayer)
    assert list(first.out_projections) == ["high"] and first.fusion_gate is None
    assert sorted(split.projections) == (["incremental", "previous"] if shared_qkv else sorted(ATTENTION_PARTS))
    assert split.projections[next(iter(split.projections))].q_proj.out_features == (16 if half_dim else 32)
    assert (split.fusion_gate is not None) == (fusion == "gate")


@pytest.mark.parametrize("fusion", ["sum", "gate"])
@pytest.mark.parametrize("reading", READINGS)
def test_every_reading_trains_every_parameter(reading, fusion):
    torch.manual_seed(0)
    model = GraphTransformerForConditionalGeneration(_graph_config(fusion, dropout=0.0, **READINGS[reading]))
    assert _untrained_parameters(model) == set()


def test_first_layer_graph_with_middle_previous_leaves_the_first_layers_p_reading_weights_untrained():
    """Why the first layer is a standard one by default: split with P = F_{-1} = 0, its middle parts reduce to
    their biases and the weights that read P get no gradient. Nothing else is untrained."""
    torch.manual_seed(0)
    config = _graph_config(graph_first_layer="graph", graph_middle_stream="previous", dropout=0.0)
    no_gradient = _untrained_parameters(GraphTransformerForConditionalGeneration(config))
    first_layer = "model.encoder.layers.0."
    assert {f"{first_layer}projections.middle_incremental.k_proj.weight",
            f"{first_layer}projections.middle_previous.q_proj.weight"} <= no_gradient
    assert all(name.startswith(first_layer) and ".middle_" in name for name in no_gradient), no_gradient


@pytest.mark.parametrize("increment", ["residual_branch", "output_difference"])
@pytest.mark.parametrize("training", [False, True])
def test_first_layer_is_exactly_a_standard_layer(training, increment):
    """graph_first_layer="standard": layer 1 computes exactly the standard post-LN `EncoderLayer` holding the high
    part's weights (with the same seed also under dropout), and hands layer 2 P = F_0 and I = the increment."""
    config = _graph_config("gate", dropout=0.3, attention_dropout=0.0, graph_increment=increment)
    torch.manual_seed(0)
    graph, standard = GraphEncoderLayer(config, 0), EncoderLayer(config, 0)
    spread_weights(graph, std=0.2)
    with torch.no_grad():
        for name in ("q_proj", "k_proj", "v_proj"):
            getattr(standard.self_attn, name).load_state_dict(getattr(graph.projections["high"], name).state_dict())
        standard.self_attn.out_proj.load_state_dict(graph.out_projections["high"].state_dict())
        for name in ("self_attn_layer_norm", "ffn", "final_layer_norm"):
            getattr(standard, name).load_state_dict(getattr(graph, name).state_dict())
    assert sum(p.numel() for p in graph.parameters()) == sum(p.numel() for p in standard.parameters())
    graph.train(training), standard.train(training)
    embeddings = torch.randn(3, 8, 32)
    mask = padding_mask(_batch()[1], embeddings.dtype)
    torch.manual_seed(5)
    expected = standard(embeddings, mask).hidden_states
    torch.manual_seed(5)
    got, streams = _output_and_streams(graph(embeddings, mask))
    assert torch.equal(got, expected)
    assert torch.equal(streams.previous, embeddings)
    if increment == "output_difference":
        assert torch.equal(streams.incremental, got - embeddings)
    else:  # the self-attention output the layer added before its LayerNorm
        graph.eval()
        attended = graph.out_projections["high"](_attention_by_hand(graph.projections["high"], embeddings, mask)[1])
        assert torch.allclose(graph(embeddings, mask).streams.incremental, attended, atol=1e-5)


def _attention_by_hand(projections, queries, keys, mask=None, heads=4):
    """(weights (batch, heads, n, n), attended (batch, n, inner)) of one multi-head attention part; with three
    arguments the third is the mask and keys = queries."""
    if mask is None:
        keys, mask = queries, keys
    batch, length, _ = queries.shape

    def split(states):
        return states.view(batch, length, heads, -1).transpose(1, 2)

    query, key, value = split(projections.q_proj(queries)), split(projections.k_proj(keys)), split(projections.v_proj(keys))
    weights = torch.softmax(query @ key.transpose(-1, -2) / query.shape[-1] ** 0.5 + mask, dim=-1)
    return weights, (weights @ value).transpose(1, 2).reshape(batch, length, -1)


@pytest.mark.parametrize("reading", READINGS)
def test_attention_parts_read_the_configured_streams(reading):
    """Recompute the second layer's three attention parts by hand from the streams the reading names: I is the
    first layer's attention output ("residual_branch") or F_1 - F_0 ("output_difference"); P is F_0 ("previous") or
    F_1 ("full"). A split first layer (graph_first_layer="graph") reads I = F_0 and P = 0 (or F_0 with "full")."""
    options = READINGS[reading]
    torch.manual_seed(0)
    model = spread_weights(GraphTransformerForConditionalGeneration(_graph_config(**options)), std=0.2).eval()
    input_ids, attention_mask = _batch()
    first, second = model.model.encoder.layers
    with torch.no_grad():
        output = model.model.encoder(input_ids, attention_mask=attention_mask, output_hidden_states=True,
                                     output_attentions=True)
        mask = padding_mask(attention_mask, torch.float32)
        embeddings, first_output = output.hidden_states[:2]
        if options.get("graph_first_layer") == "graph":
            first_streams = {"incremental": embeddings, "previous": torch.zeros_like(embeddings)}
            if options.get("graph_middle_stream") == "full":
                first_streams["previous"] = embeddings
            first_branch = 0  # sum fusion: the three parts' outputs
            for index, (part, (query_stream, key_stream)) in enumerate(ATTENTION_PARTS.items()):
                expected, attended = _attention_by_hand(
                    first.projections[part], first_streams[query_stream], first_streams[key_stream], mask
                )
                assert torch.allclose(output.attentions[0][:, 4 * index : 4 * (index + 1)], expected, atol=1e-6), part
                first_branch = first_branch + first.out_projections[part](attended)
        else:
            weights, attended = _attention_by_hand(first.projections["high"], embeddings, mask)
            assert torch.allclose(output.attentions[0], weights, atol=1e-6)
            first_branch = first.out_projections["high"](attended)
        output_difference = model.config.graph_increment == "output_difference"
        incremental = first_output - embeddings if output_difference else first_branch
        previous = first_output if options.get("graph_middle_stream") == "full" else embeddings
        streams = {"incremental": incremental, "previous": previous}
        for index, (part, (query_stream, key_stream)) in enumerate(ATTENTION_PARTS.items()):
            expected, _ = _attention_by_hand(second.projections[part], streams[query_stream], streams[key_stream], mask)
            assert torch.allclose(output.attentions[1][:, 4 * index : 4 * (index + 1)], expected, atol=1e-5), part


@pytest.mark.parametrize("fusion", ["sum", "gate", "self_gate"])
def test_residual_branch_increment_completes_the_previous_representation(fusion):
    """With graph_increment="residual_branch" the streams a layer hands over add up to its full representation
    before the LayerNorm (P + I = the fusion of the four groups): the layer's two norms and FFN applied to P + I
    give its output."""
    torch.manual_seed(0)
    layer = GraphEncoderLayer(_graph_config(fusion, graph_increment="residual_branch"), 1)
    layer = spread_weights(layer, std=0.2).eval()
    full, previous, incremental = torch.randn(3, 8, 32), torch.randn(3, 8, 32), torch.randn(3, 8, 32)
    mask = padding_mask(_batch()[1], full.dtype)
    with torch.no_grad():
        output, streams = _output_and_streams(layer(full, mask, streams=GraphStreams(previous, incremental)))
        assert torch.equal(streams.previous, full)
        normed = layer.self_attn_layer_norm(streams.previous + streams.incremental)
        assert torch.allclose(layer.final_layer_norm(normed + layer.ffn(normed)), output, atol=1e-5)
        assert not torch.allclose(streams.incremental, output - full, atol=1e-2)


def test_mean_new_groups_averages_the_three_parts_before_the_fusion():
    """graph_new_groups="mean": the new groups are (h + m1 + m2) / 3. With I taken as the residual branch, a sum layer
    hands over h + m1 + m2 and a gate layer with the same attention weights g * (mean - low), g recomputed by hand."""
    torch.manual_seed(0)
    summed = spread_weights(GraphEncoderLayer(_graph_config("sum", graph_increment="residual_branch"), 1), std=0.2)
    gated = GraphEncoderLayer(_graph_config("gate", graph_increment="residual_branch", graph_new_groups="mean"), 1)
    spread_weights(gated, seed=1, std=0.2)
    summed.load_state_dict(gated.state_dict(), strict=False)  # the same attention weights; the gate is gated's own
    full, previous, incremental = torch.randn(3, 8, 32), torch.randn(3, 8, 32), torch.randn(3, 8, 32)
    mask = padding_mask(_batch()[1], full.dtype)
    with torch.no_grad():
        new = summed.eval()(full, mask, streams=GraphStreams(previous, incremental)).streams.incremental
        gate = torch.sigmoid(gated.fusion_gate(torch.cat([new / 3, full], dim=-1)))
        increment = gated.eval()(full, mask, streams=GraphStreams(previous, incremental)).streams.incremental
    assert torch.allclose(increment, gate * (new / 3 - full), atol=1e-6)
    assert not torch.allclose(increment, gate * (new - full), atol=1e-2)
    with pytest.raises(ValueError, match="graph_new_groups='mean'.*self_gate"):
        GraphEncoderLayer(_graph_config("self_gate", graph_new_groups="mean"), 1)


def test_unset_new_groups_follow_the_fusion():
    """The text sums sum's four groups with equal weights, and is silent on how the gate's new group is built: unset,
    graph_new_groups is "sum" for sum and self_gate and "mean" for gate; a value given explicitly wins."""
    assert {fusion: _graph_config(fusion).graph_new_groups for fusion in ("sum", "gate", "self_gate")} == {
        "sum": "sum", "gate": "mean", "self_gate": "sum"}
    assert GraphTransformerConfig().graph_new_groups == "mean"
    assert config_for("graph_transformer_sum").graph_new_groups == "sum"
    assert _graph_config("gate", graph_new_groups="sum").graph_new_groups == "sum"
    assert _graph_config("sum", graph_new_groups="mean").graph_new_groups == "mean"


def test_graph_config_saved_before_graph_new_groups_keeps_summing(tmp_path):
    """A gate checkpoint whose config.json predates graph_new_groups was trained with the parts summed: every way of
    loading it (the config class, AutoConfig, AutoModelForSeq2SeqLM) keeps them summed, and the encoder computes what
    it computed when saved."""
    import json

    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    torch.manual_seed(0)
    saved = spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", graph_new_groups="sum")))
    saved.eval().save_pretrained(tmp_path)
    config_file = tmp_path / "config.json"
    raw = json.loads(config_file.read_text())
    del raw["graph_new_groups"]
    config_file.write_text(json.dumps(raw))
    assert GraphTransformerConfig.from_pretrained(tmp_path).graph_new_groups == "sum"
    assert AutoConfig.from_pretrained(tmp_path).graph_new_groups == "sum"
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    input_ids, attention_mask = _batch()
    with torch.no_grad():
        before = saved.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        after = loaded.get_encoder()(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        assert torch.equal(before, after)
        loaded.config.graph_new_groups = "mean"  # what the gate's default would have made of it
        averaged = type(loaded)(loaded.config).eval()
        averaged.load_state_dict(loaded.state_dict())
        assert not torch.allclose(averaged.get_encoder()(input_ids=input_ids, attention_mask=attention_mask)
                                  .last_hidden_state, before, atol=1e-3)


@pytest.mark.parametrize("fusion", ["sum", "gate", "self_gate"])
def test_default_increment_is_the_difference_of_layer_outputs(fusion):
    """The default graph_increment="output_difference": I = F_l - F_{l-1}, the layer's whole change (attention parts,
    feed-forward and LayerNorms), and P = F_{l-1}, so the next layer's P + I is this layer's output."""
    torch.manual_seed(0)
    config = _graph_config(fusion)
    assert config.graph_increment == "output_difference"
    layer = spread_weights(GraphEncoderLayer(config, 1), std=0.2).eval()
    full, previous, incremental = torch.randn(3, 8, 32), torch.randn(3, 8, 32), torch.randn(3, 8, 32)
    mask = padding_mask(_batch()[1], full.dtype)
    with torch.no_grad():
        output, streams = _output_and_streams(layer(full, mask, streams=GraphStreams(previous, incremental)))
    assert torch.equal(streams.previous, full)
    assert torch.allclose(streams.incremental, output - full, atol=1e-6)
    assert torch.allclose(streams.previous + streams.incremental, output, atol=1e-6)


def _output_and_streams(layer_output):
    return layer_output.hidden_states, layer_output.streams


def test_encoder_hands_each_layer_the_previous_ones_streams():
    torch.manual_seed(0)
    model = spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", encoder_layers=3))).eval()
    input_ids, attention_mask = _batch()
    encoder = model.model.encoder
    with torch.no_grad():
        output = encoder(input_ids, attention_mask=attention_mask, output_hidden_states=True)
        mask = padding_mask(attention_mask, torch.float32)
        hidden, streams = output.hidden_states[0], None
        for layer in encoder.layers:
            hidden, streams = _output_and_streams(layer(hidden, mask, streams=streams))
    assert torch.allclose(hidden, output.last_hidden_state, atol=1e-6)


@pytest.mark.parametrize(("fusion", "half_dim", "shared_qkv"), [("gate", True, True), ("self_gate", False, False)])
def test_padding_does_not_leak_into_real_tokens(fusion, half_dim, shared_qkv):
    config = _graph_config(fusion, half_dim, shared_qkv)
    model = spread_weights(GraphTransformerForConditionalGeneration(config)).eval()
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
    return spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", True, True))).eval()


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


def test_every_ablation_run_builds_the_reading_it_names(tmp_path):
    """benchmarks/studies/multi30k_de_en_graph.yaml (issue 14's 1000-step ablation): each run's overrides build a
    model whose fusion and reading fields are the ones its name says."""
    from hub_support import tiny_tokenizer
    import yaml

    from hf_syntax.recipes.translation.model import build_model
    from hf_syntax.recipes.translation.schema import load_recipe_config
    from hf_syntax.study.processes import CODE_ROOT, config_path
    from hf_syntax.study.study_file import Study, run_overrides

    study_file = CODE_ROOT / "benchmarks" / "studies" / "multi30k_de_en_graph.yaml"
    study, raw = Study.load(study_file), yaml.safe_load(study_file.read_text())
    tokenizer, readings, defaults = tiny_tokenizer(), {}, GraphTransformerConfig(graph_fusion="sum")
    fields = ("graph_first_layer", "graph_increment", "graph_middle_stream", "graph_new_groups")
    for name in study.runs:
        overrides = [*run_overrides(study, name, 42), f"output_dir={tmp_path / name}"]
        config = build_model(load_recipe_config(config_path(study), overrides), tokenizer, tokenizer).config
        assert config.max_position_embeddings == 128 and not config.graph_half_dim, name
        if name == "baseline":
            assert config.encoder_layer_type == "standard"
            continue
        fusion, reading = name.split("_", 1)
        named = dict(option.removeprefix("model.kwargs.").split("=") for option in raw["anchors"][reading])
        readings[name] = tuple(getattr(config, field) for field in fields)
        assert config.graph_fusion == fusion and {field: getattr(config, field) for field in named} == named, name
        unnamed = [field for field in fields if field not in named]
        assert all(getattr(config, field) == getattr(defaults, field) for field in unnamed), name
    assert readings["sum_post_ln_increment"] == tuple(getattr(defaults, field) for field in fields)
    assert len(set(readings.values())) == 5 and len(readings) == 10


def test_every_configurable_encoder_layer_type_has_a_class():
    from hf_syntax.configuration_syntax_transformer import ENCODER_LAYER_TYPES
    from hf_syntax.stacks import ENCODER_LAYERS

    assert set(ENCODER_LAYERS) == set(ENCODER_LAYER_TYPES)
    assert ENCODER_LAYERS["graph"] is GraphEncoderLayer and ENCODER_LAYERS["standard"] is EncoderLayer



def test_branch_scale_diagnosis_measures_what_each_layer_adds(tmp_path):
    """benchmarks/analyses/encoder_branch_scale.py reads each layer's residual and branch through hooks. For a standard
    layer the branch is its self-attention output, recomputed here; a gate model reports its gate from layer 2 on
    (layer 1 is a standard layer)."""
    import importlib.util
    from pathlib import Path

    from hub_support import tiny_tokenizer

    script_path = Path(__file__).resolve().parents[1] / "benchmarks" / "analyses" / "encoder_branch_scale.py"
    spec = importlib.util.spec_from_file_location("encoder_branch_scale", script_path)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    tokenizer = tiny_tokenizer()
    sizes = {**TINY, "vocab_size": len(tokenizer), "pad_token_id": tokenizer.pad_token_id}
    sentences = ["The cat is sleeping.", "She bought two books yesterday on the way home."]
    batch = tokenizer(sentences, return_tensors="pt", padding=True)
    real = batch["attention_mask"].bool()

    def rms(states):
        return states[real].pow(2).mean().sqrt().item()

    standard = spread_weights(SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**sizes)), std=0.2)
    standard.eval().save_pretrained(tmp_path / "standard")
    tokenizer.save_pretrained(tmp_path / "standard")
    rows = script.branch_scales(tmp_path / "standard", sentences)
    encoder = standard.get_encoder()
    with torch.no_grad():
        hidden = encoder(**batch, output_hidden_states=True).hidden_states
        mask = padding_mask(batch["attention_mask"], hidden[0].dtype)
        for index, layer in enumerate(encoder.layers):
            attended = layer.self_attn(hidden[index], attention_mask=mask)[0]
            assert rows[index]["residual_rms"] == pytest.approx(rms(hidden[index]), rel=1e-5)
            assert rows[index]["branch_rms"] == pytest.approx(rms(attended), rel=1e-4)
            change = rms(hidden[index + 1] - hidden[index]) / rms(hidden[index])
            cosine = torch.cosine_similarity(hidden[index + 1][real], hidden[index][real], dim=-1).mean().item()
            assert rows[index]["output_change"] == pytest.approx(change, rel=1e-4)
            assert rows[index]["output_cosine"] == pytest.approx(cosine, rel=1e-4)
            assert rows[index]["mean_gate"] is None

    gated = spread_weights(GraphTransformerForConditionalGeneration(_graph_config("gate", **sizes)), std=0.2)
    gated.eval().save_pretrained(tmp_path / "gate")
    tokenizer.save_pretrained(tmp_path / "gate")
    rows = script.branch_scales(tmp_path / "gate", sentences)
    assert rows[0]["mean_gate"] is None and 0 < rows[1]["mean_gate"] < 1
    with torch.no_grad():
        hidden = gated.get_encoder()(**batch, output_hidden_states=True).hidden_states
    # Layer 1 is a standard layer (its only part is the branch, it reads no streams); layer 2 reads P = F_0 and
    # I = F_1 - F_0 (the default increment).
    assert rows[0]["part_rms"] == {"high": pytest.approx(rows[0]["branch_rms"], rel=1e-5)}
    assert rows[0]["increment_rms"] is None and rows[0]["dims_fixed_new"] is None
    assert list(rows[1]["part_rms"]) == ["high", "middle_incremental", "middle_previous"]
    assert rows[1]["previous_rms"] == pytest.approx(rms(hidden[0]), rel=1e-5)
    assert rows[1]["increment_rms"] == pytest.approx(rms(hidden[1] - hidden[0]), rel=1e-4)

    # A gate forced open in half of the dimensions and shut in the other half: a fixed mask, every unit saturated.
    gate = gated.get_encoder().layers[1].fusion_gate
    with torch.no_grad():
        gate.weight.zero_()
        gate.bias.copy_(torch.tensor([20.0, -20.0]).repeat(gate.bias.numel() // 2))
    gated.save_pretrained(tmp_path / "gate")
    rows = script.branch_scales(tmp_path / "gate", sentences)
    assert rows[1]["mean_gate"] == pytest.approx(0.5)
    assert rows[1]["gate_below_0.1"] == pytest.approx(0.5) and rows[1]["gate_above_0.9"] == pytest.approx(0.5)
    assert rows[1]["dims_fixed_low"] == rows[1]["dims_fixed_new"] == TINY["d_model"] // 2

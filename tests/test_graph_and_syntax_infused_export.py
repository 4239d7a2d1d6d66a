"""Save -> load with `trust_remote_code` in a fresh interpreter where hf_syntax cannot be imported -> same beam-search
output, for a Graph-Transformer and a syntax-infused model (one subprocess for both: starting one costs seconds)."""

import json

import torch

from fresh_process import run_without_hf_syntax
from hf_syntax import GraphTransformerConfig, GraphTransformerForConditionalGeneration
from hf_syntax import SyntaxInfusedConfig, SyntaxInfusedForConditionalGeneration
from random_weights import spread_weights

TINY = dict(
    vocab_size=90, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=48, decoder_ffn_dim=48, max_position_embeddings=64,
)


def test_both_variants_load_in_a_fresh_process_without_hf_syntax(tmp_path):
    graph = spread_weights(GraphTransformerForConditionalGeneration(GraphTransformerConfig(**TINY))).eval()
    infused_config = SyntaxInfusedConfig(**TINY, feature_embedding_dim=8)
    infused = spread_weights(SyntaxInfusedForConditionalGeneration(infused_config)).eval()
    generator = torch.Generator().manual_seed(4)
    inputs = {
        "input_ids": torch.randint(3, 90, (2, 7), generator=generator),
        "attention_mask": torch.tensor([[1] * 7, [1] * 5 + [0] * 2]),
        "pos_ids": torch.randint(3, 20, (2, 7), generator=generator),
        "case_ids": torch.randint(3, 7, (2, 7), generator=generator),
        "subword_tags": torch.randint(3, 7, (2, 7), generator=generator),
    }
    settings = dict(num_beams=4, max_new_tokens=10, output_scores=True, return_dict_in_generate=True)
    expected = {}
    for name, model in (("graph", graph), ("infused", infused)):
        model.save_pretrained(tmp_path / name)
        given = inputs if name == "infused" else {k: inputs[k] for k in ("input_ids", "attention_mask")}
        output = model.generate(**given, **settings)
        expected[name] = {"sequences": output.sequences.tolist(), "scores": output.sequences_scores.tolist()}
    assert (tmp_path / "graph" / "graph_transformer.py").exists()
    assert json.loads((tmp_path / "infused" / "config.json").read_text())["model_type"] == "syntax_infused"

    as_lists = json.dumps({name: values.tolist() for name, values in inputs.items()})
    code = (
        "import json, torch\n"
        "from transformers import AutoModelForSeq2SeqLM\n"
        f"inputs = {{k: torch.tensor(v) for k, v in {as_lists}.items()}}\n"
        "plain = {k: inputs[k] for k in ('input_ids', 'attention_mask')}\n"
        f"settings = {settings!r}\n"
        "result = {}\n"
        "for name in ('graph', 'infused'):\n"
        f"    model = AutoModelForSeq2SeqLM.from_pretrained({str(tmp_path)!r} + '/' + name, trust_remote_code=True)\n"
        "    assert type(model).__module__.startswith('transformers_modules'), type(model).__module__\n"
        "    output = model.eval().generate(**(inputs if name == 'infused' else plain), **settings)\n"
        "    result[name] = {'sequences': output.sequences.tolist(), 'scores': output.sequences_scores.tolist()}\n"
        "try:\n"
        "    model.generate(**plain, max_new_tokens=3)\n"
        "except ValueError as error:\n"
        "    result['missing'] = str(error)\n"
        "print(json.dumps(result))\n"
    )
    got = json.loads(run_without_hf_syntax(code, tmp_path).strip().splitlines()[-1])
    for name in ("graph", "infused"):
        assert got[name]["sequences"] == expected[name]["sequences"], name
        assert torch.allclose(torch.tensor(got[name]["scores"]), torch.tensor(expected[name]["scores"]), atol=1e-5)
    assert "pos_ids" in got["missing"] and "SyntaxFeaturizer" in got["missing"]

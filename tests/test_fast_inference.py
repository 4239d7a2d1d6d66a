"""Fast CPU inference: the CTranslate2 export computes what the PyTorch model computes, refuses what it cannot, and
the pipelines / CLI run it; the int8 PyTorch path stays close to float32.

Models are tiny with spread random weights (outputs vary from token to token, so a wrong mapping shows), fed real
sentences from the small_parallel_enja sample shipped in the package.
"""

import json
import subprocess
import sys

import pytest
import sacrebleu
import torch
from transformers import AutoModelForSeq2SeqLM, MarianConfig, MarianMTModel

pytest.importorskip("ctranslate2", reason="pip install 'hf-syntax[ctranslate2]' (CTranslate2 from PyPI)")

from hf_syntax import config_for  # noqa: E402
from hf_syntax.data.corpus import read_parallel  # noqa: E402
from hf_syntax.data.tokenizer import train_tokenizer  # noqa: E402
from hf_syntax.fast_inference import (  # noqa: E402
    CTranslate2Seq2SeqModel,
    NotExpressibleError,
    export_ctranslate2,
    optimize_for_cpu,
)
from hf_syntax.convert.marian import from_marian  # noqa: E402
from hf_syntax.recipes.translation.data import resolve_data_path  # noqa: E402
from hf_syntax.serving.loading import load_pipeline  # noqa: E402
from random_weights import spread_weights  # noqa: E402

JAPANESE_PARSER = "spacy:ja_ginza"
SIZES = dict(d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4, decoder_attention_heads=4,
             encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=96, dropout=0.0)

# name -> (architecture, overrides): every kind of model CTranslate2 can express.
EXPRESSIBLE = {
    "baseline": ("transformer_abs", {}),
    "untied_gelu_bias_unscaled": ("transformer_abs", {
        "activation_function": "gelu", "share_encoder_decoder_embeddings": False, "tie_word_embeddings": False,
        "output_bias": True, "scale_embedding": False}),
    "relative_keys_values": ("transformer_noabs", {"relative_position_clip": 2}),
    "relative_keys_encoder_only": ("transformer_noabs", {
        "relative_position_clip": 3, "relative_position_values": False, "relative_position_in_decoder": False}),
    "no_positions": ("transformer_noabs", {}),
    "dbsa": ("dbsa_enc_dec", {"parse_layer_encoder": 2, "parse_layer_decoder": 1}),
    "dbsa_scaled_query": ("dbsa_enc", {"parse_layer_encoder": 1, "parse_score_form": "scaled"}),
    "syntax_infused_concat_sum": ("syntax_infused", {"feature_embedding_dim": 8}),
    "syntax_infused_concat_each": ("syntax_infused_concat_each", {"feature_embedding_dim": 4}),
    "syntax_infused_add": ("syntax_infused_add", {}),
    "syntax_infused_pos": ("syntax_infused_pos", {"feature_embedding_dim": 8}),
}


@pytest.fixture(scope="module")
def pairs():
    columns, _ = read_parallel(resolve_data_path("sample_data:small_parallel_enja/train.ja.gz"),
                               resolve_data_path("sample_data:small_parallel_enja/train.en.gz"), max_pairs=400)
    return columns["source"], columns["target"]


@pytest.fixture(scope="module")
def tokenizer(pairs):
    source, target = pairs
    return train_tokenizer(source + target, vocab_size=400, model_max_length=96)


def tiny_model(tokenizer, architecture, gain=3.0, **overrides):
    config = config_for(architecture, vocab_size=len(tokenizer), **{**SIZES, **overrides})
    model = spread_weights(AutoModelForSeq2SeqLM.from_config(config), fan_in_gain=gain).eval()
    model.generation_config.update(max_new_tokens=12)
    return model


def encode(tokenizer, model, sentences, seed=0):
    """Padded source batch; feature models get random (but valid) feature ids, the same for both backends."""
    batch = dict(tokenizer(sentences, padding=True, return_tensors="pt"))
    generator = torch.Generator().manual_seed(seed)
    sizes = {"pos_ids": model.config.num_pos_tags, "case_ids": model.config.num_case_tags,
             "subword_tags": model.config.num_subword_tags, "dep_depths": 6}
    for column in model.config.needs_source_features:
        batch[column] = torch.randint(0, sizes[column], batch["input_ids"].shape, generator=generator)
    return batch


def target_log_probs(model, batch, labels):
    with torch.no_grad():
        logits = model(**batch, decoder_input_ids=model.prepare_decoder_input_ids_from_labels(labels)).logits
    return torch.log_softmax(logits, -1).gather(-1, labels[..., None])[..., 0]


def ctranslate2_log_probs(ct2, tokenizer, batch, labels):
    columns = {name: batch[name] for name in ct2.config.needs_source_features}
    sources = [ct2._source_tokens(row, batch["input_ids"], batch["attention_mask"], columns)
               for row in range(len(labels))]
    targets = [tokenizer.convert_ids_to_tokens(row[row != tokenizer.pad_token_id].tolist())[:-1] for row in labels]
    return [torch.tensor(result.log_probs) for result in ct2.translator.score_batch(sources, targets)]


def strip(ids, pad_id):
    return [row[row != pad_id].tolist() for row in ids]


@pytest.mark.parametrize("name", sorted(EXPRESSIBLE))
def test_ctranslate2_scores_and_greedy_outputs_equal_pytorch(name, tokenizer, pairs, tmp_path):
    architecture, overrides = EXPRESSIBLE[name]
    model = tiny_model(tokenizer, architecture, **overrides)
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"))
    sources, targets = pairs[0][:12], pairs[1][:12]
    batch = encode(tokenizer, model, sources)
    labels = tokenizer(text_target=targets, padding=True, return_tensors="pt")["input_ids"]

    ours = target_log_probs(model, batch, labels)
    for row, theirs in enumerate(ctranslate2_log_probs(ct2, tokenizer, batch, labels)):
        torch.testing.assert_close(theirs, ours[row, : len(theirs)], atol=1e-4, rtol=1e-4)

    with torch.no_grad():
        expected = model.generate(**batch, num_beams=1)
    produced = ct2.generate(**batch, num_beams=1)
    assert strip(produced, tokenizer.pad_token_id) == strip(expected, tokenizer.pad_token_id)
    assert len({tuple(row) for row in strip(expected, tokenizer.pad_token_id)}) > 1, "degenerate test model"


def test_a_converted_marian_model_exports(tokenizer, pairs, tmp_path):
    marian = spread_weights(MarianMTModel(MarianConfig(
        vocab_size=len(tokenizer), d_model=48, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=96, decoder_ffn_dim=96, max_position_embeddings=96,
        pad_token_id=0, decoder_start_token_id=1, eos_token_id=2, bos_token_id=1, forced_eos_token_id=None)),
        fan_in_gain=3.0).eval()
    model = from_marian(marian)
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"))
    batch = encode(tokenizer, model, pairs[0][:8])
    with torch.no_grad():
        expected = marian.generate(**batch, num_beams=1, max_new_tokens=12)
    assert strip(ct2.generate(**batch, num_beams=1, max_new_tokens=12), 0) == strip(expected, 0)


@pytest.mark.parametrize(("architecture", "overrides", "reason"), [
    ("transformer_rel", {}, "skips the absolute position encodings"),
    ("transformer_dep_rel", {}, "dependency_depths attention term (dependency_depth_clip > 0)"),
    ("transformer_dep_noabs", {}, "buckets are computed from `dep_depths` of each sentence's parse"),
    ("graph_transformer_half_dim_gate", {}, "Graph-Transformer layers"),
    ("dbsa_enc_dec", {"parse_head": "add", "parse_layer_encoder": 1, "parse_layer_decoder": 1},
     "one head count for a whole stack"),
])
def test_what_ctranslate2_cannot_express_is_refused_with_the_reason(architecture, overrides, reason, tokenizer,
                                                                     tmp_path):
    config = config_for(architecture, vocab_size=len(tokenizer), **SIZES, **overrides)
    model = AutoModelForSeq2SeqLM.from_config(config)
    with pytest.raises(NotExpressibleError, match="PyTorch path") as error:
        export_ctranslate2(model, tokenizer, tmp_path / "ct2")
    assert reason in str(error.value)
    assert not (tmp_path / "ct2").exists()


def test_unmapped_generation_options_are_refused(tokenizer, pairs, tmp_path):
    model = tiny_model(tokenizer, "transformer_abs")
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"))
    batch = encode(tokenizer, model, pairs[0][:2])
    with pytest.raises(ValueError, match="do_sample"):
        ct2.generate(**batch, do_sample=True)


def until_end(ids, eos_id):
    """Output ids up to the first end token: finished beam hypotheses are padded with more end tokens."""
    ids = ids.tolist()
    return ids[: ids.index(eos_id, 1) + 1] if eos_id in ids[1:] else ids


def test_beam_search_stops_like_transformers_early_stopping(tokenizer, pairs, tmp_path):
    """CTranslate2 stops a beam search once ``beam_size * patience`` hypotheses are finished; transformers with
    ``early_stopping=True`` once ``num_beams`` are: patience 1 is the same search. A test model whose end-token bias
    makes hypotheses finish at many lengths, so when the search stops changes the outputs (early_stopping=False
    picks other ones)."""
    model = spread_weights(tiny_model(tokenizer, "transformer_abs", output_bias=True), seed=2, fan_in_gain=3.0).eval()
    with torch.no_grad():
        model.lm_head.bias[model.config.eos_token_id] += 4.0
    model.generation_config.update(max_new_tokens=16)
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"))
    batch = encode(tokenizer, model, pairs[0][:64])
    eos = model.config.eos_token_id
    outputs = {}
    with torch.no_grad():
        for early_stopping in (True, False):
            outputs[early_stopping] = [until_end(row, eos) for row in
                                       model.generate(**batch, num_beams=4, early_stopping=early_stopping)]
    assert outputs[True] != outputs[False], "the test model should make the stopping rule matter"
    produced = [until_end(row, eos) for row in ct2.generate(**batch, num_beams=4, early_stopping=True)]
    assert produced == outputs[True]


def test_early_stopping_maps_to_beam_patience(tokenizer, pairs, tmp_path):
    """True is exact (patience 1); transformers' default False goes on searching after ``num_beams`` finished
    hypotheses, which patience 2 approximates (benchmarks/results/ctranslate2_agreement/baseline.md); "never" is refused."""
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(tiny_model(tokenizer, "transformer_abs"), tokenizer,
                                                     tmp_path / "ct2"))
    assert ct2._translate_options({"num_beams": 4, "early_stopping": True})[0]["patience"] == 1
    assert ct2._translate_options({"num_beams": 4})[0]["patience"] == 2  # the generation config's False
    with pytest.raises(ValueError, match="early_stopping='never'"):
        ct2._translate_options({"num_beams": 4, "early_stopping": "never"})


def test_int8_stays_close_to_float32(tokenizer, pairs, tmp_path):
    """int8 weights (CTranslate2) and int8 linear layers (PyTorch path) move target log-probabilities (mean |log p|
    ~ 7 here) by a small fraction of their size; the benchmark measures the BLEU effect on a trained model. How much
    depends on the CPU's int8 kernels (CTranslate2 moves them by ~0.02 on average on one machine, by ~0.1 on an AMD
    EPYC without VNNI), so the bound is relative: under 3% of the mean |log p| over all target tokens. A wrong scale
    or a layer left unquantized moves them by whole nats. Gain 1: the gain-3 test models are chaotic enough that any
    rounding moves them a lot."""
    model = tiny_model(tokenizer, "transformer_abs", gain=1.0)
    float_folder = export_ctranslate2(model, tokenizer, tmp_path / "float32")
    int8_folder = export_ctranslate2(model, tokenizer, tmp_path / "int8", quantization="int8")
    assert json.loads((int8_folder / "hf_syntax_ctranslate2.json").read_text())["quantization"] == "int8"
    assert (int8_folder / "model.bin").stat().st_size < 0.5 * (float_folder / "model.bin").stat().st_size
    sources, targets = pairs[0][:16], pairs[1][:16]
    batch = encode(tokenizer, model, sources)
    labels = tokenizer(text_target=targets, padding=True, return_tensors="pt")["input_ids"]
    reference = target_log_probs(model, batch, labels)
    mask = labels != tokenizer.pad_token_id

    bound = 0.03 * reference.abs()[mask].mean()

    int8 = CTranslate2Seq2SeqModel(int8_folder)
    drifts = [(theirs - reference[row, : len(theirs)]).abs()
              for row, theirs in enumerate(ctranslate2_log_probs(int8, tokenizer, batch, labels))]
    assert 0 < torch.cat(drifts).mean() < bound
    quantized = optimize_for_cpu(model, "int8")
    assert isinstance(quantized.lm_head, torch.ao.nn.quantized.dynamic.Linear)
    drift = (target_log_probs(quantized, batch, labels) - reference).abs()[mask].mean()
    assert 0 < drift < bound
    assert torch.equal(target_log_probs(model, batch, labels), reference), "the original model must stay float32"


@pytest.mark.parametrize(("architecture", "overrides"), [
    ("graph_transformer_half_dim_gate", {}), ("transformer_dep_rel", {}),
    ("dbsa_enc_dec", {"parse_layer_encoder": 1, "parse_layer_decoder": 1})])
def test_torch_int8_path_runs_models_ctranslate2_refuses(architecture, overrides, tokenizer, pairs):
    """Graph layers, dependency depths and parse heads run with int8 linear layers, close to float32."""
    model = tiny_model(tokenizer, architecture, gain=1.0, **overrides)
    batch = encode(tokenizer, model, pairs[0][:12])
    labels = tokenizer(text_target=pairs[1][:12], padding=True, return_tensors="pt")["input_ids"]
    mask = labels != tokenizer.pad_token_id
    quantized = optimize_for_cpu(model, "int8")
    drift = (target_log_probs(quantized, batch, labels) - target_log_probs(model, batch, labels)).abs()[mask]
    assert 0 < drift.mean() < 0.1
    with torch.no_grad():
        assert quantized.generate(**batch, num_beams=2).shape[0] == 12


def test_pipeline_and_cli_run_a_ctranslate2_folder_like_the_pytorch_model(tokenizer, pairs, tmp_path):
    """A syntax-infused model: the CTranslate2 folder keeps the tokenizer and the parser spec, and the pipeline
    parses, aligns and translates exactly as with the PyTorch model (greedy); the CLI exports and translates (with
    two workers)."""
    pytest.importorskip("ja_ginza", reason="pip install ja-ginza (the Japanese parser, extra 'parsers')")
    from hf_syntax.pipelines import syntax_pipeline

    model = tiny_model(tokenizer, "syntax_infused", feature_embedding_dim=8, source_parser=JAPANESE_PARSER,
                       source_pretokenized=True)
    model.generation_config.update(num_beams=1)
    model_dir = tmp_path / "model"
    model.save_pretrained(model_dir)
    tokenizer.save_pretrained(model_dir)
    sentences = pairs[0][:6]
    expected = syntax_pipeline(model, tokenizer)(sentences)

    on_the_fly = load_pipeline(model_dir, backend="ctranslate2")
    assert isinstance(on_the_fly.model, CTranslate2Seq2SeqModel)
    assert on_the_fly(sentences) == expected

    out_dir = tmp_path / "ct2"
    command = [sys.executable, "-m", "hf_syntax.cli"]
    subprocess.run([*command, "export", str(model_dir), str(out_dir), "--format", "ctranslate2"], check=True,
                   capture_output=True)
    saved = json.loads((out_dir / "hf_syntax_ctranslate2.json").read_text())
    assert saved["model_config"]["source_parser"] == JAPANESE_PARSER
    assert (out_dir / "tokenizer.json").is_file() and (out_dir / "generation_config.json").is_file()
    translated = subprocess.run([*command, "translate", "--model", str(out_dir), "--quiet", "--workers", "2"],
                                input="\n".join(sentences) + "\n", capture_output=True, text=True, check=True)
    assert translated.stdout.splitlines() == [item["translation_text"] for item in expected]


def test_cli_refusal_is_a_clear_error(tokenizer, tmp_path):
    model = AutoModelForSeq2SeqLM.from_config(config_for("transformer_dep_rel", vocab_size=len(tokenizer), **SIZES))
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    result = subprocess.run(
        [sys.executable, "-m", "hf_syntax.cli", "export", str(tmp_path / "model"), str(tmp_path / "out"),
         "--format", "ctranslate2"], capture_output=True, text=True)
    assert result.returncode == 2
    assert "error: CTranslate2 cannot compute this dep_rpe model exactly" in result.stderr
    assert "Traceback" not in result.stderr


def test_commands_that_read_the_pytorch_model_name_a_ctranslate2_folder_in_one_line(tokenizer, tmp_path):
    """show and plot-attention read attention weights, which a CTranslate2 folder has not, and translate with
    --backend pytorch asks for the same weights: each was a ValueError traceback."""
    model = tiny_model(tokenizer, "transformer_abs")
    folder = export_ctranslate2(model, tokenizer, tmp_path / "ct2")
    (tmp_path / "one.txt").write_text("私 は 猫 です 。\n", encoding="utf-8")
    command = [sys.executable, "-m", "hf_syntax.cli"]
    for arguments in (["show", "--model", str(folder), "--source", str(tmp_path / "one.txt")],
                      ["plot-attention", "--model", str(folder), "--text", "私 は 猫", "--out", str(tmp_path / "a.png")],
                      ["translate", "--model", str(folder), "--backend", "pytorch"]):
        result = subprocess.run([*command, *arguments], input="私 は 猫 です 。\n", capture_output=True, text=True)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert f"error: {folder} is a CTranslate2 export; it has no PyTorch weights" in result.stderr
        assert "Give the model folder it was exported from" in result.stderr


def test_greedy_bleu_of_both_backends_on_real_sentences(tokenizer, pairs, tmp_path):
    """The two backends' greedy translations of 32 real sentences score the same BLEU against the references."""
    model = tiny_model(tokenizer, "transformer_abs")
    ct2 = CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"))
    sources, references = pairs[0][100:132], pairs[1][100:132]
    batch = encode(tokenizer, model, sources)
    with torch.no_grad():
        ours = tokenizer.batch_decode(model.generate(**batch, num_beams=1), skip_special_tokens=True)
    theirs = tokenizer.batch_decode(ct2.generate(**batch, num_beams=1), skip_special_tokens=True)
    assert theirs == ours
    assert sacrebleu.corpus_bleu(theirs, [references]).score == sacrebleu.corpus_bleu(ours, [references]).score


def test_endpoint_handler_serves_an_exported_folder_with_ctranslate2(tokenizer, pairs, tmp_path):
    """The exported folder's handler.py with backend="ctranslate2" answers like the PyTorch pipeline (greedy)."""
    import importlib.util

    from hf_syntax.hub.export import export
    from hf_syntax.pipelines import syntax_pipeline

    model = tiny_model(tokenizer, "transformer_abs")
    context = {"model_id": "tests/ct2", "results": [{"metric": "loss", "value": 1.0, "split": "train"}]}
    folder = export(model, tokenizer, tmp_path / "hub", context)
    spec = importlib.util.spec_from_file_location("exported_handler", folder / "handler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    handler = module.EndpointHandler(str(folder), backend="ctranslate2")
    assert isinstance(handler.pipeline.model, CTranslate2Seq2SeqModel)
    request = {"inputs": pairs[0][:4], "parameters": {"num_beams": 1, "max_new_tokens": 10}}
    assert handler(request) == syntax_pipeline(model, tokenizer)(pairs[0][:4], num_beams=1, max_new_tokens=10)


@pytest.mark.parametrize(("architecture", "overrides", "end_bias"), [
    ("transformer_dep_rel", {}, 15.0), ("dbsa_enc_dec", {"parse_layer_encoder": 1, "parse_layer_decoder": 1}, 8.0),
    ("graph_transformer_half_dim_gate", {}, 3.0)])
def test_workers_split_the_batch_and_translate_as_one_call(architecture, overrides, end_bias, tokenizer, pairs):
    """``workers=2``: two single-threaded shards (7 rows: 4 + 3, feature columns split alike) whose beam outputs,
    two per sentence, are the tensor of one call (the shorter shard filled with the end token, as beam search fills
    finished rows when the pad id is 0); PyTorch's thread count is restored afterwards."""
    import copy
    import threading

    from hf_syntax.fast_inference.parallel_generation import ParallelGenerate

    model = tiny_model(tokenizer, architecture, output_bias=True, **overrides)
    with torch.no_grad():  # an end-token bias that makes one shard's output shorter, so it must be filled
        model.lm_head.bias[model.config.eos_token_id] += end_bias
    batch = encode(tokenizer, model, pairs[0][20:27])
    settings = dict(num_beams=3, num_return_sequences=2, max_new_tokens=10)
    with torch.no_grad():
        expected = model.generate(**batch, **settings)
    parallel = optimize_for_cpu(copy.deepcopy(model), workers=2)
    assert isinstance(parallel.generate, ParallelGenerate)
    shards = []
    inner = parallel.generate.generate

    def recorded(input_ids, **kwargs):
        output = inner(input_ids, **kwargs)
        shards.append((threading.current_thread().name, input_ids.shape[0], torch.get_num_threads(),
                       {name: kwargs[name].shape[0] for name in model.config.needs_source_features}, output.shape[1]))
        return output

    parallel.generate.generate = recorded
    threads = torch.get_num_threads()
    with torch.no_grad():
        produced = parallel.generate(**batch, **settings)
    assert torch.get_num_threads() == threads
    assert sorted(rows for _, rows, _, _, _ in shards) == [3, 4]
    assert all(name.startswith("hf_syntax_generate") and intra == 1 and set(columns.values()) <= {rows}
               for name, rows, intra, columns, _ in shards)
    assert len({width for *_, width in shards}) == 2, "the test should make one shard's output shorter"
    assert torch.equal(produced, expected)  # finished rows filled as one call fills them (beam search: end token)
    assert len({tuple(row) for row in strip(expected, tokenizer.pad_token_id)}) > 2, "degenerate test model"


def test_ctranslate2_workers_translate_as_one_worker(tokenizer, pairs, tmp_path):
    """Two CTranslate2 workers, each given part of the batch, return the same beam outputs in the input order."""
    model = tiny_model(tokenizer, "transformer_abs")
    folder = export_ctranslate2(model, tokenizer, tmp_path / "ct2")
    batch = encode(tokenizer, model, pairs[0][40:49])
    one, two = CTranslate2Seq2SeqModel(folder), CTranslate2Seq2SeqModel(folder, workers=2)
    expected = one.generate(**batch, num_beams=3)
    assert strip(two.generate(**batch, num_beams=3), 0) == strip(expected, 0)
    assert len({tuple(row) for row in strip(expected, 0)}) > 2, "degenerate test model"


@pytest.mark.parametrize("workers", [0, -2, 1.5])
def test_a_bad_worker_count_is_refused(workers, tokenizer, tmp_path):
    model = tiny_model(tokenizer, "transformer_abs")
    with pytest.raises(ValueError, match="positive number"):
        optimize_for_cpu(model, workers=workers)
    with pytest.raises(ValueError, match="positive number"):
        CTranslate2Seq2SeqModel(export_ctranslate2(model, tokenizer, tmp_path / "ct2"), workers=workers)

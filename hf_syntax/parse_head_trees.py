"""Reading trees out of a DBSA parse head: argmax heads, well-formed trees, word-level heads, attachment score.

The parse head's row t is a distribution over the head of token t, with a self-loop meaning "root" (Deguchi et
al. 2019). Argmax heads may contain cycles; `maximum_spanning_tree` (Chu-Liu-Edmonds) returns the best
well-formed tree instead. `word_heads_from_parse` scores word pairs through the subword-head rule of `hf_syntax.align` (a
word's final subword points to its head word's first or last subword) and decodes a tree over words. The
word <-> subword mapping is `align.py`'s: `word_ids` has the word index of each subword and `NO_WORD` (-1) or None
for special tokens, as `tokenizer(...).word_ids()` or `align.word_ids_from_offsets` give it.

Part of the model core: nothing here reads text. Scoring a parse on gold trees tokenizes them, so it lives on the
text side (`hf_syntax.analysis.parse_scores`).
"""

from dataclasses import dataclass

import numpy as np
import torch

from .columns import IGNORE_INDEX, NO_WORD, SUBWORD_HEAD_RULES
from .parse_head import DBSA_PARSE_HEAD


ENCODER_PARSERS = {"dbsa": (DBSA_PARSE_HEAD.layer_fields["encoder"], DBSA_PARSE_HEAD.encoder_output),
                   "self_parse": ("self_parse_layers", "self_parse_log_probs")}
"""Which encoder parse a score reads: name -> (the config field that switches it on, the encoder output holding it).
"dbsa" is the DBSA encoder parse head, "self_parse" a self-parsing model's bottom parser (`self_parse.py`)."""


def encoder_parse(model, head: str) -> str:
    """The encoder output field of parse `head` (see `ENCODER_PARSERS`), checked to exist in `model`."""
    if head not in ENCODER_PARSERS:
        raise ValueError(f"head must be one of {sorted(ENCODER_PARSERS)}, got {head!r}.")
    field, output = ENCODER_PARSERS[head]
    if not getattr(model.config, field, 0):
        raise ValueError(f"{model.config.model_type} has no encoder parse head for {head!r} ({field} = 0); score a "
                         f"model that has one.")
    return output


def predicted_heads(parse_log_probs: torch.Tensor, attention_mask: torch.Tensor | None = None) -> torch.Tensor:
    """(batch, n, n) parse log-probabilities -> (batch, n) argmax head index per token, -100 on padding rows."""
    heads = parse_log_probs.argmax(dim=-1)
    if attention_mask is not None:
        heads = heads.masked_fill(~attention_mask[:, -heads.shape[1]:].bool(), IGNORE_INDEX)
    return heads


def output_parse_log_probs(model, sequences: torch.Tensor, **source_inputs) -> torch.Tensor:
    """Decoder parse-head log-probabilities for generated `sequences` (as `generate` returns them, starting with the
    decoder start token): row r is the head distribution of token `sequences[r]` over positions 0..r of the same
    `sequences` (row 0, the start token, carries no tree). `source_inputs`: what `generate` got (`input_ids`,
    `attention_mask`, feature columns) or `encoder_outputs`."""
    if not DBSA_PARSE_HEAD.layer(model.config, "decoder"):
        raise ValueError("This model has no decoder parse head (parse_layer_decoder=0); only DBSA(Dec) models parse "
                         "their output.")
    keep = sequences != model.config.pad_token_id
    keep[:, 0] = True
    with torch.no_grad():
        outputs = model(**source_inputs, decoder_input_ids=sequences, decoder_attention_mask=keep.long(),
                        use_cache=False)
    return outputs.decoder_parse_log_probs


def maximum_spanning_tree(scores, single_root: bool = False) -> list[int]:
    """Best-scoring dependency tree for a square matrix `scores[t, h]` = score of h being the head of t
    (`scores[t, t]`: t is a root), e.g. a parse head's log-probabilities.

    Returns CoNLL-U heads (1-based, 0 = root) per token. With `single_root=False` several roots are allowed (a
    forest, as for multi-sentence input); `single_root=True` keeps the best tree with exactly one root.
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[0] != scores.shape[1]:
        raise ValueError(f"scores must be a square (tokens, tokens) matrix, got shape {scores.shape}.")
    size = scores.shape[0]
    if size == 0:
        return []
    if np.isnan(scores).any() or np.isposinf(scores).any():
        raise ValueError("scores contain NaN or +inf; pass finite log-probabilities (masked entries may be -inf).")
    # Graph over nodes 0 (artificial root) .. size: weights[head, dependent].
    weights = np.full((size + 1, size + 1), -np.inf)
    weights[1:, 1:] = scores.T
    np.fill_diagonal(weights, -np.inf)
    weights[0, 1:] = np.diag(scores)
    if not single_root:
        return _chu_liu_edmonds(weights)[1:].tolist()
    best_heads, best_score = None, -np.inf
    for root in range(1, size + 1):
        candidate = weights.copy()
        candidate[0, :] = -np.inf
        candidate[0, root] = weights[0, root]
        heads = _chu_liu_edmonds(candidate)
        score = candidate[heads[1:], np.arange(1, size + 1)].sum()
        if score > best_score:
            best_heads, best_score = heads, score
    if best_heads is None:
        raise ValueError("No single-root tree has a finite score: every token's root score is -inf.")
    return best_heads[1:].tolist()


def _chu_liu_edmonds(weights: np.ndarray) -> np.ndarray:
    """Maximum spanning arborescence rooted at node 0 of a dense graph (weights[head, dependent], -inf = no edge).

    Returns the head of every node (index 0 gets 0). Each contraction merges one cycle into a node whose incoming
    edges are rescored by the cycle edge they would break, then the solution of the smaller graph is expanded.
    """
    size = weights.shape[0]
    heads = weights.argmax(axis=0)
    heads[0] = 0
    cycle = _find_cycle(heads)
    if cycle is None:
        return heads
    in_cycle = np.zeros(size, dtype=bool)
    in_cycle[cycle] = True
    outside = np.flatnonzero(~in_cycle)  # contains node 0, which stays first (index 0)
    cycle_node = len(outside)
    contracted = np.full((cycle_node + 1, cycle_node + 1), -np.inf)
    contracted[:cycle_node, :cycle_node] = weights[np.ix_(outside, outside)]
    # Entering the cycle at d from outside h costs the cycle edge into d.
    entering = weights[np.ix_(outside, cycle)] - weights[heads[cycle], cycle][None, :]
    entry_dependent = cycle[entering.argmax(axis=1)]
    contracted[:cycle_node, cycle_node] = entering.max(axis=1)
    # Leaving the cycle towards outside d: the best head inside the cycle.
    leaving = weights[np.ix_(cycle, outside)]
    exit_head = cycle[leaving.argmax(axis=0)]
    contracted[cycle_node, :cycle_node] = leaving.max(axis=0)
    contracted[cycle_node, 0] = -np.inf

    sub_heads = _chu_liu_edmonds(contracted)
    result = heads.copy()
    for index, node in enumerate(outside[1:], start=1):
        head = sub_heads[index]
        result[node] = exit_head[index] if head == cycle_node else outside[head]
    entry_from = outside[sub_heads[cycle_node]]
    result[entry_dependent[sub_heads[cycle_node]]] = entry_from
    result[0] = 0
    return result


def _find_cycle(heads: np.ndarray) -> np.ndarray | None:
    """Nodes of one cycle in the head graph (node 0 is the root and never on a cycle), or None."""
    state = np.zeros(len(heads), dtype=np.int8)  # 0 unseen, 1 on the current walk, 2 finished
    state[0] = 2
    for start in range(1, len(heads)):
        walk, node = [], start
        while state[node] == 0:
            state[node] = 1
            walk.append(node)
            node = heads[node]
        if state[node] == 1:
            return np.array(walk[walk.index(node):])
        state[walk] = 2
    return None


def word_heads_from_parse(parse_log_probs, word_ids, head_rule: str = "first", single_root: bool = False,
                          well_formed: bool = True) -> list[int]:
    """CoNLL-U heads (1-based, 0 = root) of the words of one sequence, from its (n, n) parse log-probabilities.

    Word w's head score for word v is the log-probability that w's final subword attends to v's first subword
    (`head_rule="last"`: v's last subword), its root score is the final subword's self-loop. `well_formed=True`
    decodes the maximum spanning tree (`single_root=True`: the best tree with one root, as UD asks; otherwise a
    sentence split by the parser may keep one root per sentence); `False` takes each word's argmax (may contain
    cycles).
    """
    if head_rule not in SUBWORD_HEAD_RULES:
        raise ValueError(f"head_rule must be one of {SUBWORD_HEAD_RULES}, got {head_rule!r}.")
    log_probs = torch.as_tensor(parse_log_probs).detach().float().cpu().numpy()
    word_ids = [NO_WORD if word is None else word for word in word_ids]
    if log_probs.ndim != 2 or log_probs.shape[0] != log_probs.shape[1] or log_probs.shape[0] < len(word_ids):
        raise ValueError(
            f"parse_log_probs must be one sequence's (n, n) matrix with n >= len(word_ids)={len(word_ids)}; got "
            f"shape {log_probs.shape}. Index the batch first, e.g. outputs.encoder_parse_log_probs[i]."
        )
    positions: dict[int, list[int]] = {}
    for position, word in enumerate(word_ids):
        if word != NO_WORD:
            positions.setdefault(word, []).append(position)
    if sorted(positions) != list(range(len(positions))):
        raise ValueError("word_ids must number the words 0, 1, 2, ... without gaps (None/-1 for special tokens).")
    finals = [positions[word][-1] for word in range(len(positions))]
    targets = [positions[word][0 if head_rule == "first" else -1] for word in range(len(positions))]
    word_scores = log_probs[np.ix_(finals, targets)]
    np.fill_diagonal(word_scores, log_probs[finals, finals])
    if well_formed:
        return maximum_spanning_tree(word_scores, single_root=single_root)
    best = word_scores.argmax(axis=1)
    return [0 if head == word else int(head) + 1 for word, head in enumerate(best)]


@dataclass
class AttachmentScore:
    """Unlabelled attachment counts; add two with `+` to aggregate over a corpus before reading `uas`."""

    correct: int = 0
    total: int = 0

    def __add__(self, other: "AttachmentScore") -> "AttachmentScore":
        return AttachmentScore(self.correct + other.correct, self.total + other.total)

    @property
    def uas(self) -> float:
        """Fraction of scored words whose predicted head is the gold head (0.0 when nothing was scored)."""
        return self.correct / self.total if self.total else 0.0


def attachment_score(predicted, gold) -> AttachmentScore:
    """Compare head lists word by word; words whose gold head is None (unknown) or -100 are not scored."""
    if len(predicted) != len(gold):
        raise ValueError(f"{len(predicted)} predicted heads but {len(gold)} gold heads: compare the same words.")
    scored = [(p, g) for p, g in zip(predicted, gold) if g is not None and g != IGNORE_INDEX]
    return AttachmentScore(sum(int(p == g) for p, g in scored), len(scored))


__all__ = [
    "AttachmentScore",
    "ENCODER_PARSERS",
    "attachment_score",
    "encoder_parse",
    "maximum_spanning_tree",
    "output_parse_log_probs",
    "predicted_heads",
    "word_heads_from_parse",
]

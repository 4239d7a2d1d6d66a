"""How well a model's encoder parse matches gold trees (UAS), read on the gold words.

The text side of `hf_syntax.parse_head_trees`: the trees are tokenized here with the featurizer, so the model core
(which travels to the Hub and loads without a parser) does not import it.
"""

import torch

from hf_syntax.columns import NO_WORD
from hf_syntax.featurizer import SyntaxFeaturizer
from hf_syntax.parse_head_trees import AttachmentScore, attachment_score, encoder_parse, word_heads_from_parse
from hf_syntax.trees import WordTree


def gold_tree_attachment_score(model, tokenizer, trees, progress=None, head: str = "dbsa") -> AttachmentScore:
    """UAS counts of an encoder parse (`head`: "dbsa" or "self_parse", see `ENCODER_PARSERS`) on gold trees, read on
    the gold words.

    The model reads each tree's words (the treebank's segmentation, not its training parser's): joined by spaces
    when it was trained on pre-split words (`config.source_pretokenized`), else the tree's own text. A word that owns
    no subword (a subword spanning two gold words) gets no predicted head and counts as wrong; words cut off by the
    model's maximum length are not scored. `progress` wraps the tree iterator (e.g. `tqdm`).
    """
    config = model.config
    output = encoder_parse(model, head)
    featurizer = SyntaxFeaturizer(tokenizer, features=("dep_depths",), return_word_ids=True,
                                  head_rule=config.subword_head_rule, max_length=config.max_position_embeddings)
    total = AttachmentScore()
    for tree in (progress or iter)(trees):
        if getattr(config, "source_pretokenized", False):
            tree = WordTree.from_words(tree.words, tree.heads, tree.upos, tree.deprels, tree.sentence_starts)
        row = featurizer(trees=tree, return_tensors="pt")
        word_ids = [NO_WORD if word is None else int(word) for word in row["word_ids"][0].tolist()]
        present = sorted({word for word in word_ids if word != NO_WORD})
        if not present:
            continue
        compact = {word: index for index, word in enumerate(present)}
        with torch.no_grad():
            encoded = model.get_encoder()(input_ids=row["input_ids"], attention_mask=row["attention_mask"])
        compact_heads = word_heads_from_parse(getattr(encoded, output)[0],
                                              [compact.get(word, NO_WORD) for word in word_ids],
                                              head_rule=config.subword_head_rule)
        predicted = {word: 0 if head == 0 else present[head - 1] + 1 for word, head in zip(present, compact_heads)}
        truncated = row["input_ids"].shape[1] >= config.max_position_embeddings
        read_words = range(present[-1] + 1 if truncated else len(tree))
        total = total + attachment_score([predicted.get(word) for word in read_words],
                                         [tree.heads[word] for word in read_words])
    return total


__all__ = ["gold_tree_attachment_score"]

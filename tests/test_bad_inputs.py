"""Bad inputs to the configs and models are refused with what to change, instead of running silently on the wrong
thing (a misspelt keyword, a mask cut to fit, a head on padding) or failing deep inside torch."""

import pytest
import torch
from huggingface_hub.errors import StrictDataclassClassValidationError, StrictDataclassFieldValidationError

from hf_syntax import (
    BertPosConfig, BertPosModel, DbsaConfig, DepRpeConfig, SyntaxTransformerConfig, SyntaxTransformerForConditionalGeneration,
    SyntaxTransformerModel,
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
    for settings in (dict(num_beams=1), dict(num_beams=2), dict(num_beams=2, use_cache=False)):
        assert baseline.generate(input_ids=input_ids, attention_mask=attention_mask, max_new_tokens=3,
                                 dep_depths=torch.zeros_like(input_ids), **settings).shape[0] == 2


def test_the_base_model_says_it_needs_decoder_input_ids():
    model = SyntaxTransformerModel(SyntaxTransformerConfig(**TINY)).eval()
    input_ids, _, labels = _batch()
    with pytest.raises(TypeError, match=r"SyntaxTransformerModel.forward\(\) got unexpected keyword argument\(s\) "
                                        r"\['labels'\]"):
        model(input_ids, labels=labels)
    with pytest.raises(ValueError, match=r"SyntaxTransformerModel needs `decoder_input_ids`: it has no output layer, "
                                         r"so it takes no `labels`"):
        model(input_ids)

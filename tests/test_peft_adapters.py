"""LoRA adapters from peft on every model type: only the adapter trains, the saved adapter folder reloads onto the
saved base model with the same logits (and, for translation, the same generations), and merging it gives a plain
hf-syntax model that saves and loads like any other."""

import pytest
import torch

from device_support import MODEL_KINDS, build_model, logits_of, make_batch, source_inputs, train_one_step

peft = pytest.importorskip("peft", reason="peft is in the dev extra: pip install -e .[dev]")

ATTENTION_PROJECTIONS = {"bert_pos": ["query", "value"]}
"""LoRA's target modules: BERT's names for the query and value projections; every seq2seq layer type's are these."""
SEQ2SEQ_PROJECTIONS = ["q_proj", "v_proj"]


def _lora(model, kind: str):
    task = peft.TaskType.SEQ_CLS if kind == "bert_pos" else peft.TaskType.SEQ_2_SEQ_LM
    targets = ATTENTION_PROJECTIONS.get(kind, SEQ2SEQ_PROJECTIONS)
    return peft.get_peft_model(model, peft.LoraConfig(task_type=task, r=4, lora_alpha=8, target_modules=targets))


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_lora_adapter_trains_alone_reloads_and_merges(kind, tmp_path):
    base, batch = build_model(kind), make_batch(kind)
    base.save_pretrained(tmp_path / "base")
    with torch.no_grad():
        untuned = logits_of(base, batch)
    model = _lora(base, kind)
    trainable = [name for name, parameter in model.named_parameters() if parameter.requires_grad]
    assert trainable and all("lora_" in name or "modules_to_save" in name for name in trainable)

    train_one_step(model, batch, learning_rate=1e-2)
    with torch.no_grad():
        tuned = logits_of(model, batch)
    assert (tuned - untuned).abs().max() > 1e-3  # the adapter changed the model

    model.save_pretrained(tmp_path / "adapter")
    reloaded = peft.PeftModel.from_pretrained(type(base).from_pretrained(tmp_path / "base"), tmp_path / "adapter")
    reloaded.eval()
    with torch.no_grad():
        assert torch.allclose(logits_of(reloaded, batch), tuned, atol=1e-5)
        generated = None if kind == "bert_pos" else reloaded.generate(**source_inputs(reloaded, batch))
    merged = reloaded.merge_and_unload()
    assert type(merged) is type(base)
    merged.save_pretrained(tmp_path / "merged")
    merged = type(base).from_pretrained(tmp_path / "merged").eval()
    with torch.no_grad():
        assert torch.allclose(logits_of(merged, batch), tuned, atol=1e-4)
        if generated is not None:
            assert torch.equal(merged.generate(**source_inputs(merged, batch)), generated)

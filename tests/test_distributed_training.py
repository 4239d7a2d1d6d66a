"""The translation recipe under ``torchrun --nproc_per_node 2`` (gloo, CPU): the path users take when they outgrow one
process. Two processes with per-device batch 2 must train exactly as one process with batch 4."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch.distributed
import yaml
from test_training_recipe import tiny_config

REPO_ROOT = Path(__file__).resolve().parents[1]
STEPS = 5
# Logged losses of the two runs may differ only by float32 summation order (padding to a 2- vs a 4-sentence batch,
# gloo's all-reduce of the gradients): about 1e-6 here. A run whose processes are not synchronised differs by ~0.2
# from the second step on, so 1e-4 separates the two cleanly.
TOLERANCE = 1e-4

pytestmark = pytest.mark.skipif(
    not (torch.distributed.is_available() and torch.distributed.is_gloo_available()),
    reason="torchrun needs torch.distributed with the gloo backend, which this torch build lacks",
)


def distributed_config(output_dir: Path) -> dict:
    """The recipe test's tiny run on 64 pairs, without dropout (the processes' dropout masks would differ).

    ``max_target_length: 6`` cuts every target to 6 tokens: the model's loss is a mean over its batch's tokens and DDP
    averages the processes' means, which equals the 4-sentence token mean only when both halves hold as many tokens.
    """
    config = tiny_config(output_dir, max_steps=STEPS, per_device_train_batch_size=4, per_device_eval_batch_size=2,
                         learning_rate=1e-2, warmup_steps=2, eval_steps=STEPS, save_steps=STEPS)
    config["data"].update(max_train_pairs=64, max_eval_pairs=4, max_source_length=16, max_target_length=6)
    config["model"]["kwargs"]["dropout"] = 0.0
    config["generation"].update(num_beams=1, max_new_tokens=4)
    return config


def train(tmp_path: Path, name: str, processes: int) -> list[dict]:
    """Run ``training/train_translation.py`` (under torchrun for several processes) with the same global batch of 4;
    returns the logged training entries."""
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(distributed_config(tmp_path / "unused")))
    script = [str(REPO_ROOT / "training" / "train_translation.py"), "--config", str(config),
              "--output_dir", str(tmp_path / name)]
    if processes > 1:
        launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}"]
        script += ["--set", f"training.per_device_train_batch_size={4 // processes}"]
    else:
        launcher = [sys.executable]
    environment = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run(launcher + script, env=environment, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    state = json.loads((tmp_path / name / f"checkpoint-{STEPS}" / "trainer_state.json").read_text())
    return [entry for entry in state["log_history"] if "loss" in entry]


def test_two_processes_train_like_one_with_the_same_global_batch(tmp_path):
    single = train(tmp_path, "single", processes=1)
    distributed = train(tmp_path, "torchrun", processes=2)
    assert [entry["step"] for entry in distributed] == list(range(1, STEPS + 1))
    for one, two in zip(single, distributed):
        for key in ("loss", "translation_loss", "grad_norm"):
            assert two[key] == pytest.approx(one[key], abs=TOLERANCE), (key, one["step"], one[key], two[key])
    assert single[-1]["loss"] < single[0]["loss"] - 0.5, "the tiny run must actually learn for the check to mean much"
    summary = json.loads((tmp_path / "torchrun" / "summary.json").read_text())
    assert summary["optimizer_steps"] == STEPS and summary["pairs"]["train"] == 64
    assert (tmp_path / "torchrun" / "model" / "model.safetensors").is_file(), "rank 0 writes the Hub-ready folder"

"""How fast the machine a run trains on is: a fixed PyTorch workload timed when each invocation of a study starts, so
that epoch times measured on different machines (a run resumed in another session, a GPU run beside a CPU one) can
still be compared, each divided by its own machine's time for the same work.

The workload is plain ``torch.nn.Transformer`` training steps the size of the small recipes' model (d_model 256,
3 + 3 layers, batch 32 of 16 tokens), not an hf-syntax model: its time must not change when this project's code does.
It runs in a child process with the threads and environment the study's runs get, on the device they would train
on: this file run as a script, so that the child loads torch only, not hf_syntax (seconds more than the workload).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import torch

WARM_UP_STEPS = 3  # first steps allocate memory and pick kernels
TIMED_STEPS = 3  # steps per timed repetition
REPETITIONS = 5  # the fastest repetition is the machine's: other work only slows one down


def reference_step(device: str = "cpu"):
    """A closure running one training step of the reference workload (forward, backward, one AdamW step) on
    ``device``, its model and batch built once with fixed seeds."""
    torch.manual_seed(0)
    vocabulary, batch, length = 8000, 32, 16
    model = torch.nn.ModuleDict({
        "embed": torch.nn.Embedding(vocabulary, 256),
        "transformer": torch.nn.Transformer(d_model=256, nhead=4, num_encoder_layers=3, num_decoder_layers=3,
                                            dim_feedforward=1024, dropout=0.0, batch_first=True),
        "output": torch.nn.Linear(256, vocabulary),
    }).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    source, target = (torch.randint(vocabulary, (batch, length)).to(device) for _ in range(2))

    def step() -> None:
        hidden = model["transformer"](model["embed"](source), model["embed"](target))
        loss = torch.nn.functional.cross_entropy(model["output"](hidden).flatten(0, 1), target.flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    return step


def reference_step_seconds() -> float:
    """Seconds of one reference step on the device the runs train on (a GPU where there is one), the fastest of
    :data:`REPETITIONS` repetitions."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    step = reference_step(device)

    def timed(steps: int) -> float:
        started = time.perf_counter()
        for _ in range(steps):
            step()
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - started) / steps

    timed(WARM_UP_STEPS)
    return min(timed(TIMED_STEPS) for _ in range(REPETITIONS))


def time_machine(threads: int) -> float:
    """The reference workload's seconds per step at ``threads`` threads, in a child process as the runs train."""
    from hf_syntax.study.processes import child_environment  # here: the child runs this file without the package
    from hf_syntax.study.study_file import StudyError

    result = subprocess.run([sys.executable, __file__], env=child_environment(threads), capture_output=True, text=True)
    if result.returncode:
        last = result.stderr.strip().splitlines()[-1] if result.stderr.strip() else "no message"
        raise StudyError(f"timing the machine's reference workload failed (exit {result.returncode}): {last}")
    return json.loads(result.stdout)["reference_seconds"]


if __name__ == "__main__":
    print(json.dumps({"reference_seconds": round(reference_step_seconds(), 4)}))

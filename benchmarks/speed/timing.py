"""What every speed benchmark shares: the small CPU model size, one batch with every column any variant reads, a
training step, and interleaved timing (machines here are shared and noisy, so models are timed in turn and the
median is kept; both wall time and this process's CPU time are recorded)."""

import inspect
import json
import statistics
import time
from pathlib import Path

import torch

from hf_syntax import config_for
from hf_syntax.parse_head import DBSA_PARSE_HEAD

SMALL_CPU_SIZE = dict(
    vocab_size=8000, d_model=256, encoder_layers=3, decoder_layers=3, encoder_attention_heads=4,
    decoder_attention_heads=4, encoder_ffn_dim=1024, decoder_ffn_dim=1024, max_position_embeddings=1024,
)



def parse_heads_at(architecture: str, layer: int) -> dict:
    """Overrides that put an architecture's parse heads in `layer` (its preset puts them in layer 4 of 6, which a
    3-layer model does not have), on the sides where the preset has one; {} for a model without parse heads."""
    preset = config_for(architecture)
    return {field: layer for side, field in DBSA_PARSE_HEAD.layer_fields.items() if DBSA_PARSE_HEAD.layer(preset, side)}


def random_tree_heads(batch_size: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """Heads of random trees in which every token points to an earlier one (token 0 is the root: itself)."""
    heads = (torch.rand(batch_size, length, generator=generator) * torch.arange(length)).long()
    heads[:, 0] = 0
    return heads


def random_batch(batch_size: int, length: int, seed: int = 0, vocab_size: int = SMALL_CPU_SIZE["vocab_size"]) -> dict:
    """Ids, labels and every feature column (heads, depths, POS/case/subword tags); a model ignores the columns its
    configuration does not use, so one batch serves every variant."""
    generator = torch.Generator().manual_seed(seed)
    heads = random_tree_heads(batch_size, length, generator)
    depths = torch.zeros(batch_size, length, dtype=torch.long)
    for position in range(1, length):
        depths[:, position] = depths.gather(1, heads[:, position:position + 1]).squeeze(1) + 1

    def ids(low, high):
        return torch.randint(low, high, (batch_size, length), generator=generator)

    return {
        "input_ids": ids(3, vocab_size), "attention_mask": torch.ones(batch_size, length, dtype=torch.long),
        "labels": ids(3, vocab_size), "dep_heads": heads, "dep_depths": depths,
        "decoder_dep_heads": random_tree_heads(batch_size, length, generator),
        "pos_ids": ids(3, 20), "case_ids": ids(3, 7), "subword_tags": ids(3, 7),
    }


def training_step(model, batch: dict):
    """A closure running forward + backward + one AdamW step on `batch` (only the columns `model` accepts)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    accepted = set(inspect.signature(model.forward).parameters)
    inputs = {name: values for name, values in batch.items() if name in accepted}

    def step():
        model.train()
        optimizer.zero_grad(set_to_none=True)
        model(**inputs).loss.backward()
        optimizer.step()

    return step


def interleaved(functions: dict, repeats: int, warmup: int = 1) -> dict:
    """{"wall": {name: median seconds}, "cpu": {...}}, calling the functions in turn so load changes hit all alike."""
    for function in functions.values():
        for _ in range(warmup):
            function()
    samples = {clock: {name: [] for name in functions} for clock in ("wall", "cpu")}
    for _ in range(repeats):
        for name, function in functions.items():
            wall, cpu = time.perf_counter(), time.process_time()
            function()
            samples["wall"][name].append(time.perf_counter() - wall)
            samples["cpu"][name].append(time.process_time() - cpu)
    return {clock: {name: statistics.median(times) for name, times in by_name.items()}
            for clock, by_name in samples.items()}


def write_report(report: dict, output: Path) -> None:
    """The measurements as JSON at ``output`` (its folder made), and where they went."""
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {output}")

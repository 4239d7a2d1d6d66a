"""The child processes of a study: ``prepare`` commands, training runs, translations and reference scoring, each a
``python -m hf_syntax.cli`` of the same code as the driver's own.

The children import the ``hf_syntax`` the driver was imported from (``CODE_ROOT`` first on their path), not
whichever one is installed: a study started from a frozen copy of a checkout keeps training that copy's code while
the working tree changes, and a resumed run goes on with the code it started with.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from hf_syntax.data.corpus import split_lines
from hf_syntax.recipes.runs import checkpoint_folders, set_aside_when_none_is_complete, write_text_atomically
from hf_syntax.study.study_file import Study, StudyError, run_overrides

TRAIN_LOG = "train.log"  # a run folder's training output, every start of the run marked in it

CODE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding this hf_syntax: the checkout, or site-packages
HF_SYNTAX = [sys.executable, "-m", "hf_syntax.cli"]  # the command line of this code, installed as a script or not
OFFLINE_QUIET = {
    "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_DISABLE_PROGRESS_BARS": "1",
}


def child_environment(threads: int = 1) -> dict[str, str]:
    """``threads`` per job (one by default: runs side by side share the cores evenly), offline, and this code first
    on the path (a frozen copy stays frozen)."""
    return {**os.environ, **OFFLINE_QUIET, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(CODE_ROOT), os.environ.get("PYTHONPATH")]))}


PROGRESS_BAR = re.compile(r"\d+%\|.*\| *\d+/\d+ \[")
"""A tqdm bar as shown ("Writing model shards: 100%|████| 1/1 [00:00<00:00, ...]")."""


def without_redraws(log: Path) -> str:
    """A log as a reader wants it: of each carriage-return-redrawn line, only what was finally shown (read as bytes:
    text mode would turn every ``\r`` into a line break), and no progress bars, finished ones included."""
    text = log.read_bytes().decode("utf-8", errors="replace")
    shown = (line.rsplit("\r", 1)[-1] for line in text.split("\n"))
    return "\n".join(line for line in shown if not PROGRESS_BAR.search(line))


def config_path(study: Study) -> Path:
    """The base recipe config: a relative path is read in the driver's own checkout when it holds the file (a
    frozen copy trains with its own configs), else from the working directory."""
    if study.config.is_absolute() or not (CODE_ROOT / study.config).is_file():
        return study.config
    return CODE_ROOT / study.config


def prepare(study: Study) -> None:
    """Run each ``prepare`` command once: skipped when the path it ``creates`` exists. A command that starts with
    ``hf-syntax`` runs this code's command line."""
    for step in study.prepare:
        if Path(step["creates"]).exists():
            continue
        command = [*HF_SYNTAX, *step["command"][1:]] if step["command"][0] == "hf-syntax" else step["command"]
        print("$", " ".join(command), flush=True)
        log = study.results / "logs" / f"prepare_{Path(step['creates']).name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as handle:
            subprocess.run(command, env=child_environment(threads=2), stdout=handle,
                           stderr=subprocess.STDOUT, check=True)
        write_text_atomically(log, without_redraws(log))


def training_command(study: Study, run: str, seed: int, resume: bool) -> list[str]:
    """``hf-syntax train`` of one run and seed in its folder, resumed from its newest checkpoint if ``resume``."""
    output_dir = study.output_dir(run, seed)
    command = [*HF_SYNTAX, "train", "--config", str(config_path(study)), "--output-dir", str(output_dir)]
    command += [argument for override in run_overrides(study, run, seed) for argument in ("--set", override)]
    if resume:
        command += ["--resume-from-checkpoint", "latest"]
    return command


def start_training(study: Study, run: str, seed: int, threads: int) -> subprocess.Popen:
    """Start one run's training in the background, its output appended to the run folder's ``train.log`` after a
    line that says when and from where it starts: a run spread over sessions, or begun again after a cut before its
    first checkpoint, shows each start in its log (a restart repeats the first lines, which would read as a fault)."""
    set_aside = set_aside_when_none_is_complete(study.output_dir(run, seed))
    checkpoints = checkpoint_folders(study.output_dir(run, seed))
    command = training_command(study, run, seed, resume=bool(checkpoints))
    start = f"resumed from {checkpoints[-1].name}" if checkpoints else "started from step 0"
    if set_aside:
        start += f" (cut off while saving, moved aside: {', '.join(folder.name for folder in set_aside)})"
    log = (study.output_dir(run, seed) / TRAIN_LOG).open("a")
    log.write(f"[hf-syntax study {time.strftime('%Y-%m-%d %H:%M:%S')}] {run} seed {seed} {start}\n")
    log.flush()
    print(f"[{time.strftime('%H:%M:%S')}] start {run} seed {seed}: {' '.join(command[1:])}", flush=True)
    return subprocess.Popen(command, env=child_environment(threads), stdout=log, stderr=subprocess.STDOUT)


def translate(model_dir: Path, lines: list[str], trees: Path | None = None) -> list[str]:
    """A run's final model's translations through the same pipeline ``hf-syntax translate`` uses (it parses the
    source on the fly where the model needs features, or reads the source's ``trees`` made beforehand), with the
    beam the recipe evaluated with."""
    num_beams = json.loads((model_dir / "generation_config.json").read_text()).get("num_beams", 4)
    command = [*HF_SYNTAX, "translate", "--model", str(model_dir), "--quiet", "--num-beams", str(num_beams),
               *(["--source-trees", str(trees)] if trees is not None else [])]
    result = subprocess.run(command, input="\n".join(lines) + "\n", env=child_environment(),
                            capture_output=True, text=True)
    if result.returncode:
        raise StudyError(f"translating with {model_dir} failed (exit {result.returncode}): "
                         f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'no message'}")
    return split_lines(result.stdout)  # one per source line, whatever else a translation holds


def score_cross_entropy(model_dir: Path, source: Path, reference: Path, trees: Path | None = None) -> dict:
    """The model's teacher-forced cross-entropy of ``reference`` given ``source`` (``hf-syntax evaluate --metrics
    cross-entropy``: the source read as the pipeline reads it, or from its ``trees`` made beforehand)."""
    command = [*HF_SYNTAX, "evaluate", "--model", str(model_dir), "--source", str(source), "--reference",
               str(reference), "--metrics", "cross-entropy", *(["--source-trees", str(trees)] if trees else [])]
    result = subprocess.run(command, env=child_environment(), capture_output=True, text=True)
    if result.returncode:
        raise StudyError(f"scoring the references with {model_dir} failed (exit {result.returncode}): "
                         f"{result.stderr.strip().splitlines()[-1] if result.stderr.strip() else 'no message'}")
    return json.loads(result.stdout)

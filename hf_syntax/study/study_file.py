"""A study file (YAML): the base recipe config, shared ``--set`` overrides, ``prepare`` commands, the baseline and
the named runs. ``Study`` is what every other module of the study reads; it holds no state of the runs."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from hf_syntax.recipes.config import UniqueKeyLoader
from hf_syntax.recipes.translation.data import resolve_data_path

REQUIRED_KEYS = {"config", "work_dir", "results", "reference", "baseline", "runs"}
OPTIONAL_KEYS = {"results_name", "split", "loss_at_steps", "config_fields", "reference_curves", "common", "prepare",
                 "continues", "against", "beside", "source", "cut_from",
                 "anchors"}  # anchors: a place for YAML anchors (&name) of --set lists the runs share
RUN_KEYS = {"label", "set"}
LIST_KEYS = ("loss_at_steps", "config_fields", "common", "prepare")
TEXT_KEYS = ("config", "work_dir", "results", "reference", "baseline", "results_name", "split", "continues", "source")
MAPPING_KEYS = ("against", "cut_from")


class StudyError(Exception):
    """A malformed study file or command line, or a run that cannot go on: printed as one ``error:`` line."""


@dataclass(frozen=True)
class Study:
    name: str
    results_name: str  # results.json by default; a second study sharing the folder picks another (diagnosis.json)
    config: Path
    work_dir: Path
    results: Path
    reference: Path
    baseline: str
    split: str  # how the records name the evaluated split: dev_bleu (default) or e.g. val_bleu
    loss_at_steps: list[int]  # training losses recorded at these steps (``train_loss``), if any
    config_fields: list[str]  # model config values recorded per run (e.g. the reading of an ablation)
    reference_curves: dict[str, list[float]]  # curves measured elsewhere, drawn dashed beside the runs
    common: list[str]
    prepare: list[dict]
    runs: dict[str, dict]
    continues: Path | None = None  # work_dir of a shorter budget of the same schedule whose runs these continue
    against: dict[str, list[str]] = field(default_factory=dict)  # other references: {reference: [runs paired with it]}
    # another study's results of the same runs and seeds, tabled beside these ({label: ..., results: results.json}),
    # e.g. the 8-epoch study beside the plateau one
    beside: dict[str, str] | None = None
    # the split's sources, line-aligned with ``reference``: each final model's teacher-forced cross-entropy of the
    # references is recorded beside its BLEU (a less noisy comparison on a small split)
    source: Path | None = None
    source_trees: Path | None = None  # the source's trees made beforehand (--source-trees), where no parser runs
    # {run: (seed, run folder)}: that run at that seed is a longer open-ended run of the same recipe (a recipe
    # measurement's curve) cut at this study's budget instead of trained again (scheduling.cut_longer_run)
    cut_from: dict[str, tuple[int, Path]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Study:
        """Read and check a study file; ``reference`` may name a file of the package's sample (``sample_data:...``)."""
        try:
            raw = yaml.load(path.read_text(encoding="utf-8"), UniqueKeyLoader)
        except (OSError, yaml.YAMLError) as error:
            raise StudyError(f"cannot read the study file {path}: {error}") from None
        if not isinstance(raw, dict):
            raise StudyError(f"{path}: a study file is a YAML mapping with the keys {sorted(REQUIRED_KEYS)}")
        missing = REQUIRED_KEYS - set(raw)
        if missing:
            raise StudyError(f"{path}: missing keys {sorted(missing)}")
        _check_layout(path, raw)
        if raw["baseline"] not in raw["runs"]:
            raise StudyError(f"{path}: baseline {raw['baseline']!r} is not one of the runs {sorted(raw['runs'])}")
        against = {reference: list(runs) for reference, runs in (raw.get("against") or {}).items()}
        unknown = sorted({name for reference, runs in against.items() for name in [reference, *runs]} - set(raw["runs"]))
        if unknown:
            raise StudyError(f"{path}: 'against' names {unknown}, which are not runs of the study {sorted(raw['runs'])}")
        beside = raw.get("beside")
        if beside is not None and (not isinstance(beside, dict) or set(beside) != {"label", "results"}):
            raise StudyError(f"{path}: 'beside' is a mapping with 'label' (e.g. \"8 epochs\") and 'results' (another "
                             f"study's results.json), got {beside!r}")
        cut_from = {}
        for run, origin in (raw.get("cut_from") or {}).items():
            if run not in raw["runs"] or not isinstance(origin, dict) or set(origin) != {"seed", "run_dir"} \
                    or not isinstance(origin["seed"], int):
                raise StudyError(f"{path}: 'cut_from' maps a run of the study {sorted(raw['runs'])} to {{seed: N, "
                                 f"run_dir: FOLDER}} (a longer run of the same recipe and seed), got {run}: {origin!r}")
            cut_from[run] = (origin["seed"], Path(origin["run_dir"]))
        return cls(name=path.stem, results_name=raw.get("results_name", "results"), config=Path(raw["config"]),
                   work_dir=Path(raw["work_dir"]), results=Path(raw["results"]),
                   reference=resolve_data_path(str(raw["reference"])), baseline=raw["baseline"],
                   split=raw.get("split", "dev"), loss_at_steps=list(raw.get("loss_at_steps") or []),
                   config_fields=list(raw.get("config_fields") or []),
                   reference_curves=dict(raw.get("reference_curves") or {}), common=list(raw.get("common") or []),
                   prepare=list(raw.get("prepare") or []), runs=raw["runs"],
                   continues=Path(raw["continues"]) if raw.get("continues") else None, against=against,
                   beside=beside, source=resolve_data_path(str(raw["source"])) if raw.get("source") else None,
                   cut_from=cut_from)

    def output_dir(self, run: str, seed: int) -> Path:
        return self.work_dir / run / f"seed{seed}"

    def tag(self, run: str, seed: int) -> str:
        """File-name stem of a run's translations and log (prefixed when the folder holds several studies)."""
        prefix = "" if self.results_name == "results" else f"{self.results_name}."
        return f"{prefix}{run}.s{seed}"


def _check_layout(path: Path, raw: dict) -> None:
    """Known keys only (a misspelt one would be ignored: a run trained without its settings, a study without its cut
    or comparison; refused with the nearest known key), runs as {label, set} and prepare steps as {creates, command}."""
    def refuse(where: str, unknown: list[str], known: set[str]) -> None:
        close = {key: difflib.get_close_matches(key, sorted(known), n=1) for key in unknown}
        hints = ", ".join(f"{key!r}" + (f" (did you mean {match[0]!r}?)" if match else "") for key, match in close.items())
        raise StudyError(f"{path}: unknown key(s) {hints} in {where}; the keys are {sorted(known)}")

    known = REQUIRED_KEYS | OPTIONAL_KEYS
    if unknown := sorted(set(raw) - known):
        refuse("the study", unknown, known)
    for key in TEXT_KEYS:  # a list or a number failed later as an unhashable type or inside pathlib
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise StudyError(f"{path}: {key!r} is a name or path (text), got {raw[key]!r}")
    if "/" in (raw.get("results_name") or ""):  # the results were written into a folder that is not there
        raise StudyError(f"{path}: 'results_name' names the files in 'results' (no '/'), got {raw['results_name']!r}")
    for key in MAPPING_KEYS:  # a list failed with "'list' object has no attribute 'items'"
        if raw.get(key) is not None and not isinstance(raw[key], dict):
            raise StudyError(f"{path}: {key!r} is a mapping ({{name: ...}}), got {raw[key]!r}")
    if not all(isinstance(runs, list) for runs in (raw.get("against") or {}).values()):  # a name was read by letter
        raise StudyError(f"{path}: 'against' maps a run to the list of runs paired with it ({{base: [other]}}), got "
                         f"{raw['against']!r}")
    for key in LIST_KEYS:  # a string was read character by character, a number failed with a TypeError
        if raw.get(key) is not None and not isinstance(raw[key], list):
            raise StudyError(f"{path}: {key!r} is a list ([..., ...]), got {raw[key]!r}")
    if not all(isinstance(step, int) and not isinstance(step, bool) and step > 0
               for step in raw.get("loss_at_steps") or []):
        raise StudyError(f"{path}: 'loss_at_steps' lists optimizer steps (whole numbers from 1), got "
                         f"{raw['loss_at_steps']!r}")
    curves = raw.get("reference_curves")
    if curves is not None and not (isinstance(curves, dict) and all(
            isinstance(curve, list) and curve and all(_is_number(value) for value in curve)
            for curve in curves.values())):  # an empty key was a TypeError; a number list failed when plotted
        raise StudyError(f"{path}: 'reference_curves' maps a label to BLEU per evaluation ({{\"measured elsewhere\": "
                         f"[20.1, 24.3]}}), got {curves!r}; leave the key out for none")
    if not isinstance(raw["runs"], dict) or not raw["runs"]:
        raise StudyError(f"{path}: 'runs' maps run names to {{label: ..., set: [...]}}, got {raw['runs']!r}")
    for index, step in enumerate(raw.get("prepare") or []):
        if not isinstance(step, dict) or set(step) != {"creates", "command"} or not isinstance(step["command"], list) \
                or not step["command"]:
            raise StudyError(f"{path}: prepare step {index + 1} is {{creates: PATH, command: [PROGRAM, ARG, ...]}} "
                             f"(run once, skipped while PATH exists), got {step!r}")
    for run, definition in raw["runs"].items():
        if not isinstance(definition, dict):
            raise StudyError(f"{path}: run {run!r} is a mapping {{label: ..., set: [...]}}, got {definition!r}")
        if unknown := sorted(set(definition) - RUN_KEYS):
            refuse(f"run {run!r}", unknown, RUN_KEYS)
        if not isinstance(definition.get("label", ""), str):  # was a TypeError when the report was written
            raise StudyError(f"{path}: run {run!r}: 'label' is the text the report shows, got {definition['label']!r}")
        if not isinstance(definition.get("set") or [], list):
            raise StudyError(f"{path}: run {run!r}: 'set' is a list of --set values ([key=value, ...]), got "
                             f"{definition['set']!r}")


def flatten(overrides: list) -> list[str]:
    """``--set`` lists may nest (a YAML alias to a shared list of overrides inside a run's list)."""
    return [item for entry in overrides for item in (flatten(entry) if isinstance(entry, list) else [str(entry)])]


def run_overrides(study: Study, run: str, seed: int) -> list[str]:
    """The ``--set`` values of one run: the study's shared ones, the run's own, the seed (no progress bars)."""
    return [*flatten(study.common), *flatten(study.runs[run].get("set") or []), f"seed={seed}",
            "training.disable_tqdm=true"]


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

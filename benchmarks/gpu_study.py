"""Runs of a study on a CUDA machine that has no parser and no network: the five-seed study's runs "may also train
on a GPU with the recipe unchanged" (issue 36), and each comes back as a finished run folder, without its weights,
that the driver's report takes up like any other (its record names the GPU it trained on).

    # here, where the parsers are: the study's prepared data, the ../shared files it reads, the blind source parsed
    python benchmarks/gpu_study.py prepare benchmarks/studies/enja_converged.yaml \\
        --blind ../shared/data/blind/small_parallel_enja.test.ja --parser spacy:ja_ginza --pretokenized
    # there, in one call that carries .gpu_study and .whl: train for at most SECONDS, translate the blind source
    bash scripts/gpu_study.sh OUT 480 benchmarks/studies/enja_converged.yaml --runs baseline --seeds 45 --jobs 4
    # back here: the finished run folders go into the study's work_dir, and the report collects them
    python benchmarks/gpu_study.py unpack benchmarks/studies/enja_converged.yaml OUT/runs.tgz
    hf-syntax study benchmarks/studies/enja_converged.yaml --report --blind SRC

A study whose models read no tree (the Graph-Transformer's) is prepared without ``--parser``; its extra test pairs
travel with it (``prepare --extra-test SRC REF``) and are scored there, since the weights stay there.

The run folders travel without model weights and checkpoints: what the report reads (summary, dev translations,
blind translation, the Trainer's log, the driver's wall time and settings, the model's config) is kept. Runs still
training at the deadline come back as their logs alone (``unfinished/``), so that their speed can be read.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

from hf_syntax.recipes.runs import SUMMARY_FILE, checkpoint_folders
from hf_syntax.study.processes import HF_SYNTAX, TRAIN_LOG, config_path
from hf_syntax.study.records import (CROSS_ENTROPY_FILE, EXTRA_TESTS_FILE, SETTINGS_FILE, WALL_CLOCK_FILE,
                                     check_extra_tests)
from hf_syntax.study.study_file import Study, StudyError

PREPARED = Path(".gpu_study")
SHARED = Path("../shared")
SHARED_PATH = re.compile(r"\.\./shared/[^\s,'\"\]}]+")
"""A path into ../shared written in a study or recipe file (the corpora and references the runs read)."""
KEPT = (SUMMARY_FILE, TRAIN_LOG, WALL_CLOCK_FILE, SETTINGS_FILE, EXTRA_TESTS_FILE,
        "predictions_*.txt", "checkpoint-*/trainer_state.json", "model/config.json", "model/generation_config.json",
        "model/tokenizer.json", CROSS_ENTROPY_FILE)
"""What of a finished run folder comes back: everything the driver's report reads (the tokenizer for the record's
fingerprint, so that a run there is checked against the runs here; the references' cross-entropy, scored there
where the weights are), no weights."""


def shared_files(study: Study, study_file: Path) -> list[Path]:
    """The ../shared files the study's runs read: named in the study file or its base recipe config."""
    texts = [path.read_text(encoding="utf-8") for path in (study_file, config_path(study))]
    named = {Path(match) for text in texts for match in SHARED_PATH.findall(text)}
    return sorted(path for path in named | {study.reference} if path.is_file() and SHARED in path.parents)


def prepare(study_file: Path, blind: Path, parser: str | None, pretokenized: bool, out: Path = PREPARED,
            extra_tests: list[tuple[Path, Path]] = ()) -> None:
    """Write ``out``: the study's prepared data (``prepare`` steps' folders, without datasets' caches), the ../shared
    files its runs read, the blind source and the ``extra_tests`` pairs (under ``out/shared``), the trees of the blind
    source and of the study's ``source`` (with ``parser``; a study whose models read no tree needs none), and the
    driver options that point at them (``compare_args``). The extra tests and the references' cross-entropy are
    scored there, since the weights never come back."""
    study = Study.load(study_file)
    missing = [step["creates"] for step in study.prepare if not Path(step["creates"]).exists()]
    if missing:
        raise StudyError(f"{missing} not made yet: run the study here once (its prepare steps run first), e.g. "
                         f"hf-syntax study {study_file} --runs {study.baseline} --seeds 1 --jobs 1")
    extra_files = [path for pair in extra_tests for path in pair]
    for option, paths in (("--blind", [blind]), ("--extra-test", extra_files)):
        outside = [str(path) for path in paths if not path.is_file() or SHARED not in path.parents]
        if outside:
            raise StudyError(f"{option} {outside}: give existing files under {SHARED}/ (the machine there gets a "
                             f"copy at the same relative path)")
    check_extra_tests(extra_tests)
    if extra_tests and parser is not None:
        raise StudyError("--extra-test with --parser: the extra tests would need the parser there (only the blind "
                         "source's trees are made here); score them here on a run trained here instead")
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    with tarfile.open(out / "prepared.tar.gz", "w:gz", dereference=True) as archive:
        for step in study.prepare:
            archive.add(step["creates"], filter=lambda member: None if "/cache-" in member.name else member)
    for path in [*shared_files(study, study_file), blind, *extra_files]:
        copy = out / "shared" / path.relative_to(SHARED)
        copy.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, copy)
    arguments = f"--blind {blind}" + "".join(f" --extra-test {source} {reference}" for source, reference in extra_tests)
    if parser is not None:
        arguments += f" --blind-trees {parsed(blind, parser, pretokenized, out)}"
        if study.source is not None:
            arguments += f" --source-trees {parsed(study.source, parser, pretokenized, out)}"
    (out / "compare_args").write_text(arguments + "\n", encoding="utf-8")
    size = sum(path.stat().st_size for path in out.rglob("*") if path.is_file())
    print(f"wrote {out} ({size / 2**20:.1f} MiB): carry it with .whl/ to the GPU machine")


def parsed(source: Path, parser: str, pretokenized: bool, out: Path) -> Path:
    """``source``'s trees, made here with ``parser`` (``hf-syntax parse``) into ``out``, for the machine there."""
    trees = out / f"{source.name}.conllu"
    with trees.open("w", encoding="utf-8") as handle:
        subprocess.run([*HF_SYNTAX, "parse", "--parser", parser, *(["--pretokenized"] if pretokenized else []),
                        "--input", str(source)], stdout=handle, check=True)
    return trees


def pack(study_file: Path, archive_path: Path) -> None:
    """The study's run folders as they come back: finished runs without weights, unfinished runs' logs alone."""
    study = Study.load(study_file)
    finished, unfinished = [], []
    with tarfile.open(archive_path, "w:gz") as archive:
        for folder in sorted(study.work_dir.glob("*/seed*")):
            if (folder / SUMMARY_FILE).exists():
                for checkpoint in checkpoint_folders(folder):  # the folder itself, for its save time (epoch timing)
                    archive.add(checkpoint, recursive=False)
                for pattern in KEPT:
                    for path in folder.glob(pattern):
                        archive.add(path)
                finished.append(folder)
            elif (folder / TRAIN_LOG).exists():
                archive.add(folder / TRAIN_LOG, arcname=f"unfinished/{folder.parent.name}.{folder.name}.log")
                unfinished.append(folder)
    print(f"packed {len(finished)} finished run(s) {[str(f) for f in finished]}, the logs of {len(unfinished)} "
          f"unfinished {[str(f) for f in unfinished]} into {archive_path}")


def unpack(study_file: Path, archive_path: Path) -> None:
    """Put the finished run folders of ``archive_path`` into the study's work_dir (never over an existing one)."""
    study = Study.load(study_file)
    with tarfile.open(archive_path) as archive:
        members = [member for member in archive.getmembers() if not member.name.startswith("unfinished/")]
        folders = sorted({Path(*Path(member.name).parts[: len(study.work_dir.parts) + 2]) for member in members})
        outside = [str(folder) for folder in folders if study.work_dir not in folder.parents]
        if outside:
            raise StudyError(f"{archive_path} holds {outside}, not run folders of {study.work_dir}")
        existing = [str(folder) for folder in folders if folder.exists()]
        if existing:
            raise StudyError(f"{existing} already exist here: move them away first (a run trained twice?)")
        archive.extractall(members=members, filter="data")
    print(f"unpacked {len(folders)} finished run(s): {[str(folder) for folder in folders]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    prepared = commands.add_parser("prepare", help="here: what the GPU machine needs, into .gpu_study/")
    prepared.add_argument("study", type=Path)
    prepared.add_argument("--blind", type=Path, required=True, help="blind source under ../shared/")
    prepared.add_argument("--parser", help="the parser the study's feature runs read, e.g. spacy:ja_ginza (none: its "
                                           "models read no tree, e.g. the Graph-Transformer study)")
    prepared.add_argument("--pretokenized", action="store_true",
                          help="the blind source (and the study's source) are space-separated words")
    prepared.add_argument("--extra-test", nargs=2, action="append", default=[], type=Path, metavar=("SRC", "REF"),
                          help="a test pair under ../shared/ every run there also scores, as the driver's --extra-test "
                               "(repeatable; studies whose models read no tree)")
    packed = commands.add_parser("pack", help="there: the study's run folders without weights, into one archive")
    packed.add_argument("study", type=Path)
    packed.add_argument("archive", type=Path)
    unpacked = commands.add_parser("unpack", help="here: the finished run folders of an archive into the work_dir")
    unpacked.add_argument("study", type=Path)
    unpacked.add_argument("archive", type=Path)
    options = parser.parse_args(argv)
    try:
        if options.command == "prepare":
            prepare(options.study, options.blind, options.parser, options.pretokenized,
                    extra_tests=[tuple(pair) for pair in options.extra_test])
        elif options.command == "pack":
            pack(options.study, options.archive)
        else:
            unpack(options.study, options.archive)
    except (StudyError, OSError, tarfile.TarError, subprocess.CalledProcessError) as error:
        parser.exit(2, f"error: {error}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

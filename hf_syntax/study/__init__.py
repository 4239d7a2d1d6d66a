"""``hf-syntax study STUDY.yaml``: does syntax help on *my* data? Named runs of the translation recipe over several
seeds, each compared with the baseline of the same seed, resumable across sessions.

A study file (YAML, see benchmarks/studies/) names a base recipe ``config``, shared ``common`` ``--set`` overrides,
``prepare`` commands run once (e.g. ``hf-syntax preprocess``, so feature runs share one parse of the corpus), the
``baseline`` and the ``runs`` (label + ``set`` overrides each), the ``work_dir`` the runs train in, the ``results``
folder and the ``reference`` of the evaluated split (``sample_data:...`` names a file of the package's sample), and
optionally ``against``: runs to pair by seed with other references than the baseline
(``{transformer_rel: [transformer_dep_rel]}``: does the tree add to the relative positions?). Relative paths are
read from the working directory; a relative ``config`` first in the checkout that holds this code.

Each (run, seed) trains in ``<work_dir>/<run>/seed<seed>``; a run whose folder holds ``summary.json`` or whose record
is already in the results file is finished and skipped, one with checkpoints is resumed. Every model is compared
with the baseline of the same seed by sacreBLEU's paired bootstrap, and over seeds by the mean of those paired
differences with its 95% t-interval. A study with ``continues: <work_dir of another study>`` is a longer budget of
the same schedule: each run starts where that study's run of the same name and seed ended. The other way round,
``cut_from: {baseline: {seed: 42, run_dir: FOLDER}}`` takes that run at that seed from a longer run of the same recipe
on an open-ended schedule (a recipe measurement's curve): its checkpoints up to this study's budget are the run's.

Modules, each importing only those before it: ``study_file`` (the ``Study``), ``processes`` (the children: prepare,
train, translate), ``machine_pace`` (the machine's reference step time), ``significance`` (the statistics),
``records`` (a finished run's record), ``tables`` (Markdown), ``report`` (the results files), ``scheduling`` (which
runs, side by side, resumed). The command line is ``hf_syntax/cli/study.py``.
"""

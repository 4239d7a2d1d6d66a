"""The statistics of a study: corpus scores, sacreBLEU's paired bootstrap per seed, and over seeds the mean of the
paired differences with its Student-t interval (seed noise, which the bootstrap does not see), the seeds won, the
power of the test and the seeds a follow-up would need. Nothing here reads or writes files."""

from __future__ import annotations

import math
import statistics

from scipy.stats import nct
from scipy.stats import t as student_t

from hf_syntax.study.study_file import Study

def scores(hypotheses: list[str], references: list[str]) -> dict[str, float]:
    from sacrebleu.metrics import BLEU, CHRF

    # force: the studies score their corpora as given (small_parallel_enja is pre-tokenized on purpose); it only
    # silences sacreBLEU's "forgot to detokenize" warning, the score is the same.
    return {"bleu": round(BLEU(force=True).corpus_score(hypotheses, [references]).score, 2),
            "chrf": round(CHRF().corpus_score(hypotheses, [references]).score, 2)}


def paired_bootstrap(baseline: list[str], system: list[str], references: list[str]) -> dict[str, float]:
    """p-values of sacreBLEU's paired bootstrap (1000 resamples): is the system's difference from the baseline chance?"""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    test = PairedTest([("baseline", baseline), ("system", system)], metrics={"bleu": BLEU(force=True), "chrf": CHRF()},
                      references=[references], test_type="bs", n_samples=1000)
    _, results = test()  # results: metric display name -> one result per system, the baseline first
    return {"bleu": round(float(results["BLEU"][1].p_value), 4), "chrf": round(float(results["chrF2"][1].p_value), 4)}

# How each compared score is read: whether more is better, and the decimals its differences are kept to (a
# cross-entropy in nats per token moves by hundredths where BLEU moves by points).
METRICS = {"bleu": (True, 2), "chrf": (True, 2), "cross_entropy": (False, 4)}


def seed_interval(by_seed: dict[int, float], confidence: float = 0.95, higher_is_better: bool = True,
                  digits: int = 2) -> dict:
    """Mean of per-seed paired differences (seed -> difference) with its Student-t interval over seeds, the seeds won
    (a difference in the better direction), what may be claimed ("helps"/"hurts" only when the interval excludes 0),
    and the differences by seed (a reader checks the summary against them). No interval from a single seed, nor from
    differences equal at every seed (bar the float error of subtracting the scores): a spread of 0 gives an interval
    of no width, so "helps" or "hurts" at any mean, a power of 1 and 2 seeds enough, claims the data cannot carry."""
    differences = list(by_seed.values())
    n = len(differences)
    mean = statistics.mean(differences)
    sign = 1 if higher_is_better else -1
    summary = {"seeds": n, "mean": round(mean, digits),
               "wins": sum(sign * difference > 0 for difference in differences),
               "differences": {seed: round(difference, digits) for seed, difference in by_seed.items()}}
    if n < 2:
        return {**summary, "interval": None, "verdict": "one seed: no interval"}
    if all(math.isclose(difference, differences[0], rel_tol=1e-9, abs_tol=1e-12) for difference in differences):
        return {**summary, "interval": None, "verdict": "no interval: the seeds agree exactly"}
    stdev = statistics.stdev(differences)
    half = student_t.ppf((1 + confidence) / 2, n - 1) * stdev / n ** 0.5
    low, high = mean - half, mean + half
    better, worse = (low > 0, high < 0) if higher_is_better else (high < 0, low > 0)
    verdict = "helps" if better else "hurts" if worse else f"no difference detected at {n} seeds"
    return {**summary, "interval": [round(low, digits), round(high, digits)], "verdict": verdict,
            "power": round(t_test_power(mean, stdev, n, confidence), 2),
            "seeds_for_80_percent_power": seeds_for_power(mean, stdev, 0.8, confidence)}


def t_test_power(mean: float, stdev: float, seeds: int, confidence: float = 0.95) -> float:
    """Probability that the two-sided paired t-test over ``seeds`` seeds rejects 0 (the interval excludes it) when the
    differences have this ``mean`` and spread (noncentral t; a spread > 0: ``seed_interval`` gives none for 0)."""
    critical = student_t.ppf((1 + confidence) / 2, seeds - 1)
    shift = abs(mean) / stdev * seeds ** 0.5
    # the wrong-side tail as the upper tail of the mirrored shift: scipy's lower tail turns NaN far out
    return float(nct.sf(critical, seeds - 1, shift) + nct.sf(critical, seeds - 1, -shift))


def seeds_for_power(mean: float, stdev: float, power: float = 0.8, confidence: float = 0.95,
                    most: int = 500) -> int | None:
    """How many seeds would detect a difference of the observed size with probability ``power``, taking the observed
    mean and spread as the truth: what a follow-up would cost, not a claim. None: more than ``most``. (The power grows
    with the seeds, so a bisection finds the smallest.)"""
    if t_test_power(mean, stdev, most, confidence) < power:
        return None
    low, high = 1, most  # the power is below the goal at low (one seed has none), reached at high
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if t_test_power(mean, stdev, middle, confidence) >= power else (middle, high)
    return high


def over_seeds(study: Study, records: list[dict], reference: str | None = None,
               runs: list[str] | None = None) -> dict[str, dict]:
    """Per run, BLEU and chrF differences to the baseline (or ``reference``) paired by seed, summarised by
    ``seed_interval``: on the study's split (and the references' cross-entropy where every seed was scored), and
    under ``extra_tests`` on every extra test both runs of a seed were scored on. The split's BLEU also at the last
    evaluation both runs of a seed reached (``bleu_last_shared_evaluation``): the checkpoints are chosen on the split
    they are scored on, and that comparison involves no choice."""
    reference = reference or study.baseline
    reference_by_seed = {r["seed"]: r for r in records if r["name"] == reference}
    summaries = {}
    for run in runs or study.runs:
        paired = [(r, reference_by_seed[r["seed"]]) for r in records
                  if r["name"] == run and r["seed"] in reference_by_seed]
        if run == reference or not paired:
            continue
        summaries[run] = _paired_summary([(_split_scores(study, r), _split_scores(study, base), r["seed"])
                                          for r, base in paired])
        curve = f"{study.split}_bleu_per_epoch"
        if all(r[curve] and base[curve] for r, base in paired):
            summaries[run]["bleu_last_shared_evaluation"] = seed_interval(
                {r["seed"]: _at_last_shared_evaluation(r[curve], base[curve]) for r, base in paired})
        tests = sorted({name for r, base in paired for name in set(r["extra_tests"]) & set(base["extra_tests"])})
        summaries[run]["extra_tests"] = {
            name: _paired_summary([(r["extra_tests"][name], base["extra_tests"][name], r["seed"]) for r, base in paired
                                   if name in r["extra_tests"] and name in base["extra_tests"]])
            for name in tests}
    return summaries


def against_references(study: Study, records: list[dict]) -> dict[str, dict]:
    """``over_seeds`` against each of the study's other references (``against``): whether two variants differ needs
    the spread of their own paired differences, which their two intervals against the baseline do not give."""
    return {reference: summaries for reference, runs in study.against.items()
            if (summaries := over_seeds(study, records, reference, runs))}


def _at_last_shared_evaluation(curve: list[float], base_curve: list[float]) -> float:
    """A run's score minus its baseline's at the last evaluation both reached (one may have stopped early)."""
    shared = min(len(curve), len(base_curve))
    return curve[shared - 1] - base_curve[shared - 1]


def _split_scores(study: Study, record: dict) -> dict[str, float]:
    """A record's BLEU and chrF on the study's split, and its references' cross-entropy where it was scored, keyed
    like an extra test's scores."""
    return {metric: record[f"{study.split}_{metric}"] for metric in METRICS if f"{study.split}_{metric}" in record}


def _paired_summary(pairs: list[tuple[dict, dict, int]]) -> dict:
    """``seed_interval`` of each score both runs of every pair have (BLEU and chrF; the cross-entropy where every
    seed was scored) over (run scores, baseline scores, seed) pairs, and the seeds paired."""
    shared = [metric for metric in METRICS if all(metric in run and metric in base for run, base, _ in pairs)]
    return {**{metric: seed_interval({seed: run[metric] - base[metric] for run, base, seed in pairs},
                                     higher_is_better=METRICS[metric][0], digits=METRICS[metric][1])
               for metric in shared},
            "paired_seeds": [seed for _, _, seed in pairs]}


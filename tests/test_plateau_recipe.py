"""The plateau-recipe measurement's decision rule (benchmarks/analyses/plateau_recipe.py): the plateau is the mean of
the averaged curve's last budgets, the choice the cheapest option within the tolerance of it."""

import importlib.util
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "analyses" / "plateau_recipe.py"
spec = importlib.util.spec_from_file_location("plateau_recipe", SCRIPT)
plateau_recipe = importlib.util.module_from_spec(spec)
spec.loader.exec_module(plateau_recipe)


def point(budget: int, bleu: float) -> dict:
    return {"budget_epochs": budget, "dev_bleu": bleu, "seconds": budget * 350}


CURVE = [point(8, 40.1), point(16, 42.6), point(24, 43.3), point(32, 43.5), point(40, 43.4)]


def test_no_choice_before_the_curve_reaches_its_full_budget():
    decision = plateau_recipe.choose(CURVE[:3], [], plateau_budgets=3, tolerance=0.3, full_budget=40)
    assert decision == {"status": "pending", "why": "the curve run has reached epoch 24 of 40"}


def test_the_cheapest_option_within_the_tolerance_of_the_plateau_is_chosen():
    cosine = {"name": "cosine, 16 epochs", "budget_epochs": 16, "dev_bleu": 43.2, "seconds": 16 * 350}
    decision = plateau_recipe.choose(CURVE, [cosine], plateau_budgets=3, tolerance=0.3, full_budget=40)
    assert decision["plateau_dev_bleu"] == pytest.approx((43.3 + 43.5 + 43.4) / 3)
    assert decision["plateau_scatter"] == pytest.approx(0.1)
    assert decision["choice"]["name"] == "cosine, 16 epochs"  # 43.2 >= 43.4 - 0.3, and cheaper than epoch 24


def test_without_a_cheaper_candidate_the_curve_budget_that_gets_there_is_chosen():
    decision = plateau_recipe.choose(CURVE, [], plateau_budgets=3, tolerance=0.3, full_budget=40)
    assert decision["choice"]["name"] == "inverse_sqrt, 24 epochs"


def test_the_report_names_the_scored_set_and_its_size():
    curve = [{**entry, "dev_chrf": 60.0, "single_checkpoint_dev_bleu": entry["dev_bleu"] - 1,
              "single_checkpoint_dev_loss": 2.5} for entry in CURVE]
    report = {"seed": 42, "average": 5, "source": "val.de.gz", "split": "val", "reference_lines": 1014,
              "curve": curve, "candidates": [],
              "decision": plateau_recipe.choose(curve, [], plateau_budgets=3, tolerance=0.3, full_budget=40)}
    text = plateau_recipe.markdown(report)
    assert "averaged val BLEU" in text and "43.40 val BLEU" in text and "1014 val lines" in text
    assert " dev " not in text


def test_a_plateau_of_fewer_than_two_budgets_is_refused_before_anything_is_scored(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr("sys.argv", ["plateau_recipe.py", "--curve", str(tmp_path), "--budgets", "8"])
    with pytest.raises(SystemExit):
        plateau_recipe.main()
    assert "--plateau-budgets 3: the plateau is the mean of at least 2 of the 1 --budgets" in capsys.readouterr().err

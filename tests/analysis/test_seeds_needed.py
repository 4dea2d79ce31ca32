"""How many seeds each conclusion needs (analysis.seeds_needed), on small score tables whose answers are worked out
by hand: a conclusion that flips at 5 seeds settles at 5, one that changes at the last count is not settled, and a
table of unequal seed counts is followed only as far as every cell goes, and says so."""
from __future__ import annotations

import math

import pandas as pd
import pytest
import scipy.stats

import analysis.seeds_needed as seeds_needed_module
from analysis.seeds import first_seeds
from analysis.table1 import pairwise_differences
from analysis.seeds_needed import (NEEDED_COLUMNS, Finding, figure3_claim_findings, figure3_needed,
                                   figure3_pair_findings, ladder_gap,
                                   needed_markdown,
                                   seed_ladder, seeds_needed, settled_text, settles_from, table1_findings,
                                   table1_needed, write_needed)

LABELS = {"clip_0.1": "Clipping, ε = 0.1", "clip_0.2": "Clipping, ε = 0.2", "kl_fixed_1": "Fixed KL, β = 1", "no_clip": "No clipping or penalty",
          "a2c": "A2C", "trpo": "TRPO"}
PAPER = pd.Series({"clip_0.2": 0.82, "kl_fixed_1": 0.71, "no_clip": -0.39})
RANDOM = pd.Series({"T1": 0.0, "T2": 0.0})


def runs(cells: dict[tuple[str, str], list[float]]) -> pd.DataFrame:
    """One row per run: ``cells[(task, variant)]`` lists the scores of seeds 0, 1, …"""
    rows = [(t, v, k, s) for (t, v), values in cells.items() for k, s in enumerate(values)]
    df = pd.DataFrame(rows, columns=["task", "variant", "seed", "score"])
    return df.assign(run_id=df["task"] + "/" + df["variant"] + "/seed" + df["seed"].astype(str),
                     variant_label=df["variant"].map(LABELS), status="completed")


def wiggle(base: float, n: int = 8) -> list[float]:
    """base, base + 0.2, base, base + 0.2, …: a little spread over seeds."""
    return [base + 0.2 * (k % 2) for k in range(n)]


def table1_runs(no_clip_seeds: int = 8) -> pd.DataFrame:
    """Two tasks (random policy 0): ε = 0.2 about 10, β = 1 about 5, no clipping about 6 at seeds 0–3 and about 0 from
    seed 4. The mean of no clipping over seeds 0..n-1 is 6.07 at n = 3 and 6.10 at 4 (above β = 1's 5.07 and 5.10),
    (6 + 6.2 + 6 + 6.2 + 0) / 5 = 4.88 at n = 5, below β = 1's 5.08, and lower still after: it is last from 5 seeds."""
    cells = {}
    for task in RANDOM.index:
        cells[(task, "clip_0.2")] = wiggle(10.0)
        cells[(task, "kl_fixed_1")] = wiggle(5.0)
        cells[(task, "no_clip")] = (wiggle(6.0, 4) + wiggle(0.0, 4))[:no_clip_seeds]
    return runs(cells)


def test_settles_from_by_hand():
    ns = [3, 4, 5, 6, 7]
    assert settles_from(["a", "a", "b", "b", "b"], ns) == 5
    assert settles_from(["a"] * 5, ns) == 3
    assert settles_from(["a", "b", "a", "a", "a"], ns) == 5  # back to an earlier answer still counts from its return
    assert settles_from(["a", "a", "a", "a", "b"], ns) is None  # changes at the last count
    assert settles_from(["a"], [3]) is None
    assert settled_text(5, ns) == "5 (same up to 7)"
    assert settled_text(None, ns) == "not settled: changes at 7"
    assert settled_text(None, [3]) == "open: only 3 seeds in every cell"
    with pytest.raises(ValueError):
        settles_from(["a", "b"], [3])


def test_a_conclusion_that_flips_at_five_seeds_settles_at_five():
    needed = table1_needed(table1_runs(), RANDOM, PAPER, n_resamples=500).set_index("question")
    assert list(needed.columns) == [c for c in NEEDED_COLUMNS if c != "question"]
    last = needed.loc["No clipping or penalty last"]
    assert (last["settled_from"], last["settled"]) == (5, "5 (same up to 8)")
    assert (last["answer_first"], last["answer_last"], last["answers"]) == ("no", "yes", "3–4: no; 5–8: yes")
    assert last["evidence_first"].startswith("rank 2,") and last["evidence_last"].startswith("rank 3,")
    best = needed.loc["setting with the highest mean"]
    assert (best["answer_first"], best["settled_from"]) == ("ε = 0.2", 3)
    ranking = needed.loc["ranking of the settings, best first"]
    assert ranking["answers"] == ("3–4: ε = 0.2 > No clipping or penalty > β = 1; "
                                  "5–8: ε = 0.2 > β = 1 > No clipping or penalty")
    assert needed.loc["ε = 0.2 (the paper's best) against the others", "answers"] == "3–8: best"


def test_a_conclusion_that_changes_at_the_last_count_is_not_settled():
    scores = table1_runs()

    def findings(view: pd.DataFrame) -> list[Finding]:
        n = int(view["seed"].max()) + 1
        return [Finding("toy", "more than 7 seeds", "yes" if n > 7 else "no", f"{n} seeds"),
                Finding("toy", "always", "same")]

    needed = seeds_needed(scores, findings).set_index("question")
    assert needed.loc["more than 7 seeds", "settled"] == "not settled: changes at 8"
    assert pd.isna(needed.loc["more than 7 seeds", "settled_from"])
    assert needed.loc["more than 7 seeds", "answers"] == "3–7: no; 8: yes"
    assert (needed.loc["always", "settled_from"], needed.loc["always", "evidence_last"]) == (3, "")
    table = needed_markdown(needed.reset_index())
    assert table.splitlines()[0] == ("| study | conclusion | seeds 0–2 (the paper's 3) | seeds 0–7 | "
                                     "stops changing from |")
    assert "| toy | more than 7 seeds | no: 3 seeds | yes: 8 seeds | not settled: changes at 8 |" in table


def test_unequal_seed_counts_stop_the_ladder_where_every_cell_has_its_seeds(tmp_path):
    """No clipping has 5 seeds on both tasks, every other cell 8: the ladder goes to 5 (seeds 0–4 in every cell),
    and the table's notes say the counts are unequal."""
    scores = table1_runs(no_clip_seeds=5)
    assert seed_ladder(scores) == [3, 4, 5]
    needed = table1_needed(scores, RANDOM, PAPER, n_resamples=500)
    assert set(needed["n_last"]) == {5}
    write_needed(needed, scores, tmp_path / "n.csv", tmp_path / "n.md", ["a note"], "Seeds needed")
    md = (tmp_path / "n.md").read_text()
    assert "unequal seeds: 5 to 8 per (setting, task) cell (of the 6 cells, 2 have 5, 4 have 8; every cell has seeds " \
           "0–4)" in md and "chosen by the smallest cell (5 seeds" in md


def test_no_ladder_below_three_seeds(tmp_path):
    scores = table1_runs()
    two = scores[~((scores["task"] == "T1") & (scores["variant"] == "no_clip") & (scores["seed"] >= 2))]
    assert seed_ladder(two) == [] and ladder_gap(scores) == ""
    reason = ladder_gap(two)
    assert reason.startswith("No seeds-needed table: it needs seeds 0–2 in every (setting, task) cell; the runs have "
                             "unequal seeds: 2 to 8")
    with pytest.raises(ValueError, match="needs seeds 0–2"):
        table1_needed(two, RANDOM, PAPER)
    # a pair's ladder reads the pair's cells only, and so does its error: no clipping's T1 cell has 2 seeds, the others 8
    assert seed_ladder(two, variants=["clip_0.2", "kl_fixed_1"]) == [3, 4, 5, 6, 7, 8]
    with pytest.raises(ValueError, match="every cell of clip_0.2, no_clip needs seeds 0–2; the runs have unequal "
                                         "seeds: 2 to 8 per .*of the 4 cells, 1 have 2, 3 have 8"):
        seeds_needed(two, lambda view: [], variants=["clip_0.2", "no_clip"])
    write_needed(reason, two, tmp_path / "n.csv", tmp_path / "n.md", [], "Seeds needed")
    assert pd.read_csv(tmp_path / "n.csv").empty and reason in (tmp_path / "n.md").read_text()


def test_pairs_distinguishable_one_at_a_time_and_over_the_family():
    """Four settings 0.5 apart on two tasks (random 0), each cell's seeds at base, base + 0.6, base + 0.3: normalised by
    the best task mean 10.3, neighbours differ by 0.5 / 10.3 = 0.0485 with se = √(4 · 0.03) / 10.3 / 2 = 0.0168, t =
    2.887 on 8 degrees of freedom, p = 0.0203: each neighbouring pair is distinguishable at 95% on its own, but Holm
    over the 6 pairs stops there (the three smaller p pass 0.05/6, 0.05/5, 0.05/4; 0.0203 > 0.05/3)."""
    cells = {}
    for task in RANDOM.index:
        for k, variant in enumerate(["clip_0.2", "kl_fixed_1", "clip_0.1", "no_clip"]):
            cells[(task, variant)] = [10.0 - 0.5 * k + d for d in (0.0, 0.6, 0.3)]
    pairs = pairwise_differences(runs(cells), RANDOM).set_index(["higher", "lower"])
    neighbours = [("clip_0.2", "kl_fixed_1"), ("kl_fixed_1", "clip_0.1"), ("clip_0.1", "no_clip")]
    t = (0.5 / 10.3) / (math.sqrt(4 * 0.03) / 10.3 / 2)
    for pair in neighbours:
        assert pairs.loc[pair, "p"] == pytest.approx(2 * scipy.stats.t.sf(t, 8), rel=1e-9)
        assert pairs.loc[pair, "p"] == pytest.approx(0.0203, abs=5e-5)
    assert pairs["distinguishable"].all()
    assert sorted(pairs.index[~pairs["distinguishable_family"]]) == sorted(neighbours)

    # the best's own tests call β = 1 below it; over the family only ε = 0.1 and no clipping are
    found = {f.question: f.answer for f in table1_findings(runs(cells), RANDOM, PAPER.reindex(LABELS).dropna()
                                                           .combine_first(pd.Series({"clip_0.1": 0.76})))}
    assert found["settings below the highest mean"] == "β = 1, ε = 0.1, No clipping or penalty"
    assert found["settings below the highest mean with 5% family-wise error"] == "ε = 0.1, No clipping or penalty"
    # the studentized bootstrap at 6 seeds, asked for 100 resamples: its p could not go below 2/101 > 0.05/6, so it
    # takes 4 · 6 / 0.05 = 480, and the pairs 1.0 apart or more (t ≈ 9 on 20 degrees of freedom) pass Holm
    six = {cell: values + [v + 0.1 for v in values] for cell, values in cells.items()}
    boot = pairwise_differences(runs(six), RANDOM, n_resamples=100).set_index(["higher", "lower"])
    assert boot.loc[("clip_0.2", "clip_0.1"), "p"] >= 2 / 481
    far = [pair for pair in boot.index if pair not in neighbours]
    assert boot.loc[far, "distinguishable_family"].all()


@pytest.mark.parametrize("trpo_t1, expected", [([2.5, 3.0, 4.0], "not distinguishable on 2"),
                                               ([4.0, 5.0, 6.0], "below on T1; not distinguishable on 1")])
def test_figure3_per_task_holds_its_error_over_the_tasks(trpo_t1, expected):
    """PPO 0, 1, 2 on both tasks; TRPO 0.5, 1.5, 2.5 on T2 (Welch's p 0.573). TRPO 2.5, 3, 4 on T1: p 0.0442, below
    by a single test at 95%, but above Holm's 0.05/2 = 0.025 for the smaller of two p: not distinguishable. TRPO 4, 5, 6
    on T1: p 0.0080 <= 0.025, below on T1; then 0.573 > 0.05: T2 not."""
    scores = runs({("T1", "clip_0.2"): [0.0, 1.0, 2.0], ("T2", "clip_0.2"): [0.0, 1.0, 2.0],
                   ("T1", "trpo"): trpo_t1, ("T2", "trpo"): [0.5, 1.5, 2.5]})
    p = scipy.stats.ttest_ind([0.0, 1.0, 2.0], trpo_t1, equal_var=False).pvalue
    assert round(p, 4) == (0.0442 if trpo_t1[0] == 2.5 else 0.0080)
    found = {f.question: f for f in figure3_pair_findings(scores, RANDOM, "trpo", n_resamples=100)}
    assert found["PPO against TRPO, per task"].text == expected
    assert found["PPO against TRPO, per task"].evidence == ("Holm's test over the 2 tasks; each task at 95% on its own: "
                                                            "below on T1; not distinguishable on 1")


def test_figure3_findings_per_baseline_per_task_and_over_the_tasks():
    """PPO about 10 on both tasks; A2C about 2 (below PPO everywhere); TRPO about 10 on T1 and 20 on T2 (above PPO
    there): PPO is best on T1 only, below the best other algorithm on T2, above A2C on both tasks and over them."""
    cells = {}
    for task in RANDOM.index:
        cells[(task, "clip_0.2")] = wiggle(10.0, 3)
        cells[(task, "a2c")] = wiggle(2.0, 3)
        cells[(task, "trpo")] = wiggle(10.1 if task == "T1" else 20.0, 3)
    scores = runs(cells)
    found = {f.question: f for f in [*figure3_claim_findings(scores, n_resamples=500),
                                     *figure3_pair_findings(scores, RANDOM, "a2c", n_resamples=500),
                                     *figure3_pair_findings(scores, RANDOM, "trpo", n_resamples=500)]}
    assert found["PPO against A2C, per task"].answer == "T1: above; T2: above"
    assert found["PPO against A2C, per task"].text == "above on T1, T2"
    assert found["PPO against A2C, over the tasks (normalised)"].answer == "above"
    assert found["PPO against TRPO, per task"].text == "below on T2; not distinguishable on 1"
    assert found["PPO against the best other algorithm, per task"].text == "below the best on T2; not distinguishable on 1"
    claim = found["the paper's claim (PPO best on almost every task)"]
    assert (claim.answer, claim.evidence) == ("partly reproduced", "PPO's mean best on 0 of 2")


def test_figure3_pairs_are_followed_as_far_as_their_own_cells_go(monkeypatch):
    """PPO and A2C at 6 seeds on both tasks, TRPO at 3 (the ten-seed grid trains one baseline's seeds at a time):
    PPO against A2C is followed to 6 seeds; PPO against TRPO, the claim and the best other algorithm wait at 3. A2C
    (about 2) is below PPO (about 10) at every count, so it settles at 3; its over-tasks interval takes the method
    of the pair's own smallest cell (the studentized bootstrap from 5 seeds), not that of TRPO's 3."""
    cells = {}
    for task in RANDOM.index:
        cells[(task, "clip_0.2")] = wiggle(10.0, 6)
        cells[(task, "a2c")] = wiggle(2.0, 6)
        cells[(task, "trpo")] = wiggle(10.1 if task == "T1" else 20.0, 3)
    methods = []
    real = seeds_needed_module.versus_anchor
    monkeypatch.setattr(seeds_needed_module, "versus_anchor",
                        lambda *a, **k: methods.append((a[1], k["method"])) or real(*a, **k))
    needed = figure3_needed(runs(cells), RANDOM, n_resamples=500).set_index("question")
    assert list(needed["n_last"]) == [3, 3, 6, 6, 3, 3]
    assert [m for b, m in methods if b == "a2c"] == ["t", "t", "bootstrap-t", "bootstrap-t"]  # n = 3, 4, 5, 6
    assert [m for b, m in methods if b == "trpo"] == ["t"]
    a2c = needed.loc["PPO against A2C, over the tasks (normalised)"]
    assert (a2c["settled_from"], a2c["settled"], a2c["answer_last"]) == (3, "3 (same up to 6)", "above")
    assert a2c["answers"] == "3–6: above"
    assert needed.loc["PPO against TRPO, per task", "settled"] == "open: only 3 seeds in every cell"
    table = needed_markdown(needed.reset_index()).splitlines()
    assert table[0] == ("| study | conclusion | seeds 0–2 (the paper's 3) | the most seeds every cell it reads has | "
                        "stops changing from |")
    assert "| seeds 0–5: above: " in table[2 + 3]
    assert table[2 + 4].endswith("| no seed beyond 3 yet | open: only 3 seeds in every cell |")
    assert set(figure3_needed(first_seeds(runs(cells), 3), RANDOM, n_resamples=500)["n_last"]) == {3}


def test_table1_findings_name_the_distinguishable_pairs_by_the_higher_setting():
    """Seeds 0–2 of table1_runs: ε = 0.2 (about 10) above both others and no clipping (about 6) above β = 1 (about 5),
    each by ten times its spread over seeds or more: all three pairs, each higher setting with those below it, in the
    ranking's order. The answer compared from one seed count to the next stays the flat list."""
    found = {f.question: f for f in table1_findings(first_seeds(table1_runs(), 3), RANDOM, PAPER, n_resamples=500)}
    pairs = found["pairs of settings distinguishable from each other"]
    assert pairs.text == "3 of 3"
    assert pairs.evidence == ("ε = 0.2 > No clipping or penalty, β = 1; No clipping or penalty > β = 1 "
                              "(each pair at 95% on its own)")
    assert sorted(pairs.answer.split("; ")) == ["No clipping or penalty > β = 1", "ε = 0.2 > No clipping or penalty",
                                                "ε = 0.2 > β = 1"]
    below = found["settings below the highest mean with 5% family-wise error"]
    assert (below.answer, below.evidence) == ("No clipping or penalty, β = 1", "2 of 2 (the highest mean's pairs that pass "
                                                                                 "Holm's test over all 3)")
    family = found["pairs distinguishable with 5% family-wise error"]
    assert (family.text, family.answer) == ("3 of 3", pairs.answer)
    assert family.evidence == ("ε = 0.2 > No clipping or penalty, β = 1; No clipping or penalty > β = 1 (Holm's test "
                               "over the 3 pairs: at most 5% chance of any equal pair called distinguishable)")

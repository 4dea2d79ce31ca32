"""How many seeds each conclusion of Table 1 and Figure 3 needs.

A conclusion (:class:`Finding`: a question and its answer, with the numbers behind it) is computed from the runs of
seeds 0..n-1 for n = 3, 4, …, N, N the largest n for which every (setting, task) cell has each of seeds 0..n-1
(:func:`seed_ladder`). It *settles* at the smallest n from which its answer no longer changes up to N
(:func:`settles_from`); an answer that changes at N itself is "not settled", and with N = 3 nothing can be said yet.
The answers are the ones the reports give (analysis.table1, analysis.figure3), with the interval method each seed
count allows (analysis.stats.interval_method_for), so a conclusion may also move where the method changes, at 5
seeds. :func:`seeds_needed` is a function of the records (one row per run: ``task``, ``variant``, ``variant_label``,
``seed``, ``score``, ``status``) and of a function that draws the conclusions from such a table
(:func:`table1_findings`, :func:`figure3_claim_findings`, :func:`figure3_pair_findings`).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import pandas as pd

from analysis.figure3 import claim_outcome, claim_table, versus_anchor
from analysis.report_tables import write_table
from analysis.seeds import PAPER_SEEDS, first_seeds, seed_counts, seed_span
from analysis.stats import holm, interval_side, stratified_difference_test
from analysis.table1 import (AGREEMENT_LEVEL, FAMILY_LEVEL, normalize_scores, p_text, pairwise_differences,
                             paper_checks, table1)


@dataclass(frozen=True)
class Finding:
    """One conclusion at one number of seeds: ``answer`` is what is compared from one count to the next;
    ``shown`` (the answer by default) is how a table prints it, ``evidence`` the numbers behind it."""

    study: str
    question: str
    answer: str
    evidence: str = ""
    shown: str = ""

    @property
    def text(self) -> str:
        return self.shown or self.answer


Findings = Callable[[pd.DataFrame], list[Finding]]
NOT_SETTLED = "not settled"
# Seven tasks tested at 95% each call PPO apart from a baseline equal to it on every task in 21.5-32% of rows, Holm's
# test over the tasks in 2.5-7% (scripts/interval_coverage.py --per-task, 3 to 10 seeds, normal seeds; above 5% only
# where Welch's test itself errs, one side's spread 5 times the other's). The claim's own per-task test holds its error
# over the algorithms (analysis.figure3.CLAIM_RULE), this over the tasks.
CONFIDENCE = 0.95
PER_TASK_RULE = ("PPO against one baseline, per task: Welch's test of the two algorithms' seeds on each task, 'above' or "
                 f"'below' where Holm's test over the tasks rejects no difference ({FAMILY_LEVEL:.0%} family-wise per "
                 "baseline), 'not distinguishable' otherwise; the single tests at 95% beside it. Where the two are "
                 "equal on every task, single tests call them apart on some task in 21.5-32% of rows, Holm's test in "
                 "2.5-7% (scripts/interval_coverage.py --per-task).")
SEEDS_NEEDED_RULE = (
    "Seeds needed: each conclusion is drawn again from the runs of seeds 0..n-1, n = 3 (the paper's protocol) up to N, "
    "the seeds every (setting, task) cell it reads has (PPO against one baseline reads the two algorithms' cells); "
    "it settles at the smallest n from which its answer stays the same up "
    "to N. 'not settled': the answer changes at N itself, so more seeds may move it again; with N = 3 there is "
    "nothing to compare yet. Intervals at each n by the method that n allows (the t interval below 5 seeds per cell, "
    "the studentized stratified bootstrap from 5: analysis.stats.BOOTSTRAP_FROM), so an answer may also move where "
    "the method changes. Settling up to N is not proof that more seeds would not move it. " + PER_TASK_RULE
)


def seed_ladder(scores: pd.DataFrame, start: int = PAPER_SEEDS, variants: Sequence[str] | None = None) -> list[int]:
    """The seed counts n = start..N at which every cell (of ``variants`` only, when given) has each of seeds 0..n-1
    (empty when such a cell lacks one of seeds 0..start-1)."""
    read = scores if variants is None else scores[scores["variant"].isin(variants)]
    return list(range(start, seed_counts(read).common + 1))


def settles_from(answers: Sequence[str], ns: Sequence[int]) -> int | None:
    """The smallest n of ``ns`` from which every answer equals the last one; None when the last answer differs
    from the one before (it changes at the last count: not settled) or there is only one count."""
    if len(answers) != len(ns) or not ns:
        raise ValueError(f"{len(answers)} answers for {len(ns)} seed counts")
    if len(ns) == 1 or answers[-1] != answers[-2]:
        return None
    k = len(answers) - 1
    while k > 0 and answers[k - 1] == answers[-1]:
        k -= 1
    return ns[k]


def settled_text(settled: int | None, ns: Sequence[int]) -> str:
    """What :func:`settles_from` found, in words."""
    if len(ns) == 1:
        return f"open: only {ns[0]} seeds in every cell"
    if settled is None:
        return f"{NOT_SETTLED}: changes at {ns[-1]}"
    return f"{settled} (same up to {ns[-1]})"


def _runs_of(answers: Sequence[str], ns: Sequence[int]) -> str:
    """The answers by seed count, equal neighbours joined: '3–4: no; 5–10: yes'."""
    parts, start = [], 0
    for k in range(1, len(ns) + 1):
        if k == len(ns) or answers[k] != answers[start]:
            span = f"{ns[start]}" if k - 1 == start else f"{ns[start]}–{ns[k - 1]}"
            parts.append(f"{span}: {answers[start]}")
            start = k
    return "; ".join(parts)


NEEDED_COLUMNS = ["study", "question", "settled_from", "settled", "n_first", "answer_first", "evidence_first",
                  "n_last", "answer_last", "evidence_last", "answers"]


def seeds_needed(scores: pd.DataFrame, findings: Findings, start: int = PAPER_SEEDS,
                 variants: Sequence[str] | None = None) -> pd.DataFrame:
    """Each conclusion of ``findings`` at n = start..N seeds (:func:`seed_ladder`; N from the cells of ``variants``
    when given: the conclusions read only those, and are followed as far as their cells go while the other cells
    still lack seeds), one row per conclusion: ``settled_from`` (the n it settles at; missing when it does not, or
    when N = start) and ``settled`` in words, the answer and evidence at the first and last count (``answer_first``:
    the paper's protocol at start = 3), and every answer by count (``answers``). At each n ``findings`` gets every
    run of seeds 0..n-1. Raises when a cell lacks one of seeds 0..start-1."""
    ns = seed_ladder(scores, start, variants)
    if not ns:
        read = scores if variants is None else scores[scores["variant"].isin(variants)]
        which = "every cell" if variants is None else f"every cell of {', '.join(variants)}"
        raise ValueError(f"seeds needed: {which} needs {seed_span(start)}; the runs have "
                         f"{seed_counts(read).text()}")
    by_n = [findings(first_seeds(scores, n)) for n in ns]
    questions = [(f.study, f.question) for f in by_n[0]]
    for n, got in zip(ns, by_n):
        if [(f.study, f.question) for f in got] != questions:
            raise ValueError(f"the conclusions at {n} seeds are not those at {ns[0]}")
    rows = []
    for k, (study, question) in enumerate(questions):
        cells = [got[k] for got in by_n]
        answers = [f.answer for f in cells]
        settled = settles_from(answers, ns)
        rows.append({"study": study, "question": question, "settled_from": settled,
                     "settled": settled_text(settled, ns), "n_first": ns[0], "answer_first": cells[0].text,
                     "evidence_first": cells[0].evidence, "n_last": ns[-1], "answer_last": cells[-1].text,
                     "evidence_last": cells[-1].evidence, "answers": _runs_of([f.text for f in cells], ns)})
    out = pd.DataFrame(rows, columns=NEEDED_COLUMNS)
    out["settled_from"] = out["settled_from"].astype("Int64")
    return out


def ladder_gap(scores: pd.DataFrame, start: int = PAPER_SEEDS) -> str:
    """Why :func:`seeds_needed` cannot run on ``scores`` (a cell lacks one of seeds 0..start-1), or "" when it can."""
    if seed_ladder(scores, start):
        return ""
    return (f"No seeds-needed table: it needs {seed_span(start)} in every (setting, task) cell; the runs have "
            f"{seed_counts(scores).text()}")


def write_needed(needed: pd.DataFrame | str, scores: pd.DataFrame, csv_path, md_path, notes: Sequence[str],
                 title: str) -> None:
    """A report's seeds-needed table (CSV and markdown) with the seed counts and :data:`SEEDS_NEEDED_RULE` in its
    notes; ``needed`` is the table or, when there is none, the reason (an empty table with it in the notes)."""
    reason = needed if isinstance(needed, str) else ""
    frame = pd.DataFrame(columns=NEEDED_COLUMNS) if reason else needed
    write_table(frame, csv_path, md_path, [*notes, "Runs: " + seed_counts(scores).text(), SEEDS_NEEDED_RULE,
                                           *([reason] if reason else [])], title)


def needed_markdown(needed: pd.DataFrame) -> str:
    """The first page's table of :func:`seeds_needed` rows: the answer at the paper's 3 seeds, at N (when N > 3),
    and from how many seeds it holds. Rows followed to different N (Figure 3's pairs) name theirs in the cell."""
    first, lasts = int(needed["n_first"].iloc[0]), needed["n_last"].astype(int)
    last, uniform = int(lasts.max()), lasts.nunique() == 1
    head = ["study", "conclusion", f"{seed_span(first)} (the paper's {first})"]
    head += [seed_span(last) if uniform else "the most seeds every cell it reads has"] * (last > first)
    head += ["stops changing from"]
    body = []
    for r in needed.itertuples():
        first_cell = r.answer_first + (f": {r.evidence_first}" if r.evidence_first else "")
        last_cell = r.answer_last + (f": {r.evidence_last}" if r.evidence_last else "")
        if not uniform:
            last_cell = f"{seed_span(r.n_last)}: {last_cell}" if r.n_last > first else f"no seed beyond {first} yet"
        body.append([r.study, r.question, first_cell, *([last_cell] * (last > first)), r.settled])
    rule = "|---|---|---|" + "---|" * (last > first) + "---|"
    return "\n".join(["| " + " | ".join(head) + " |", rule,
                      *("| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body)])


def short_label(label: str) -> str:
    """A Table 1 setting's label without its family: 'Clipping, ε = 0.1' -> 'ε = 0.1'."""
    return label.split(", ", 1)[-1]


def _task(task: str) -> str:
    return task.rsplit("-", 1)[0]


def _difference(point: float, low: float, high: float) -> str:
    return f"{point:+.2f} ({low:+.2f} to {high:+.2f})"


def table1_findings(scores: pd.DataFrame, random_scores: pd.Series, published: pd.Series, anchor: str = "clip_0.2",
                    no_clip: str = "no_clip", n_resamples: int = 10_000, seed: int = 0) -> list[Finding]:
    """Table 1's conclusions from ``scores`` (``published``: variant -> the paper's value): the ranking, the setting
    with the highest mean, whether the ranking agrees with the paper's (Spearman ρ above 0 by a permutation test), whether no
    clipping is last, the anchor (ε = 0.2) against the others (analysis.table1.ANCHOR_RULE), the settings below
    the highest mean, and the pairs of settings distinguishable from each other (analysis.table1.pairwise_differences)."""
    t1 = table1(scores, random_scores, n_resamples=n_resamples, seed=seed)
    checks = paper_checks(scores, random_scores, published, anchor=anchor, no_clip=no_clip, seed=seed,
                          interval_resamples=n_resamples)  # ρ's range: paper_checks' 2,000 resamples, as the reports
    label = t1.set_index("variant")["variant_label"].map(short_label)
    rows = t1.set_index("variant")
    best = str(t1["variant"].iloc[0])
    low, high = checks["rho_range"]
    below = [label[v] for v in t1["variant"] if rows.loc[v, "vs_best"] == "below"]
    pairs = pairwise_differences(scores, random_scores, n_resamples=n_resamples, seed=seed)
    rank = {v: k for k, v in enumerate(t1["variant"])}
    # the best was picked from the same runs, so its own tests against the others call some setting below it in most
    # tables where all are equal; Holm over every pair holds 5% whichever pairs are read afterwards
    # (scripts/interval_coverage.py --best)
    family_of_best = pairs[pairs["distinguishable_family"] & (pairs["higher"] == best)]
    below_family = [label[v] for v in t1["variant"] if v in set(family_of_best["lower"])]

    def pairs_finding(column: str, question: str, how: str) -> Finding:
        apart = pairs[pairs[column]]
        apart_text = [f"{label[a]} > {label[b]}" for a, b in zip(apart["higher"], apart["lower"])]
        # which settings are apart, for a reader: each higher setting with those below it, both in the ranking's order
        above = {}
        for a, b in sorted(zip(apart["higher"], apart["lower"]), key=lambda pair: (rank[pair[0]], rank[pair[1]])):
            above.setdefault(a, []).append(label[b])
        shown = "; ".join(f"{label[a]} > {', '.join(lower)}" for a, lower in above.items()) or "none"
        return Finding("Table 1", question, "; ".join(apart_text) or "none", f"{shown} ({how})",
                       shown=f"{len(apart)} of {len(pairs)}")

    gap = checks["anchor_minus_best"]
    vs_best = checks["anchor_vs_best"]
    below_anchor = ", ".join(label[v] for v in checks["anchor_below"]) or "none"
    above_anchor = "all" if len(checks["anchor_above"]) == len(checks["anchor_p"]) else (
        "; ".join(label[v] for v in checks["anchor_above"]) or "none")
    return [
        Finding("Table 1", "ranking of the settings, best first", " > ".join(label[v] for v in t1["variant"])),
        Finding("Table 1", "setting with the highest mean", label[best],
                f"{rows.loc[best, 'ours']:.2f} ({rows.loc[best, 'ci_low']:.2f} to {rows.loc[best, 'ci_high']:.2f})"),
        Finding("Table 1", f"ranking agrees with the paper's (Spearman ρ above 0, permutation p < {AGREEMENT_LEVEL})",
                "yes" if checks["rho_p"] < AGREEMENT_LEVEL else "no",
                f"ρ = {checks['rho']:.2f}, p {p_text(checks['rho_p'])} ({low:.2f} to {high:.2f} over resampled seeds)"),
        Finding("Table 1", f"{label.get(no_clip, no_clip)} last", "yes" if checks["no_clip_last"] else "no",
                f"rank {checks['no_clip_rank']}, last in {checks['no_clip_last_fraction']:.0%} of resamples"),
        Finding("Table 1", f"{label[anchor]} (the paper's best) against the others", vs_best,
                (f"the highest mean; above {above_anchor} of the {len(checks['anchor_p'])} others by Holm's test "
                 "against each" if anchor == best else f"{_difference(*gap)} from {label[best]}; below "
                 f"{below_anchor} of the {len(checks['anchor_p'])} others by Holm's test against each")),
        Finding("Table 1", "settings below the highest mean", ", ".join(below) or "none",
                f"{len(below)} of {len(t1) - 1} (each against the highest mean at 95% on its own)"),
        Finding("Table 1", f"settings below the highest mean with {FAMILY_LEVEL:.0%} family-wise error",
                ", ".join(below_family) or "none",
                f"{len(below_family)} of {len(t1) - 1} (the highest mean's pairs that pass Holm's test over all {len(pairs)})"),
        pairs_finding("distinguishable", "pairs of settings distinguishable from each other",
                      "each pair at 95% on its own"),
        pairs_finding("distinguishable_family", f"pairs distinguishable with {FAMILY_LEVEL:.0%} family-wise error",
                      f"Holm's test over the {len(pairs)} pairs: at most {FAMILY_LEVEL:.0%} chance of any equal pair "
                      "called distinguishable"),
    ]


def _sides(per_task: dict[str, str]) -> str:
    """Per-task words counted: 'above on Hopper, Walker2d; below on Reacher; not distinguishable on 4'."""
    parts = []
    for word in ("above", "below", "best", "below the best"):
        tasks = [_task(t) for t, w in per_task.items() if w == word]
        if tasks:
            parts.append(f"{word} on {', '.join(tasks)}")
    rest = sum(w not in ("above", "below", "best", "below the best") for w in per_task.values())
    if rest:
        parts.append(f"not distinguishable on {rest}")
    return "; ".join(parts)


def figure3_claim_findings(scores: pd.DataFrame, anchor: str = "clip_0.2", n_resamples: int = 10_000,
                           seed: int = 0) -> list[Finding]:
    """Figure 3's conclusions that read every algorithm: the paper's claim (analysis.figure3.claim_outcome) and PPO
    (the ``anchor``) against the best other algorithm per task (analysis.figure3.claim_table)."""
    claim = claim_table(scores, anchor, n_resamples, seed)
    per_task_best = dict(zip(claim["task"], claim["verdict"]))
    best_on = [_task(t) for t in claim.loc[claim["best"] == anchor, "task"]]
    return [
        Finding("Figure 3", "the paper's claim (PPO best on almost every task)", claim_outcome(claim, anchor),
                f"PPO's mean best on {len(best_on)} of {len(claim)}" + (f": {', '.join(best_on)}" if best_on else "")),
        Finding("Figure 3", "PPO against the best other algorithm, per task",
                "; ".join(f"{t}: {w}" for t, w in per_task_best.items()), shown=_sides(per_task_best)),
    ]


def figure3_pair_findings(scores: pd.DataFrame, random_scores: pd.Series, baseline: str, anchor: str = "clip_0.2",
                          n_resamples: int = 10_000, seed: int = 0) -> list[Finding]:
    """PPO (the ``anchor``) against one ``baseline``: per task by :data:`PER_TASK_RULE` (Welch's test at every seed
    count: one task's two sets of seeds, Holm's over the tasks) and over the tasks, normalised as Figure 3 (each
    task's best algorithm from every run in ``scores``) with the interval method the pair's own smallest cell allows
    (analysis.figure3.versus_anchor)."""
    tests = {}
    for task, group in scores.groupby("task", sort=True):
        ppo = group.loc[group["variant"] == anchor, "score"].to_numpy(float)
        other = group.loc[group["variant"] == baseline, "score"].to_numpy(float)
        if ppo.size and other.size:
            tests[task] = stratified_difference_test([ppo], [other])
    family = dict(zip(tests, holm([p for _, p in tests.values()], FAMILY_LEVEL)))
    single = {task: p < 1 - CONFIDENCE for task, (_, p) in tests.items()}  # Welch's interval excludes 0

    def sides(apart: dict[str, bool]) -> dict[str, str]:
        return {task: "no interval" if interval_side(d.low, d.high) == "no interval" else
                ("above" if d.point > 0 else "below") if apart[task] else "not distinguishable"
                for task, (d, _) in tests.items()}
    method = seed_counts(scores[scores["variant"].isin([anchor, baseline])]).method
    versus = versus_anchor(normalize_scores(scores, random_scores), baseline, anchor, method=method,
                           n_resamples=n_resamples, seed=seed)
    flipped = {"above": "below", "below": "above"}.get(versus["vs_anchor"], versus["vs_anchor"])  # PPO − it
    name = scores.loc[scores["variant"] == baseline, "variant_label"].iloc[0]
    return [
        Finding("Figure 3", f"PPO against {name}, per task",
                "; ".join(f"{t}: {w}" for t, w in sides(family).items()),
                f"Holm's test over the {len(tests)} tasks; each task at 95% on its own: "
                f"{_sides(sides(single)) or 'none'}", shown=_sides(sides(family)) or "none"),
        Finding("Figure 3", f"PPO against {name}, over the tasks (normalised)", flipped,
                _difference(-versus["diff_vs_anchor"], -versus["diff_ci_high"], -versus["diff_ci_low"])),
    ]


def table1_needed(scores: pd.DataFrame, random_scores: pd.Series, published: pd.Series, anchor: str = "clip_0.2",
                  no_clip: str = "no_clip", n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """:func:`seeds_needed` of :func:`table1_findings`."""
    return seeds_needed(scores, partial(table1_findings, random_scores=random_scores, published=published,
                                        anchor=anchor, no_clip=no_clip, n_resamples=n_resamples, seed=seed))


def figure3_needed(scores: pd.DataFrame, random_scores: pd.Series, anchor: str = "clip_0.2",
                   n_resamples: int = 10_000, seed: int = 0) -> pd.DataFrame:
    """:func:`seeds_needed` of Figure 3's conclusions, each followed as far as the cells it reads go: the claim and
    PPO against the best other algorithm to the seeds every cell has (:func:`figure3_claim_findings`), PPO against
    each baseline to the seeds every cell of the two has (:func:`figure3_pair_findings`). The ten-seed grid trains
    a baseline's seeds 3–9 task by task, so a pair's answer can be followed while the other baselines wait."""
    claim = seeds_needed(scores, partial(figure3_claim_findings, anchor=anchor, n_resamples=n_resamples, seed=seed))
    pairs = [seeds_needed(scores, partial(figure3_pair_findings, random_scores=random_scores, baseline=baseline,
                                          anchor=anchor, n_resamples=n_resamples, seed=seed),
                          variants=[anchor, baseline])
             for baseline in sorted(set(scores["variant"]) - {anchor})]
    return pd.concat([claim, *pairs], ignore_index=True)

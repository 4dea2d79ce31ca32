"""Golden records: any change of numerics fails here, per algorithm, before it can mix with published runs.

Published paper-scale runs (published/, ppo.pipeline.publish) are records of the code at one revision. A change that
alters a run's floats (an optimizer epsilon, an order of operations, a seed derivation, a new default)
makes every later run incomparable with them, without any error anywhere else. So tests/golden/ keeps one
tiny run per algorithm and code path (tests/golden/regenerate.py, GOLDENS: PPO with each objective of
Table 1, A2C, A2C with trust region, TRPO, adaptive VPG and CEM on Hopper-v5; PPO, A2C and ACER with replay
on Atari Breakout; PPO's categorical MLP policy on CartPole-v1), and this test trains each again in memory,
resolved as the pipeline resolves it (ppo.config.experiments.load_variant with the scale's total_steps and the study's
presets, ppo.pipeline.study.Run), on one thread, and requires its
episodes and updates tables to be identical to the golden's, bit for bit: every float is compared by its
repr, which round-trips exactly. The whole module takes about 35 s of one core (CPU time; longer in wall time on a busy machine).

When a difference is deliberate (a fix, a new default), regenerate the goldens and commit them with the
change, then re-train or mark the published runs of the algorithms whose goldens changed:

    .venv/bin/python -m tests.golden.regenerate            # all goldens (about 35 s)
    .venv/bin/python -m tests.golden.regenerate trpo cem   # some of them

Goldens are kept per numerics platform (ppo.training.records.numerics_platform: processor vendor, family and SIMD
level). The same code gives other last bits on an Intel and an AMD processor, because MKL, which torch calls
for matrix products, picks its kernels by the processor (docs/reproducibility.md); so each platform the
project's machines have holds its own goldens, and a machine of a platform with none skips, saying so, and
never claims that numerics changed. A golden is compared only under the package versions it was made with
(torch, numpy, gymnasium, and mujoco or ale-py: the floats legitimately differ across them); elsewhere it is
skipped with the reason. A changed configuration of a golden's variant (its config digest) fails with its own
message: that is a change of settings, not of numerics.

The second guard, test_every_algorithm_has_a_golden, fails when an algorithm of ppo/algorithms (or an
algorithm and network family that a variant file uses) has no golden.
"""
from __future__ import annotations

import json

import pytest
from golden import regenerate as gold  # tests/golden/regenerate.py (tests/ is on pytest's pythonpath, like killing.py)

import ppo.algorithms
from ppo.config.experiments import load_variant
from ppo.config.files import EXPERIMENTS_DIR
from ppo.config.run_config import ALGORITHMS
from ppo.config.schema import recorded_digest
from ppo.training import records
from ppo.training.driver import env_protocol_record

REGENERATE = "python -m tests.golden.regenerate"


def load_golden(golden: gold.Golden, platform: str) -> dict:
    return json.loads((gold.golden_folder(golden, platform) / "golden.json").read_text())


def no_golden_here(golden: gold.Golden) -> str | None:
    """Why this machine has no golden to compare with, or None."""
    here, made = gold.platform_key(), gold.platforms(golden)
    if not made:
        pytest.fail(f"golden {golden.name} is defined in tests/golden/regenerate.py but has no record under "
                    f"{gold.GOLDEN_DIR / golden.name}: write it with `{REGENERATE} {golden.name}` at a revision "
                    f"whose numerics are the reference")
    if here not in made:
        return (f"golden {golden.name} has no record for this machine's numerics platform {here} (records for "
                f"{', '.join(made)}): its floats legitimately differ in the last bits from theirs. To pin this "
                f"platform too, run `{REGENERATE}` here at a commit whose numerics the other platforms' goldens "
                f"already pin, and commit tests/golden/*/{here}/")
    return None


def skip_reason(record: dict) -> str | None:
    """Why this machine cannot reproduce the golden's floats, or None."""
    installed = records.package_versions()
    differ = [f"{name} {installed.get(name)} (golden: {record['packages'].get(name)})"
              for name in record["compared_packages"] if installed.get(name) != record["packages"].get(name)]
    if differ:
        return (f"golden {record['name']} was made under other versions or CPU kernels, whose floats legitimately "
                f"differ: {'; '.join(differ)}. Compare under the golden's versions, or regenerate "
                f"(`{REGENERATE}`) only if these versions are the project's new reference")
    return None


def published_variants(golden: gold.Golden, algorithm_key: str) -> list[str]:
    """The variant files whose runs share the golden's algorithm and network family."""
    names = []
    for path in sorted((EXPERIMENTS_DIR / "variants").glob("*.yaml")):
        cfg = load_variant(path.stem).config
        if cfg.algorithm_key == algorithm_key and (cfg.observation == "pixels") == (golden.kind == "atari"):
            names.append(path.stem)
    return names


def numerics_changed(golden: gold.Golden, record: dict, what: str) -> str:
    key = record["algorithm_key"]
    variants = published_variants(golden, key)
    where = f"published/*/paper/runs/*/{{{','.join(variants)}}}/seed*" if variants else "published/"
    made_on = record.get("platform") or {}
    here = records.numerics_platform()
    return (f"golden {golden.name} ({golden.why}; variant {golden.variant}, {golden.task}, seed {golden.seed}, "
            f"{golden.total_steps} steps, made at commit {str(record['generated_at'].get('commit'))[:10]} on "
            f"{made_on.get('key')} ({made_on.get('model_name')}); here {here['key']} ({here['model_name']})): {what}.\n"
            f"numerics changed on this platform: published paper-scale runs of algorithm {key} ({where}; "
            f"published/INDEX.csv gives each run's commit and processor) were trained with the old numerics; if the "
            f"change is deliberate, regenerate the goldens with `{REGENERATE} --numerics-changed` and re-train or mark "
            f"the affected published runs. (Should the processor models differ within one platform key, the key is "
            f"too coarse: see ppo.training.records.numerics_platform.)")


def first_difference(golden_rows: list[list[str]], rows: list[list[str]]) -> str | None:
    """Where two canonical tables (header first) differ: column, first row, both values; or None."""
    if golden_rows[0] != rows[0]:
        return f"columns differ: golden {golden_rows[0]}, now {rows[0]}"
    header, old, new = rows[0], golden_rows[1:], rows[1:]
    cells = [(r, c) for r in range(min(len(old), len(new))) for c in range(len(header)) if old[r][c] != new[r][c]]
    if cells:
        r, c = cells[0]
        columns = list(dict.fromkeys(header[c] for _, c in cells))
        return (f"column {header[c]!r} first differs at row {r} (0-based, of {len(old)}): golden {old[r][c]}, now "
                f"{new[r][c]}; {len(cells)} cells differ, in columns {columns}"
                + (f"; and the table has {len(new)} rows, the golden {len(old)}" if len(old) != len(new) else ""))
    if len(old) != len(new):
        return f"the table has {len(new)} rows, the golden {len(old)} (the first {min(len(old), len(new))} agree)"
    return None


@pytest.mark.parametrize("golden", gold.GOLDENS, ids=[g.name for g in gold.GOLDENS])
def test_records_are_identical_to_the_golden(golden):
    gold.check_checkout()  # compare this checkout's code, not an installed copy of another one
    reason = no_golden_here(golden)
    if reason:
        pytest.skip(reason)
    record = load_golden(golden, gold.platform_key())
    defined = {"variant": golden.variant, "task": golden.task, "seed": golden.seed,
               "total_steps": golden.total_steps, "overrides": golden.overrides,
               **({"presets": golden.presets} if golden.presets else {})}
    stored = {k: record.get(k) for k in defined}
    assert stored == defined, (f"golden {golden.name} is defined as {defined} in tests/golden/regenerate.py but "
                               f"was made as {stored}: regenerate it (`{REGENERATE} {golden.name}`)")
    reason = skip_reason(record)
    if reason:
        pytest.skip(reason)
    run = gold.resolve(golden)
    # A golden made under an older config schema is read as today's plan reads such a record (ppo.config.schema),
    # with the environment protocol the run was made with.
    recorded = recorded_digest({**record, "env_protocol": env_protocol_record(run.task, run.variant.config)})
    assert run.config_digest == recorded, (
        f"golden {golden.name}: the resolved configuration of variant {golden.variant} changed (config digest "
        f"{recorded} -> {run.config_digest}; see experiments/variants/{golden.variant}.yaml and its preset). "
        f"Published runs with the old digest are no longer current for the pipeline. If the change is deliberate, "
        f"regenerate the golden (`{REGENERATE} {golden.name}`)")

    tables = gold.train(golden)
    problems = []
    for name in gold.TABLES:
        table, expected = tables[name], record["tables"][name]
        if gold.dtypes(table) != expected["dtypes"]:
            problems.append(f"{name}.csv: column types differ: golden {expected['dtypes']}, now {gold.dtypes(table)}")
        diff = first_difference(gold.read_rows(gold.golden_folder(golden) / expected["file"]),
                                gold.canonical_rows(table))
        if diff:
            problems.append(f"{name}.csv: {diff}")
    if problems:
        pytest.fail(numerics_changed(golden, record, "; ".join(problems)), pytrace=False)


def registered_algorithms() -> set[str]:
    """Every algorithm the suite can train: the specs of ppo/algorithms, and the config's names."""
    return set(ppo.config.registry.specs()) | set(ALGORITHMS)


def test_every_algorithm_has_a_golden():
    add = (f"add a Golden to GOLDENS in tests/golden/regenerate.py (a variant of experiments/variants/, a task, "
           f"a budget of a few thousand steps) and write it with `{REGENERATE} <name>`")
    covered, algorithms = {}, set()
    for golden in gold.GOLDENS:
        cfg = gold.resolve(golden).variant.config
        algorithms.add(cfg.algorithm)
        covered.setdefault((cfg.algorithm_key, cfg.network), golden.name)
    missing = sorted(registered_algorithms() - algorithms)
    assert not missing, (f"algorithm(s) {missing} of ppo/algorithms have no golden record, so a change of their "
                         f"numerics would go unnoticed: {add}")
    # Every algorithm (Figure 3's naming: a2c_trust_region, vpg_adaptive are their own) and network family
    # that a variant file trains needs a golden, unless gold.NOT_COVERED says why not.
    used = {}
    for path in sorted((EXPERIMENTS_DIR / "variants").glob("*.yaml")):
        cfg = load_variant(path.stem).config
        used.setdefault((cfg.algorithm_key, cfg.network), path.stem)
    uncovered = {pair: variant for pair, variant in used.items()
                 if pair not in covered and pair not in gold.NOT_COVERED}
    assert not uncovered, ("no golden record for " + "; ".join(
        f"algorithm {k} with network {n} (variant {v})" for (k, n), v in sorted(uncovered.items())) + f": {add}")


def test_a_platform_without_goldens_skips_and_says_why(monkeypatch):
    """On a processor no golden was made on, the test skips naming the platform; it never claims that the
    numerics changed (their last bits legitimately differ there)."""
    golden = gold.GOLDENS[0]
    monkeypatch.setattr(gold, "platform_key", lambda: "GenuineIntel-99-AVX2")
    reason = no_golden_here(golden)
    assert reason.startswith(f"golden {golden.name} has no record for this machine's numerics platform "
                             "GenuineIntel-99-AVX2 (records for ")
    assert "numerics changed" not in reason


def test_each_golden_record_is_of_its_own_platform():
    """A record filed under a platform folder was made on that platform (or, for the goldens made before
    platforms were recorded, says from what it was inferred)."""
    for golden in gold.GOLDENS:
        for platform in gold.platforms(golden):
            made_on = load_golden(golden, platform)["platform"]
            assert made_on["key"] == platform, (golden.name, platform, made_on)

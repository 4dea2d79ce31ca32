"""docs/atari-results.md is written from the published Atari records (scripts/atari_results.py), never by hand:
the committed page is what the script writes from published/ now, and a partial or empty dataset says so."""
import importlib.util
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("atari_results", ROOT / "scripts" / "atari_results.py")
atari_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(atari_results)

PUBLISHED_RUNS = ROOT / "published" / "atari" / "paper" / "runs"


def published_run_dirs() -> list[Path]:
    return sorted(p.parent for p in PUBLISHED_RUNS.rglob("manifest.json"))


def test_the_committed_page_is_written_from_the_published_records():
    """scripts/paper_grid.sh (GRID_NAME=atari) writes the page again in the commit of every publish."""
    assert (ROOT / "docs" / "atari-results.md").read_text() == atari_results.build(ROOT / "published"), (
        "docs/atari-results.md differs from the published records: run python scripts/atari_results.py")


def test_no_records_say_so(tmp_path):
    text = atari_results.build(tmp_path)
    planned = len(atari_results.planned_runs())
    assert planned == 18  # 3 games x PPO, A2C x 3 seeds: ./repro atari-three
    assert f"No Atari run is published yet (0 of the {planned} runs" in text and "## Table 6" not in text


@pytest.mark.skipif(not published_run_dirs(), reason="no Atari run is published yet")
def test_a_partial_dataset_says_what_it_holds(tmp_path):
    run = published_run_dirs()[0]
    target = tmp_path / run.relative_to(ROOT)
    shutil.copytree(run, target)
    text = atari_results.build(tmp_path / "published")
    assert "**1 of the 18 runs of `./repro atari-three` are published**" in text
    assert "no verdict: 1 scored seed(s)" in text  # one seed: no interval, no verdict

    episodes = pd.read_parquet(run / "episodes.parquet")
    # the learning-curve row: the mean raw score of the episodes ending in the first million agent steps
    first = episodes[episodes["global_step"] <= 1_000_000]["episode_return"].mean()
    curve_rows = [line for line in text.splitlines() if line.startswith("| ") and "| s" in line and "M |" not in line]
    assert any(f"| {first:,.1f} |" in line for line in curve_rows)
    header = next(line for line in text.splitlines() if line.startswith("| game | algorithm | seed | 1M"))
    assert header.rstrip(" |").endswith("10M")  # the budget in millions of agent steps, the last batch's overshoot in it


def check_section(text: str, study: str) -> str:
    """The part of the page under the heading of one checks study, up to the next heading."""
    start = text.index(f"### {study} (")
    end = text.find("\n#", start)
    return text[start:] if end < 0 else text[start:end]


CHECK_CASES = [("Breakout", "atari_ppo", "atari_checks", "atari_ppo_nature_cnn", "PPO, Nature CNN", 3),
               ("BeamRider", "atari_a2c", "atari_checks_a2c", "atari_a2c_nature_cnn", "A2C, Nature CNN", 6),
               ("Pong", "atari_a2c", "atari_checks_a2c_zoo", "atari_a2c_sb3_zoo", "A2C, SB3 zoo settings", 3)]


@pytest.mark.parametrize("game, base, study, variant, label, planned", CHECK_CASES)
def test_a_check_run_is_set_beside_the_atari_studys_run_of_its_seed_and_preset(tmp_path, game, base, study, variant,
                                                                               label, planned):
    """The checks sections (experiments/studies/atari_checks*.yaml): each check run's last-100 score beside the atari
    study's run of the same game, seed and preset (PPO's check beside atari_ppo, A2C's beside atari_a2c). Here the
    check's records are a copy of a published run of the base variant, relabelled, so the two scores are equal."""
    runs = [p for p in published_run_dirs() if game in str(p) and p.parent.name == base]
    if not runs:
        pytest.skip(f"no {game} {base} run is published")
    run = runs[0]
    shutil.copytree(run, tmp_path / run.relative_to(ROOT))
    check = tmp_path / f"published/{study}/paper/runs/ALE/{game}-v5/{variant}" / run.name
    shutil.copytree(run, check)
    manifest = json.loads((check / "manifest.json").read_text())
    manifest.update(study=study, variant=variant, variant_label=label, run_id=f"ALE/{game}-v5/{variant}/{run.name}")
    (check / "manifest.json").write_text(json.dumps(manifest))
    text = atari_results.build(tmp_path / "published")
    section = check_section(text, study)
    assert f"1 of {planned} runs of this check published" in section
    score = pd.read_parquet(run / "episodes.parquet")["episode_return"].iloc[-100:].mean()
    seed = run.name.removeprefix("seed")
    assert f"| {game} | {label} | {seed} | {score:,.1f} | {score:,.1f} ({base}) |" in section
    if variant in atari_results.SETTINGS_REFERENCE:  # the library's published score at these settings, from reference/
        references = pd.read_csv(ROOT / "reference/atari_reference_scores.csv")
        published = references[(references["algo"] == atari_results.SETTINGS_REFERENCE[variant])
                               & (references["game"] == game)]["score"]
        assert len(published) == 1
        assert f"| {score:,.1f} ({base}) | {published.iloc[0]:,.1f} (a2c (SB3, zoo" in section


def test_without_check_runs_the_section_says_how_to_train_them(tmp_path):
    text = atari_results.build(tmp_path)
    for study, planned in (("atari_checks", 3), ("atari_checks_a2c", 6), ("atari_checks_a2c_zoo", 3)):
        assert (f"No run of this check is published yet (0 of {planned}: `GRID_NAME=atari-checks scripts/paper_grid.sh "
                "start` trains them)") in check_section(text, study)


@pytest.mark.skipif(not published_run_dirs(), reason="no Atari run is published yet")
def test_a_run_resumed_without_its_replay_buffer_is_named(tmp_path):
    """ACER's checkpoint travels without its replay buffer (ppo.pipeline.carry.without_replay_buffer); the page names
    each run that resumed so and where. Here a published run's manifest says so."""
    run = published_run_dirs()[0]
    target = tmp_path / run.relative_to(ROOT)
    shutil.copytree(run, target)
    assert "without its replay" not in atari_results.build(tmp_path / "published")
    manifest = json.loads((target / "manifest.json").read_text())
    manifest["resumed_without_replay_buffer_at_steps"] = [1_234_560]
    (target / "manifest.json").write_text(json.dumps(manifest))
    section = atari_results.build(tmp_path / "published").split("## Where each run trained")[1]
    game = manifest["task"].removeprefix("ALE/").removesuffix("-v5")
    assert (f"1 run(s) resumed on another machine from a checkpoint carried without its replay buffer, and refilled "
            f"it from empty ({game} ") in section and f"seed {manifest['seed']} at agent step(s) 1,234,560;" in section


def test_the_readmes_atari_table_is_written_from_the_published_records():
    """README.md's Table 6 summary is readme_table's, between its two marker lines: a publish that changes a score, a
    verdict or the count of runs fails here until `python scripts/atari_results.py --readme` writes it again."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split(atari_results.README_BEGIN + "\n", 1)[1].split(atari_results.README_END, 1)[0]
    assert block == atari_results.readme_table(ROOT / "published") + "\n", (
        "README.md's Atari table differs from the published records: run python scripts/atari_results.py --readme")


def test_the_readme_table_of_one_run_and_of_none(tmp_path):
    """One published run: its mean without an interval, 1 seed, and the verdict the rule gives one seed; none: a line
    that says so. write_readme keeps everything outside the markers and refuses a README without them."""
    assert atari_results.readme_table(tmp_path).startswith("No Atari run at the paper's budget is published yet (0 of")
    runs = published_run_dirs()
    if not runs:
        pytest.skip("no Atari run is published yet")
    shutil.copytree(runs[0], tmp_path / runs[0].relative_to(ROOT))
    table = atari_results.readme_table(tmp_path / "published")
    assert table.startswith("1 of the 18 runs are published") and "1 seed |" in table and "no verdict" in table
    assert table.count("none published") == 5  # the other algorithm of its game, both of the other two games
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{atari_results.README_BEGIN}\nold\n{atari_results.README_END}\nafter\n", encoding="utf-8")
    atari_results.write_readme(tmp_path / "published", readme)
    assert readme.read_text(encoding="utf-8") == (f"before\n{atari_results.README_BEGIN}\n{table}\n"
                                                  f"{atari_results.README_END}\nafter\n")
    readme.write_text("no markers\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="no lines"):
        atari_results.write_readme(tmp_path / "published", readme)

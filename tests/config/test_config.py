"""Experiment files resolve into studies, variants and groups. Bad experiment files (and every other
malformed input) are in tests/config/test_bad_inputs.py."""
import copy
import dataclasses
import shutil

import pytest

from ppo.config.errors import ConfigError
from ppo.config import experiments as experiment_files
from ppo.config.experiments import load_preset
from ppo.config.files import EXPERIMENTS_DIR
from ppo.config.run_config import ALGORITHM_SETTINGS, RunConfig, build_config
from ppo.config.settings import Objective
from ppo.pipeline.study import load_study


@pytest.fixture
def experiments(tmp_path):
    shutil.copytree(EXPERIMENTS_DIR, tmp_path / "experiments")
    return tmp_path / "experiments"


def write(path, text):
    path.write_text(text)
    return path


def test_the_eleven_table1_settings_are_data(experiments):
    study = load_study("table1", "paper", experiments_dir=experiments)
    objectives = {v.name: v.config.ppo.objective for v in study.variants}
    assert len(objectives) == 11
    assert objectives["no_clip"].clip_epsilon is None and objectives["no_clip"].kl_beta == 0
    assert objectives["clip_0.3"].clip_epsilon == 0.3
    assert (objectives["kl_adaptive_0.003"].kl_target, objectives["kl_adaptive_0.003"].kl_beta) == (0.003, 1.0)
    assert objectives["kl_fixed_10"].kl_beta == 10 and objectives["kl_fixed_10"].kl_target is None
    # Everything but the objective is the paper preset, so all eleven share one batched group per task.
    assert len({v.config.structural_key() for v in study.variants}) == 1
    assert len(study.runs()) == 7 * 11 * 3 and study.total_steps == 1_000_000


def test_new_ablation_is_one_file(experiments):
    write(experiments / "variants" / "clip_0.4.yaml",
          "label: eps 0.4\npreset: ppo_mujoco_paper\noverrides: {ppo: {objective: {clip_epsilon: 0.4}}}\n")
    study = load_study("table1", "reduced", experiments_dir=experiments)
    assert "clip_0.4" in [v.name for v in study.variants]  # picked up by the study's clip_* pattern


def test_groups_respect_group_size_and_cover_every_run_once(experiments):
    study = load_study("table1", "paper", seeds=10, experiments_dir=experiments)
    groups = study.groups(group_size=16)
    runs = [r.run_id for g in groups for r in g.runs]
    assert sorted(runs) == sorted(r.run_id for r in study.runs())
    assert max(len(g.runs) for g in groups) == 16
    assert all(len({r.task for r in g.runs}) == 1 for g in groups)


def test_groups_of_table1_at_its_group_size_are_its_settings_at_one_seed(experiments):
    """A seed of every setting before the next seed: the grid's groups of 11 (scripts/paper_grid.sh) are Table 1's 11
    settings at one seed, in the study's order, and of seeds 3-9 alone when 0-2 are done (the ten-seed grid)."""
    study = load_study("table1", "paper", seeds=10, experiments_dir=experiments)
    names = [v.name for v in study.variants]
    assert len(names) == 11
    pending = [r for r in study.runs() if r.seed >= 3]
    groups = study.groups(group_size=11, runs=pending)
    assert len(groups) == 7 * 7
    for group in groups:
        assert len({r.seed for r in group.runs}) == 1 and [r.variant.name for r in group.runs] == names
    hopper = [g.runs[0].seed for g in groups if g.task == "Hopper-v5"]
    assert hopper == list(range(3, 10))


def test_every_detail_and_mistake_is_a_one_change_variant_of_the_paper_preset():
    study = load_study("details", "paper")
    anchor = next(v for v in study.variants if v.name == study.anchor).config.to_dict()
    for variant in study.variants:
        settings = variant.config.to_dict()
        changed = {k for k in set(settings) | set(anchor) if settings.get(k) != anchor.get(k)}
        if variant.name.startswith(("detail_", "mistake_")):
            assert variant.preset.name == "ppo_mujoco_paper" and len(changed) == 1, (variant.name, changed)
            assert variant.description, variant.name  # the claim it tests
    modern = next(v for v in study.variants if v.name == "modern").config
    assert (modern.init, modern.ppo.lr_schedule, modern.ppo.max_grad_norm, modern.ppo.vf_clip, modern.ppo.reward_norm,
            modern.adv_norm) == ("orthogonal", "linear", 0.5, 0.2, True, "minibatch")
    assert len(study.variants) == 17 and len(study.runs()) == 7 * 17 * 3


def test_a_claim_is_read_by_the_reports_only_and_never_changes_a_run(experiments):
    """The machine-readable claim (ppo/config/experiments.py load_claim) is parsed, and adding one changes neither the run's
    settings nor its digest, so no record goes stale."""
    path = experiments / "variants" / "mistake_epochs_20.yaml"
    before = load_study("details", "smoke", experiments_dir=experiments)
    variant = next(v for v in before.variants if v.name == "mistake_epochs_20")
    assert variant.claim.direction == "worse" and variant.claim.mechanism.value == "anchor"
    assert variant.claim.text() == "score below the anchor; kl > anchor"
    text = path.read_text()
    write(path, text[: text.index("\nclaim:")] + "\n")
    after = load_study("details", "smoke", experiments_dir=experiments)
    assert next(v for v in after.variants if v.name == "mistake_epochs_20").claim is None
    assert [(r.run_id, r.config_digest) for r in before.runs()] == [(r.run_id, r.config_digest) for r in after.runs()]
    claims = {v.name: v.claim for v in before.variants}
    assert claims["detail_time_limit_bootstrap"].tasks == ("HalfCheetah", "Swimmer", "Reacher")
    assert claims["detail_target_kl_0.015"].margin == 0.1 and claims["clip_0.2"] is None
    assert claims["detail_orthogonal_init"] is None  # its description states no direction


def test_a_scale_may_list_its_own_variants(experiments):
    """The reduced Atari scale leaves ACER out (its replay would never start within 40,960 steps); a scale's
    list is checked like the study's, and the error names the scale's field."""
    reduced, paper = load_study("atari", "reduced"), load_study("atari", "paper")
    assert [v.name for v in reduced.variants] == ["atari_ppo", "atari_a2c"]
    assert "atari_acer" in {v.name for v in paper.variants}
    path = experiments / "studies" / "atari.yaml"
    write(path, path.read_text().replace("variants: [atari_ppo, atari_a2c]", "variants: [atari_ppo, atari_dqn]"))
    with pytest.raises(ConfigError, match=r"atari\.yaml: field scales\.reduced\.variants: entry 'atari_dqn' matches no file"):
        load_study("atari", "reduced", experiments_dir=experiments)


HOSTILE = ["x" * 5000, 10**400, -(10**400), [0] * 5000, {"k": "x" * 5000}]


@pytest.mark.parametrize("preset", ["ppo_mujoco_paper", "ppo_atari_paper", "a2c_mujoco", "acer_atari", "trpo_mujoco",
                                    "vpg_mujoco", "cem_mujoco"])
def test_every_field_refuses_a_huge_value_in_one_short_line(preset):
    """Every field of the preset's records, set to a huge value, is refused by build_config in one line that
    quotes the value short: never a traceback (a 401-digit int overflowed a float), never the whole value."""
    base = load_preset(preset).config
    section = base["algorithm"] if base.get("algorithm", "ppo") != "ppo" else "ppo"
    records = {(): RunConfig, (section,): ALGORITHM_SETTINGS[section], **({("ppo", "objective"): Objective}
                                                                          if section == "ppo" else {})}
    for path, cls in records.items():
        for f in dataclasses.fields(cls):
            if f.name in ALGORITHM_SETTINGS or f.name == "objective":
                continue  # a section: its own fields are set
            for value in HOSTILE:
                data = copy.deepcopy(base)
                target = data
                for name in path:
                    target = target.setdefault(name, {})
                target[f.name] = value
                with pytest.raises(ConfigError) as err:
                    build_config(data, "x.yaml")
                message = str(err.value)
                assert "\n" not in message and len(message) <= 400, (path, f.name, message[:500])
                assert message.startswith("x.yaml: ") and f.name in message, (path, f.name, message)


@pytest.mark.parametrize("content, says", [("not,the\nreference,file\n", "lacks field setting or param"),
                                           ("", "has no rows"), ("setting,param,value\n", "has no rows")])
def test_a_table1_reference_without_its_rows_is_one_line(tmp_path, monkeypatch, content, says):
    """Variants with paper_row: true name a row of reference/ppo2017_table1.csv; a damaged file says so."""
    reference = tmp_path / "ppo2017_table1.csv"
    reference.write_text(content)
    monkeypatch.setattr(experiment_files, "TABLE1_REFERENCE", reference)
    with pytest.raises(ConfigError) as err:
        experiment_files.load_variant("clip_0.2")
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(reference))
    assert says in message


def test_a_surrogate_variant_without_a_label_is_named_after_its_objective(tmp_path):
    """Table 1's variant files state ε (β, d_targ) once: the label is the objective's name in the paper."""
    shutil.copytree(EXPERIMENTS_DIR / "presets", tmp_path / "presets")
    (tmp_path / "variants").mkdir()
    files = {"clip_0.4": "{clip_epsilon: 0.4}", "kl_fixed_2": "{clip_epsilon: null, kl_beta: 2}",
             "kl_adaptive_0.02": "{clip_epsilon: null, kl_beta: 1.0, kl_target: 0.02}", "no_clip": "{clip_epsilon: null}"}
    for name, objective in files.items():
        (tmp_path / "variants" / f"{name}.yaml").write_text(
            f"preset: ppo_mujoco_paper\noverrides: {{ppo: {{objective: {objective}}}}}\n")
    labels = {name: experiment_files.load_variant(name, tmp_path).label for name in files}
    assert labels == {"clip_0.4": "Clipping, ε = 0.4", "kl_fixed_2": "Fixed KL, β = 2",
                      "kl_adaptive_0.02": "Adaptive KL, d_targ = 0.02", "no_clip": "No clipping or penalty"}
    # Any other change needs a name: the objective alone would not say what the variant is.
    (tmp_path / "variants" / "epochs_3.yaml").write_text("preset: ppo_mujoco_paper\noverrides: {ppo: {epochs: 3}}\n")
    with pytest.raises(ConfigError, match=r"epochs_3\.yaml: missing field\(s\) \['label'\] \(only a variant whose"):
        experiment_files.load_variant("epochs_3", tmp_path)
    # Table 1's own files carry no label; their labels are the paper's names, as before.
    assert [v.label for v in load_study("table1", "paper").variants][:3] == [
        "No clipping or penalty", "Clipping, ε = 0.1", "Clipping, ε = 0.2"]


def test_a_study_matching_more_variants_than_a_plan_holds_is_refused_before_reading_them(experiments):
    """10,000 variant files were read and validated for minutes in silence (issue 30): refused from the names."""
    import time

    from ppo.pipeline.study import MAX_VARIANTS
    for i in range(MAX_VARIANTS + 1):  # not valid variants: the refusal must come before any is read
        (experiments / "variants" / f"zz_{i}.yaml").write_text("not: [a variant\n")
    study = experiments / "studies" / "table1.yaml"
    study.write_text(study.read_text().replace('variants: [no_clip,', 'variants: ["zz_*", no_clip,'))
    start = time.perf_counter()
    with pytest.raises(ConfigError, match=r"studies/table1\.yaml: field variants: its entries match 3,012 variant "
                                          r"files, more than the 3,000 runs a plan can hold"):
        load_study("table1", "smoke", experiments_dir=experiments)
    assert time.perf_counter() - start < 10

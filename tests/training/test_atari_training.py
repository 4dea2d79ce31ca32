"""PPO and A2C on Atari: what the learner sees of the game (clipped rewards, life loss as the end of the
value horizon) against what is recorded (the raw full-game score); Table 5's annealing; groups; resume."""
import dataclasses
import shutil

import numpy as np
import pytest
import torch
from killing import kill_then_resume
from same_records import assert_same_records

import ppo.algorithms.base
import ppo.algorithms.rollout
from ppo.algorithms.rollout import channels_last, collect_batch, group_context, to_runs
from ppo.config.errors import ConfigError
from ppo.config.experiments import load_preset, load_variant
from ppo.config.files import EXPERIMENTS_DIR, deep_merge
from ppo.config.protocols import load_protocol
from ppo.config.registry import algorithm_class
from ppo.config.run_config import build_config
from ppo.pipeline.study import load_study
from ppo.training.driver import RunSpec, env_protocol_record, train_group

PRESET = load_preset("ppo_atari_paper")


def config(**changes):
    return build_config(deep_merge(PRESET.config, changes), "test")


# 2 actors × 32 steps, one minibatch of 64 per epoch: 4 iterations in 256 steps
TINY = config(total_steps=256, num_envs=2, horizon=32, ppo={"minibatch_size": 32, "epochs": 2})


class Recorder:
    """Wraps the group's environments: keeps every raw reward and life loss, forwards the rest."""

    def __init__(self, envs):
        self.envs, self.raw, self.lives_lost, self.ends = envs, [], [], []

    def __getattr__(self, name):
        return getattr(self.envs, name)

    def step(self, actions):
        out = self.envs.step(actions)
        self.raw.append(out[0].copy())
        self.lives_lost.append(self.envs.life_lost.copy())
        self.ends.append(out[1] | out[2])
        return out


def rollout_seen_by_learner(monkeypatch, protocol_name, steps=300, **protocol_changes):
    """Run one rollout on Space Invaders (rewards 5-30 per invader, 3 lives) and capture the rewards and
    terminal flags GAE receives."""
    cfg = config(num_envs=2, horizon=steps, ppo={"minibatch_size": steps}, env_protocol=protocol_name)
    ctx = group_context("ALE/SpaceInvaders-v5", [cfg], [3])
    if protocol_changes:
        ctx.envs.protocol = dataclasses.replace(ctx.envs.protocol, **protocol_changes)
    recorder = Recorder(ctx.envs)
    ctx.envs = recorder
    seen = {}
    real_gae = ppo.algorithms.rollout.gae

    def spy(rewards, values, next_values, terminated, episode_end, gamma, lam):
        seen.update(rewards=rewards.copy(), terminated=terminated.copy(), episode_end=episode_end.copy())
        return real_gae(rewards, values, next_values, terminated, episode_end, gamma, lam)

    monkeypatch.setattr(ppo.algorithms.rollout, "gae", spy)
    agent = algorithm_class("ppo")(ctx).agent
    collect_batch(ctx, agent)
    return ctx, recorder, seen


def test_learner_trains_on_clipped_rewards_and_lives(monkeypatch):
    ctx, rec, seen = rollout_seen_by_learner(monkeypatch, "paper2017")
    raw, lost = np.array(rec.raw), np.array(rec.lives_lost)
    assert raw.max() >= 5, "random play should shoot some invaders (5+ points)"
    np.testing.assert_array_equal(seen["rewards"], np.sign(raw))
    assert lost.any(), "random play should lose a life in 300 steps"
    # a lost life ends the value horizon (no bootstrap, no λ-chain across it) although the game goes on
    assert np.all(seen["terminated"][lost] == 1) and np.all(seen["episode_end"][lost] == 1)
    assert not np.array(rec.ends)[lost].all(), "some life losses should not be the end of the game"
    # the recorded return is the raw score of the whole game so far, over all lives
    for i in range(2):
        since_reset = raw[:, i] if not np.array(rec.ends)[:, i].any() else None
        if since_reset is not None:
            assert ctx.envs.episode_return[i] == since_reset.sum()


def test_without_clipping_or_life_signal_the_learner_sees_the_raw_game(monkeypatch):
    _, rec, seen = rollout_seen_by_learner(monkeypatch, "machado2018", reward_clip=False)
    raw, ends = np.array(rec.raw), np.array(rec.ends)
    np.testing.assert_array_equal(seen["rewards"], raw)
    assert np.array_equal(seen["episode_end"].astype(bool), ends)  # only the game's own ends


def test_channels_last_moves_whole_frames():
    rng = np.random.default_rng(0)
    for channels in (1, 3, 4):
        frames = rng.integers(0, 256, size=(5, channels, 7, 9), dtype=np.uint8)
        assert np.array_equal(channels_last(frames), frames.transpose(0, 2, 3, 1))


def test_the_batch_holds_the_frames_seen_channels_last_and_the_policy_that_acted():
    """The rollout's frames reach the update as they were seen, in channels-last memory, and π_old is the
    policy the actions were sampled from: the network on those frames (up to the summation order of another
    batch size)."""
    cfg = config(num_envs=2, horizon=40, ppo={"minibatch_size": 40})
    ctx = group_context("ALE/Breakout-v5", [cfg, cfg], [0, 1])
    seen = []
    real_step = ctx.envs.step

    def step(actions):
        seen.append(ctx.envs.obs.copy())
        return real_step(actions)

    ctx.envs.step = step
    agent = algorithm_class("ppo")(ctx).agent
    batch = collect_batch(ctx, agent)
    assert torch.equal(batch.obs, torch.from_numpy(to_runs(np.stack(seen), 40, 2, 2)))
    assert batch.obs.permute(0, 1, 3, 4, 2).is_contiguous()
    with torch.no_grad():
        policy = agent.policy(batch.obs)
    torch.testing.assert_close(batch.policy.logits, policy.logits, rtol=0, atol=1e-5)
    ctx.envs.close()


def test_table5_annealing_and_records():
    """lr and ε both scale with α = 1 − i/n (Table 5); ε's current value is recorded per update."""
    (result,) = train_group([RunSpec("a", "ALE/Pong-v5", TINY, 0)], log=lambda _: None)
    u = result.updates
    alpha = 1 - np.arange(4) / 4
    np.testing.assert_allclose(u["learning_rate"], 2.5e-4 * alpha)
    np.testing.assert_allclose(u["clip_epsilon"], 0.1 * alpha, rtol=1e-6)
    assert u[["policy_loss", "value_loss", "entropy", "kl"]].notna().all().all()
    assert u["entropy"].iloc[0] == pytest.approx(np.log(6), abs=1e-3)  # near-uniform start over Pong's 6 actions


def test_manifest_records_every_protocol_setting():
    record = env_protocol_record("ALE/Pong-v5", TINY)
    protocol = load_protocol("paper2017").to_dict()
    assert {k: record[k] for k in protocol} == protocol
    assert record["protocol"] == "paper2017" and record["id"] == "ALE/Pong-v5"


def test_resume_after_kill_gives_identical_records(tmp_path, monkeypatch):
    specs = [RunSpec("a", "ALE/Pong-v5", TINY, 0), RunSpec("b", "ALE/Pong-v5", TINY, 1)]
    uninterrupted = train_group(specs, log=lambda _: None)
    resumed = kill_then_resume(monkeypatch, train_group, specs, tmp_path / "group.ckpt",
                               ppo.algorithms.base, "collect_batch", 3)
    assert_same_records(uninterrupted, resumed)


def test_a2c_runs_on_the_shared_network():
    cfg = load_variant("atari_a2c", total_steps=160).config
    (result,) = train_group([RunSpec("a", "ALE/Breakout-v5", cfg, 0)], log=lambda _: None)
    assert result.status == "completed" and len(result.updates) == 2  # 16 actors × 5 steps per update
    # the policy head at gain 1 (baselines' 2017 A2C, policy_init_scale): the first policy is near, not at, uniform
    assert np.log(4) - 0.05 < result.updates["entropy"].iloc[0] < np.log(4) - 1e-3


@pytest.mark.parametrize("changes, message", [
    ({"env_protocol": None}, "env_protocol is required"),
    ({"network": "mlp"}, "refused with network 'mlp'"),
    ({"network": "resnet"}, "network must be one of"),
    ({"ppo": {"clip_schedule": "cosine"}}, "ppo.clip_schedule must be one of"),
    ({"algorithm": "trpo", "trpo": {}}, r"algorithm trpo is implemented with network\(s\) \['mlp'\]"),
])
def test_bad_atari_settings_are_refused(changes, message):
    data = {**PRESET.config, **changes}
    if "algorithm" in changes:
        del data["ppo"]
    with pytest.raises(ConfigError, match=message):
        build_config(data, "test")


def test_an_atari_record_leaves_out_what_only_the_mlp_reads():
    assert "hidden_sizes" not in TINY.to_dict() and TINY.to_dict()["network"] == "cnn_mnih2016"


def test_study_plans_49_games_and_refuses_mixing(tmp_path):
    study = load_study("atari", "paper")
    assert len(study.tasks) == 49 and len(study.runs()) == 49 * 3 * 3
    assert {g.group_id for g in study.groups() if g.task == "ALE/Pong-v5"} == {"Pong-ppo-0", "Pong-a2c-0",
                                                                              "Pong-acer-0"}
    experiments = tmp_path / "experiments"
    shutil.copytree(EXPERIMENTS_DIR, experiments)
    text = (experiments / "studies/atari.yaml").read_text()
    (experiments / "studies/atari.yaml").write_text(text.replace("[ALE/Pong-v5]", "[Hopper-v5]"))
    with pytest.raises(ConfigError, match=r"atari.yaml: field scales.smoke.tasks: 'Hopper-v5' cannot be trained "
                                          r"by variant atari_ppo .*an Atari configuration"):
        load_study("atari", "smoke", experiments_dir=experiments)
    (experiments / "studies/atari.yaml").write_text(text.replace("[ALE/Pong-v5]", "[PongNoFrameskip-v4]"))
    with pytest.raises(ConfigError, match="legacy id whose name fixes protocol settings"):
        load_study("atari", "smoke", experiments_dir=experiments)


def test_run_folders_of_a_namespaced_task(tmp_path):
    """ALE/Pong-v5 holds a slash: its runs live two folders deep, and the job's plan still names them."""
    import json

    from ppo.pipeline.plan import read_plan, write_plan

    study = load_study("atari", "smoke")
    runs = [r for r in study.runs() if r.variant.name == "atari_ppo"]
    path = write_plan(tmp_path / "results", study, "train_Pong-ppo-0", runs)
    plan = read_plan(path)
    run = plan.runs[0]
    assert (run.task, run.variant, run.seed) == ("ALE/Pong-v5", "atari_ppo", 0)
    assert run.folder == tmp_path / "results/atari/smoke/runs/ALE/Pong-v5/atari_ppo/seed0"
    assert run.config == runs[0].variant.config and run.config_digest == runs[0].config_digest
    assert plan.checkpoint.parent == tmp_path / "results/atari/smoke/checkpoints"
    assert plan.checkpoint.name.startswith("ALE_Pong-v5-")
    edited = json.loads(path.read_text())
    edited["runs"][0]["task"] = "ALE/Breakout-v5"  # the run's name and folder are Pong's
    path.write_text(json.dumps(edited))
    with pytest.raises(ConfigError, match=r"field runs\[0\]\.run_id is 'ALE/Pong-v5/atari_ppo/seed0', but its task, "
                                          r"variant and seed name 'ALE/Breakout-v5/atari_ppo/seed0'"):
        read_plan(path)


def test_deviations_list_every_protocol_setting_with_its_source():
    import importlib.util

    spec = importlib.util.spec_from_file_location("deviations", EXPERIMENTS_DIR.parent / "workflow/scripts/deviations.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    table = module.deviations(load_study("atari", "smoke")).set_index(["preset", "setting"])
    protocol = load_protocol("paper2017").to_dict()
    for setting, value in protocol.items():
        if setting != "name":
            assert table.loc[("(protocol paper2017)", setting), "value"] == str(value)
    assert table.loc[("ppo_atari_paper", "ppo.learning_rate"), "value"] == "0.00025"  # not rounded to 0.00
    assert "ALE/<Game>-v5" in table.loc[("(study)", "tasks"), "source_of_choice"]

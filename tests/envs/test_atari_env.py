"""Atari protocols on real ALE games: every setting checked against an independent computation."""
import dataclasses

import cv2
import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.wrappers import AtariPreprocessing

from ppo.config.errors import ConfigError
from ppo.config.files import EXPERIMENTS_DIR
from ppo.config.protocols import AtariProtocol, load_protocol
from ppo.envs.atari import AtariLockstepEnvs, check_atari_task, is_atari, make_atari_env

PAPER = load_protocol("paper2017")
MACHADO = load_protocol("machado2018")


def test_protocol_files_hold_the_documented_settings():
    assert (PAPER.repeat_action_probability, PAPER.full_action_space, PAPER.noop_max, PAPER.life_loss_signal) \
        == (0.0, False, 30, True)
    assert (MACHADO.repeat_action_probability, MACHADO.full_action_space, MACHADO.noop_max,
            MACHADO.life_loss_signal) == (0.25, True, 0, False)
    assert PAPER.fire_reset and not MACHADO.fire_reset
    for p in (PAPER, MACHADO):  # shared agent-side settings
        assert (p.frame_skip, p.screen_size, p.grayscale, p.frame_stack, p.max_episode_frames, p.reward_clip) \
            == (4, 84, True, 4, 108_000, True)
    assert PAPER.to_dict()["name"] == "paper2017" and set(PAPER.to_dict()) == {
        f.name for f in dataclasses.fields(AtariProtocol)}


@pytest.mark.parametrize("field, value", [
    ("repeat_action_probability", 1.0), ("repeat_action_probability", -0.1), ("repeat_action_probability", True),
    ("full_action_space", 1), ("noop_max", -1), ("frame_skip", 0), ("frame_skip", 4.0), ("screen_size", 0),
    ("frame_stack", 0), ("max_episode_frames", 0), ("life_loss_signal", "yes"), ("reward_clip", None),
    ("fire_reset", 0)])
def test_protocol_refuses_bad_values_naming_the_field(field, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(PAPER, **{field: value})


def _write_protocol(folder, name, text):
    (folder / "protocols").mkdir(exist_ok=True)
    path = folder / "protocols" / f"{name}.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize("edit, field", [
    (lambda s: s.replace("  noop_max: 30\n", "  noop_max: 30\n  sticky: 0.25\n", 1), "settings.sticky"),
    (lambda s: s.replace("  frame_skip: 4\n", "", 1), "settings.frame_skip"),
    (lambda s: s.replace("  grayscale: true\n", "  grayscale: 1\n", 1), "settings.grayscale"),
    (lambda s: s.replace("  frame_stack: 4\n", "  frame_stack: four\n", 1), "settings.frame_stack"),
    (lambda s: s.replace("  reward_clip: \"Mnih", "  reward_clips: \"Mnih", 1), "sources.reward_clip"),
    (lambda s: s.replace("description:", "descriptoin:", 1), "descriptoin"),
])
def test_protocol_file_errors_name_file_and_field(tmp_path, edit, field):
    text = (EXPERIMENTS_DIR / "protocols" / "paper2017.yaml").read_text()
    path = _write_protocol(tmp_path, "broken", edit(text))
    with pytest.raises(ConfigError) as err:
        load_protocol("broken", tmp_path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_unknown_protocol_lists_the_available_ones(tmp_path):
    with pytest.raises(ConfigError, match=r"no Atari protocol 'paper2018'.*\['machado2018', 'paper2017'\]"):
        load_protocol("paper2018")


@pytest.mark.parametrize("task, reason", [
    ("PongNoFrameskip-v4", "legacy id whose name fixes protocol settings"),
    ("Pong-v4", "legacy id"), ("PongDeterministic-v4", "legacy id"), ("Pong-v0", "legacy id"),
    ("BreakoutNoFrameskip-v0", "legacy id"),
    ("ALE/Pong-ram-v5", "RAM-observation variant"), ("Pong-ram-v4", "RAM-observation variant"),
    ("Pong", "lacks the 'ALE/' namespace or the '-v5' version"), ("ALE/Pong", "lacks"), ("ALE/Pong-v4", "lacks"),
    ("ALE/Pongg-v5", "unknown Atari game 'Pongg'.*did you mean.*'Pong'"),
    ("ALE/Combat-v5", "no single-player v5 env"), ("Hopper-v5", "not an Atari id"),
])
def test_ambiguous_or_unknown_ids_are_refused(task, reason):
    with pytest.raises(ConfigError, match=f"my.yaml: .*{reason}"):
        check_atari_task(task, "my.yaml")


def test_is_atari_routes_legacy_ids_to_the_refusal():
    check_atari_task("ALE/Pong-v5")
    check_atari_task("ALE/MontezumaRevenge-v5")
    assert all(map(is_atari, ["ALE/Pong-v5", "ALE/Pongg-v5", "PongNoFrameskip-v4", "Pong-v0", "MsPacman-ram-v4"]))
    assert not any(map(is_atari, ["Hopper-v5", "HalfCheetah-v4", "CartPole-v1", "Swimmer"]))


@pytest.mark.parametrize("protocol, actions", [(PAPER, 6), (MACHADO, 18)])
def test_settings_reach_the_emulator(protocol, actions):
    env = make_atari_env("ALE/Pong-v5", protocol)
    ale = env.unwrapped.ale
    assert ale.getFloat("repeat_action_probability") == pytest.approx(protocol.repeat_action_probability)
    assert ale.getInt("max_num_frames_per_episode") == 108_000
    assert env.action_space.n == actions  # Pong's minimal set vs all joystick actions
    assert env.unwrapped._frameskip == 1 and env.spec.max_episode_steps is None  # one skip, no TimeLimit
    pre = env.env
    assert isinstance(pre, AtariPreprocessing) and not pre.terminal_on_life_loss and pre.noop_max == protocol.noop_max
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8
    assert all(np.array_equal(obs[0], frame) for frame in obs)  # a new episode repeats its first frame
    env.close()


def test_step_is_four_frames_and_observes_the_max_of_the_last_two():
    env = make_atari_env("ALE/Pong-v5", PAPER)
    ale, action_set = env.unwrapped.ale, env.unwrapped._action_set
    prev, _ = env.reset(seed=3)
    rng = np.random.default_rng(0)
    max_mattered = False
    for _ in range(60):
        action = int(rng.integers(env.action_space.n))
        before = ale.cloneState(include_rng=True)
        frame = ale.getFrameNumber()
        obs, *_ = env.step(action)
        assert ale.getFrameNumber() == frame + 4
        # redo the step by hand on the emulator: four frames, gray screens of frames 3 and 4
        after = ale.cloneState(include_rng=True)
        ale.restoreState(before)
        screens = []
        for _ in range(4):
            ale.act(action_set[action])
            screens.append(ale.getScreenGrayscale())
        expected = cv2.resize(np.maximum(screens[2], screens[3]), (84, 84), interpolation=cv2.INTER_AREA)
        assert np.array_equal(obs[-1], expected)
        assert np.array_equal(obs[:-1], prev[1:])  # the stack shifts by one frame
        max_mattered |= not np.array_equal(expected, cv2.resize(screens[3], (84, 84), interpolation=cv2.INTER_AREA))
        ale.restoreState(after)
        prev = obs
    assert max_mattered  # the moving ball makes the two frames differ, so the test can tell max from last
    env.close()


def test_noop_starts_are_seeded_and_absent_without_noops():
    starts = {}
    for seed in range(6):
        env = make_atari_env("ALE/Breakout-v5", PAPER)
        obs, _ = env.reset(seed=seed)
        # the no-op count, computed as ale-py seeds the env's np_random from the reset seed
        np_seed = np.random.SeedSequence(seed).generate_state(n_words=2)[0]
        noops = gym.utils.seeding.np_random(int(np_seed))[0].integers(1, 31)
        assert env.unwrapped.ale.getEpisodeFrameNumber() == noops
        starts[seed] = (int(noops), env.unwrapped.ale.getRAM().tobytes())
        env.close()
    assert len({count for count, _ in starts.values()}) > 1 and len({ram for _, ram in starts.values()}) > 1
    states = set()
    for seed in range(4):
        env = make_atari_env("ALE/Breakout-v5", MACHADO)
        obs, _ = env.reset(seed=seed)
        assert env.unwrapped.ale.getEpisodeFrameNumber() == 0
        states.add((obs.tobytes(), env.unwrapped.ale.getRAM().tobytes()))
        env.close()
    assert len(states) == 1


def test_frame_cap_truncates_and_final_obs_is_the_last_before_reset():
    protocol = dataclasses.replace(PAPER, noop_max=0, max_episode_frames=200, fire_reset=False)
    envs = AtariLockstepEnvs("ALE/Pong-v5", [0], protocol)
    total = 0.0
    for step in range(1, 51):
        prev = envs.obs[0].copy()
        rewards, term, trunc, final_obs, finished = envs.step(np.zeros(1, dtype=np.int64))
        total += rewards[0]
        if step < 50:
            assert not (term[0] or trunc[0]) and not final_obs
    assert trunc[0] and not term[0]  # 200 frames = 50 steps of 4: reported as truncation, not termination
    assert finished == [(0, total, 50)]
    assert np.array_equal(final_obs[0][:-1], prev[1:]) and not np.array_equal(final_obs[0], envs.obs[0])
    assert all(np.array_equal(envs.obs[0][0], frame) for frame in envs.obs[0])  # reset at once
    assert envs.envs[0].unwrapped.ale.getEpisodeFrameNumber() == 0 and envs.episode_length[0] == 0


def test_cap_inside_a_frame_skip_repeats_the_last_frame():
    # gymnasium's AtariPreprocessing stops the skip at the cap and pools its stale buffers: the final
    # observation's newest frame is the previous one again (no-op starts make this the usual case at 108k)
    protocol = dataclasses.replace(PAPER, noop_max=0, max_episode_frames=201, fire_reset=False)
    envs = AtariLockstepEnvs("ALE/Pong-v5", [0], protocol)
    for _ in range(50):
        envs.step(np.zeros(1, dtype=np.int64))
    _, term, trunc, final_obs, finished = envs.step(np.zeros(1, dtype=np.int64))
    assert trunc[0] and not term[0] and finished[0][2] == 51
    assert np.array_equal(final_obs[0][-1], final_obs[0][-2])


def test_breakout_return_spans_all_lives_and_life_loss_does_not_reset():
    envs = AtariLockstepEnvs("ALE/Breakout-v5", [3], dataclasses.replace(PAPER, fire_reset=False))
    ale = envs.envs[0].unwrapped.ale
    rng = np.random.default_rng(3)  # seed 3: random play scores in two different lives
    start_lives, losses, steps, reward_by_life = int(envs.lives[0]), 0, 0, {}
    frame = ale.getEpisodeFrameNumber()
    while True:
        lives = int(envs.lives[0])
        rewards, term, trunc, final_obs, finished = envs.step(rng.integers(envs.num_actions, size=1))
        steps, losses = steps + 1, losses + envs.life_lost[0]
        reward_by_life[lives] = reward_by_life.get(lives, 0.0) + rewards[0]
        if finished:
            break
        assert ale.getEpisodeFrameNumber() == frame + 4  # the game goes on through lost lives
        frame = ale.getEpisodeFrameNumber()
        assert envs.life_lost[0] == (envs.lives[0] < lives)
    assert start_lives == 5 and term[0] and losses == 5  # one signal per life, the last one at game over
    assert sorted(reward_by_life) == [1, 2, 3, 4, 5]
    assert sum(r > 0 for r in reward_by_life.values()) >= 2  # scored in more than one life ...
    assert finished == [(0, sum(reward_by_life.values()), steps)]  # ... and the return is the whole game's
    assert 0 in final_obs and envs.episode_return[0] == 0 and envs.lives[0] == 5


def test_fire_reset_presses_fire_at_each_learner_episode_start():
    """paper2017: FIRE then action 2 (8 frames) after the reset and after every lost life; not agent steps."""
    envs = AtariLockstepEnvs("ALE/Breakout-v5", [3], PAPER)
    ale = envs.envs[0].unwrapped.ale
    noops = ale.getEpisodeFrameNumber() - 8
    assert 1 <= noops <= 30 and envs.episode_length[0] == 0
    rng, fired = np.random.default_rng(3), 0
    while not fired:
        frame = ale.getEpisodeFrameNumber()
        envs.step(rng.integers(envs.num_actions, size=1))
        fired = envs.life_lost[0] and envs.lives[0] > 0
        assert ale.getEpisodeFrameNumber() == frame + 4 + (8 if fired else 0)
    # a game without FIRE in its action set (Freeway: NOOP, UP, DOWN) gets nothing extra; nor does machado2018
    freeway = AtariLockstepEnvs("ALE/Freeway-v5", [0], dataclasses.replace(PAPER, noop_max=0))
    assert not freeway.fire and freeway.envs[0].unwrapped.ale.getEpisodeFrameNumber() == 0
    assert not AtariLockstepEnvs("ALE/Breakout-v5", [0], MACHADO).fire


@pytest.mark.parametrize("protocol", [PAPER, MACHADO], ids=lambda p: p.name)
def test_state_round_trip_continues_bit_identically(tmp_path, protocol):
    rng = np.random.default_rng(0)
    actions = rng.integers(4, size=(400, 2))
    a = AtariLockstepEnvs("ALE/Breakout-v5", [10, 11], protocol)
    for t in range(100):
        a.step(actions[t])
    torch.save(a.state(), tmp_path / "envs.pt")
    b = AtariLockstepEnvs("ALE/Breakout-v5", [98, 99], protocol)  # other seeds: everything comes from the state
    b.load_state(torch.load(tmp_path / "envs.pt", weights_only=True))
    assert np.array_equal(a.obs, b.obs)
    for env_a, env_b in zip(a.envs, b.envs):  # max-pool buffers: read by a step that ends early in the skip
        assert all(np.array_equal(x, y) for x, y in zip(env_a.env.obs_buffer, env_b.env.obs_buffer))
    ended = 0
    for t in range(100, 400):
        ra, rb = a.step(actions[t]), b.step(actions[t])
        for x, y in zip(ra[:3], rb[:3]):
            assert np.array_equal(x, y), t
        assert ra[3].keys() == rb[3].keys() and all(np.array_equal(ra[3][i], rb[3][i]) for i in ra[3])
        assert ra[4] == rb[4] and np.array_equal(a.obs, b.obs) and np.array_equal(a.life_lost, b.life_lost)
        ended += len(ra[4])
    assert ended >= 2  # resets happened after the restore, so the no-op and sticky RNGs were carried over


def test_state_of_another_protocol_is_refused():
    a = AtariLockstepEnvs("ALE/Pong-v5", [0], PAPER)
    b = AtariLockstepEnvs("ALE/Pong-v5", [0], MACHADO)
    with pytest.raises(ValueError, match="paper2017.*machado2018"):
        b.load_state(a.state())


def test_inactive_envs_are_untouched():
    envs = AtariLockstepEnvs("ALE/Breakout-v5", [0, 1, 2], PAPER)
    for _ in range(5):
        envs.step(np.array([1, 1, 1]))
    frozen = envs.envs[1].unwrapped.ale.cloneState(include_rng=True)
    obs, ret, length = envs.obs[1].copy(), envs.episode_return[1], envs.episode_length[1]
    active = np.array([True, False, True])
    for _ in range(20):
        rewards, term, trunc, _, finished = envs.step(np.array([1, 3, 3]), active)
        assert rewards[1] == 0 and not (term[1] or trunc[1] or envs.life_lost[1])
        assert all(i != 1 for i, *_ in finished)
    assert envs.envs[1].unwrapped.ale.cloneState(include_rng=True) == frozen
    assert np.array_equal(envs.obs[1], obs) and envs.episode_return[1] == ret and envs.episode_length[1] == length
    assert envs.episode_length[0] == 25
    with pytest.raises(ValueError, match="mask over the 3"):
        envs.step(np.zeros(3, dtype=np.int64), np.array([True, False]))


class WrapperStepper:
    """One environment stepped through gymnasium's wrappers themselves (``env.step`` of make_atari_env), with
    the auto-reset, life-loss signal and FIRE reset of AtariLockstepEnvs: the definition its own stepping
    must reproduce."""

    def __init__(self, task, seed, protocol):
        self.env, self.protocol = make_atari_env(task, protocol), protocol
        self.ale = self.env.unwrapped.ale
        self.fire = protocol.fire_reset and "FIRE" in self.env.unwrapped.get_action_meanings()
        self.episode_return = 0.0
        self.obs = self.reset(seed)

    def reset(self, seed=None):
        obs = self.env.reset(seed=seed)[0]
        self.lives = self.ale.lives()
        return self.fire_reset(obs)

    def fire_reset(self, obs):
        for action in (1, 2) if self.fire else ():
            obs, reward, terminated, truncated, info = self.env.step(action)
            self.episode_return += reward
            self.lives = info["lives"]
            if terminated or truncated:
                obs = self.env.reset()[0]
                self.lives = self.ale.lives()
        return obs

    def step(self, action):
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.episode_return += reward
        life_lost = terminated or 0 < info["lives"] < self.lives
        self.lives = info["lives"]
        final = None
        if terminated or truncated:
            final, self.episode_return = obs, 0.0
            obs = self.reset()
        elif life_lost and self.protocol.life_loss_signal:
            obs = self.fire_reset(obs)
        self.obs = obs
        return reward, terminated, truncated and not terminated, final, life_lost


@pytest.mark.parametrize("task, protocol, steps", [
    # a frame cap that is no multiple of the skip ends episodes inside a skip (stale max-pool frames)
    ("ALE/Breakout-v5", dataclasses.replace(PAPER, max_episode_frames=1001), 700),
    ("ALE/Breakout-v5", dataclasses.replace(MACHADO, max_episode_frames=1202), 700),
    ("ALE/Pong-v5", dataclasses.replace(MACHADO, grayscale=False, frame_skip=3, screen_size=64,
                                        max_episode_frames=500), 300),
], ids=["paper2017", "machado2018", "rgb-skip3"])
def test_steps_give_the_frames_of_gymnasiums_wrappers(task, protocol, steps):
    """AtariLockstepEnvs steps the emulator itself (AtariLockstepEnvs._advance): every observation, reward,
    episode end, final observation, lost life and max-pool frame is that of AtariPreprocessing +
    FrameStackObservation stepped through gymnasium, over resets, truncations inside a frame skip and lost
    lives (with FIRE resets under paper2017)."""
    seeds = [5, 6]
    envs = AtariLockstepEnvs(task, seeds, protocol)
    refs = [WrapperStepper(task, seed, protocol) for seed in seeds]
    rng = np.random.default_rng(0)
    ends = lives_lost = 0
    for t in range(steps):
        actions = rng.integers(envs.num_actions, size=len(seeds))
        rewards, terminated, truncated, final_obs, finished = envs.step(actions)
        for i, ref in enumerate(refs):
            reward, term, trunc, final, life_lost = ref.step(int(actions[i]))
            assert (rewards[i], terminated[i], truncated[i], envs.life_lost[i]) == (reward, term, trunc, life_lost), t
            assert np.array_equal(envs.obs[i], ref.obs), t
            assert (final is None) == (i not in final_obs) and (final is None or np.array_equal(final_obs[i], final))
            assert envs.lives[i] == ref.lives and envs.episode_return[i] == ref.episode_return
            assert all(np.array_equal(x, y) for x, y in zip(envs.pools[i], ref.env.env.obs_buffer))
            ends, lives_lost = ends + (final is not None), lives_lost + life_lost
    assert ends >= 2
    assert task == "ALE/Pong-v5" or lives_lost >= ends + 2  # Breakout: lives were also lost within games

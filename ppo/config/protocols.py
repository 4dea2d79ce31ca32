"""Atari protocols: every environment setting that changes Atari scores, read from
``experiments/protocols/<name>.yaml`` with a source for each (ppo.envs.atari applies them)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

from .errors import ConfigError, check_name, show
from .files import EXPERIMENTS_DIR, check_keys, read_yaml


@dataclass(frozen=True)
class AtariProtocol:
    """Every environment setting of an Atari run. Values and their sources live in the protocol files."""

    name: str
    repeat_action_probability: float  # sticky actions: each frame repeats the previous action with this probability
    full_action_space: bool  # all 18 joystick actions (True) or the game's minimal set (Pong: 6)
    noop_max: int  # reset takes a uniform 1..noop_max no-op frames (0: none); drawn from the env's np_random
    frame_skip: int  # emulator frames per agent step; with > 1 the observation is the max of the last two
    screen_size: int  # observation frames are resized (cv2 INTER_AREA) to screen_size x screen_size
    grayscale: bool  # ALE's grayscale palette instead of RGB
    frame_stack: int  # the agent sees the last frame_stack observations (reset: the first one repeated)
    max_episode_frames: int  # ALE truncates an episode after this many emulator frames (no-op starts included)
    life_loss_signal: bool  # the learner ends the value horizon at a lost life (the game itself goes on)
    reward_clip: bool  # the learner trains on sign(reward); recorded scores stay raw
    fire_reset: bool  # games with FIRE: press FIRE, then action 2, at each learner episode start (baselines)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"name must be a non-empty string, got {self.name!r}")
        p = self.repeat_action_probability
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p < 1:
            raise ValueError(f"repeat_action_probability must be a number in [0, 1), got {p!r}")
        for name in ("full_action_space", "grayscale", "life_loss_signal", "reward_clip", "fire_reset"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        for name, low in (("noop_max", 0), ("frame_skip", 1), ("screen_size", 1), ("frame_stack", 1),
                          ("max_episode_frames", 1)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)


SETTINGS = tuple(f.name for f in dataclasses.fields(AtariProtocol) if f.name != "name")


def load_protocol(name: str, experiments_dir: Path = EXPERIMENTS_DIR) -> AtariProtocol:
    """Read ``experiments/protocols/<name>.yaml``: {description, settings: {...}, sources: {setting: text}}.
    Every setting must be given, and every setting needs a source."""
    folder = experiments_dir / "protocols"
    path = folder / f"{name}.yaml"
    check_name(name, "protocol name", str(path))
    if not path.is_file():
        available = sorted(p.stem for p in folder.glob("*.yaml"))
        raise ConfigError(f"{path}: no Atari protocol {show(name)}; available: {available}")
    data = read_yaml(path)
    check_keys(data, {"description", "settings", "sources"}, {"description", "settings", "sources"}, path)
    settings, sources = data["settings"], data["sources"]
    check_keys(settings, set(SETTINGS), set(SETTINGS), path, "settings.")
    check_keys(sources, set(SETTINGS), set(SETTINGS), path, "sources.")
    for key, text in sources.items():
        if not isinstance(text, str) or not text.strip():
            raise ConfigError(f"{path}: field sources.{key} must be a non-empty text, got {show(text)}")
    try:
        return AtariProtocol(name=name, **settings)
    except ValueError as err:
        raise ConfigError(f"{path}: field settings.{err}") from None  # the message starts with the field name

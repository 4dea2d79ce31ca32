"""The episodes a Stable-Baselines3 run finishes, as our runs record them (ppo.training.records.EPISODE_COLUMNS)."""
from __future__ import annotations

import pandas as pd


def episode_recorder():
    """A fresh SB3 callback that keeps (global step, raw return, length) of each episode SB3's ``Monitor``
    reports; ``.frame()`` gives them as our episodes table. SB3 is an optional dependency ('.[bench]')."""
    from stable_baselines3.common.callbacks import BaseCallback

    class Episodes(BaseCallback):
        def __init__(self):
            super().__init__()
            self.rows = []

        def _on_step(self) -> bool:
            for info in self.locals["infos"]:
                if "episode" in info:  # Monitor: a whole episode (a whole game on Atari), raw rewards
                    self.rows.append((self.num_timesteps, float(info["episode"]["r"]), int(info["episode"]["l"])))
            return True

        def frame(self) -> pd.DataFrame:
            return pd.DataFrame(self.rows, columns=["global_step", "episode_return", "episode_length"])

    return Episodes()


def silent(model):
    """``model`` with a logger that writes nothing: left to itself, SB3's ``learn`` makes a logger folder
    /tmp/SB3-<date> that it never removes, one per call."""
    from stable_baselines3.common.logger import Logger

    model.set_logger(Logger(folder=None, output_formats=[]))
    return model

"""The one annealing rule of every algorithm's settings that have a ``*_schedule`` (learning rate, PPO's ε)."""
from __future__ import annotations


def annealed(value, schedule: str, iteration: int, horizon: int):
    """``value`` at ``iteration`` (0-based): as it is when ``schedule`` is "constant"; when "linear",
    ``value × (1 − iteration / horizon)``, from ``value`` at iteration 0 down to 0 at ``horizon``, and 0 after."""
    if schedule == "constant":
        return value
    return value * max(0.0, 1 - iteration / horizon)

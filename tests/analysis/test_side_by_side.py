"""scripts/side_by_side.py: one variant with one setting at several values, per window of agent steps."""
import importlib.util
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("side_by_side", ROOT / "scripts" / "side_by_side.py")
side_by_side = importlib.util.module_from_spec(spec)
spec.loader.exec_module(side_by_side)


def test_a_setting_is_read_as_yaml_and_nested_along_its_dots():
    assert side_by_side.setting("network", "cnn_nature") == {"network": "cnn_nature"}
    assert side_by_side.setting("policy_init_scale", "1.0") == {"policy_init_scale": 1.0}
    assert side_by_side.setting("a2c.learning_rate", "7.0e-4") == {"a2c": {"learning_rate": 7e-4}}


def test_windows_by_hand():
    """Window k holds agent steps in (k·w, (k+1)·w]: a step on a window's edge counts in the window it ends."""
    updates = pd.DataFrame({"global_step": [80, 100, 180, 200], "entropy": [1.0, 2.0, 3.0, 5.0],
                            "kl": [0.1, 0.3, 0.5, 0.5], "grad_norm": [1.0, 1.0, 2.0, 4.0]})
    episodes = pd.DataFrame({"global_step": [50, 150, 199], "episode_return": [-21.0, -20.0, -18.0]})
    table = side_by_side.windows(episodes, updates, window=100)
    assert table.index.tolist() == [0, 1]
    assert table.loc[0].to_dict() == pytest.approx({"entropy": 1.5, "kl": 0.2, "grad_norm": 1.0, "score": -21.0})
    assert table.loc[1].to_dict() == pytest.approx({"entropy": 4.0, "kl": 0.5, "grad_norm": 3.0, "score": -19.0})


def test_two_networks_train_side_by_side(capsys):
    side_by_side.main(["--variant", "atari_a2c", "--compare", "network", "cnn_mnih2016", "cnn_nature",
                       "--task", "ALE/Pong-v5", "--steps", "160", "--window", "80"])
    out = capsys.readouterr().out
    assert "network = cnn_mnih2016: " in out and "network = cnn_nature: " in out
    table = out[out.index("per window of 80 agent steps"):].splitlines()
    assert [line.split()[0] for line in table[3:]] == ["0-80", "80-160"]  # two windows of 80 agent steps
    assert "cnn_nature" in table[2] and "cnn_mnih2016" in table[2]


def test_a_field_without_two_values_is_refused():
    with pytest.raises(SystemExit):
        side_by_side.main(["--compare", "network", "cnn_nature"])

"""The report's first page: ε = 0.2 at paper scale beside SB3 and the published references."""
import importlib.util
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("front_page", ROOT / "workflow/scripts/front_page.py")
front_page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(front_page)


def test_anchor_beside_references(tmp_path):
    scores = pd.DataFrame({
        "run_id": [f"Hopper-v5/clip_0.2/seed{k}" for k in range(3)] + ["Swimmer-v5/clip_0.2/seed0", "Hopper-v5/no_clip/seed0"],
        "task": ["Hopper-v5"] * 3 + ["Swimmer-v5", "Hopper-v5"], "variant": ["clip_0.2"] * 4 + ["no_clip"],
        "variant_label": ["Clipping, ε = 0.2"] * 4 + ["No clipping or penalty"],
        "score": [1000.0, 1200.0, 1400.0, 50.0, 10.0]})
    manifests = scores[["run_id"]].assign(env_version="v5", total_steps=1_000_000)
    sb3 = tmp_path / "sb3_reference" / "Hopper-v5" / "seed0"
    sb3.mkdir(parents=True)
    pd.DataFrame({"global_step": [1, 2], "episode_return": [2000.0, 2400.0], "episode_length": [1, 1]}).to_parquet(
        sb3 / "episodes.parquet")
    (sb3 / "manifest.json").write_text(json.dumps({"task": "Hopper-v5", "seed": 0, "total_steps": 1_000_000}))

    note, table = front_page.anchor_beside_references(tmp_path, scores, manifests, "clip_0.2")
    rows = front_page.cells_of(table.splitlines())
    assert rows[0][:2] == ["task", "ours, v5"] and len(rows) == 3  # header, rule, Hopper (Swimmer: one seed only)
    hopper = rows[2]
    assert hopper[:4] == ["Hopper-v5", "1,200.0", "1,000.0 to 1,400.0", "2,200.0 (1 of 3 seeds)"]
    # The real reference table: Hopper's published PPO numbers at 1M that score the end of training reach
    # down to CleanRL's 2,231.1 − 656.7; ours lies wholly below.
    assert hopper[5] == "below" and hopper[4].startswith("1,574.4 to ")
    assert "disagreement" in note and note.startswith("Clipping, ε = 0.2, per task")
    assert front_page.anchor_beside_references(tmp_path, scores[scores["task"] == "Swimmer-v5"], manifests, "clip_0.2") is None

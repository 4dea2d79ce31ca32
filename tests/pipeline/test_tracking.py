"""The wandb sink: CleanRL names in global-step order, offline by default, nothing touched in training."""

import pandas as pd
import pytest

from ppo.config.run_config import RunConfig
from ppo.config.settings import PPOSettings
from ppo.pipeline import tracking
from ppo.pipeline.tracking import history
from ppo.training.driver import RunSpec, train_group


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "InvertedPendulum-v5" / "clip_0.2" / "seed0"
    cfg = RunConfig(total_steps=256, horizon=128, ppo=PPOSettings(epochs=1, minibatch_size=64))
    train_group([RunSpec("InvertedPendulum-v5/clip_0.2/seed0", "InvertedPendulum-v5", cfg, 0, out,
                         meta={"study": "t", "variant": "clip_0.2"})], log=lambda _: None)
    return out


def test_history_uses_cleanrl_names_in_step_order(run_dir):
    entries = history(run_dir)
    steps = [e["global_step"] for e in entries]
    assert steps == sorted(steps)
    returns = [e for e in entries if "charts/episodic_return" in e]
    updates = [e for e in entries if "losses/approx_kl" in e]
    assert len(updates) == 2 and updates[-1]["global_step"] == 256
    assert {"losses/clipfrac", "losses/explained_variance", "charts/SPS", "charts/learning_rate"} <= set(updates[0])
    # every other statistic of the run is exported too, under stats/ (none is dropped for want of a name)
    recorded = set(pd.read_parquet(run_dir / "updates.parquet").columns) - {"update", "global_step"}
    assert {f"stats/{k}" for k in recorded if k not in tracking.UPDATE_METRICS} <= set(updates[0])
    assert "stats/surrogate" in updates[0]
    episodes = pd.read_parquet(run_dir / "episodes.parquet")
    assert [e["charts/episodic_return"] for e in returns] == episodes["episode_return"].tolist()


def test_offline_export_needs_no_account_or_network(run_dir, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is an optional extra: pip install -e '.[tracking]'")
    from ppo.pipeline.tracking import main

    for var in ("WANDB_API_KEY", "WANDB_MODE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # a closed port: any attempt would fail
    done = tmp_path / "exported.txt"
    assert main(["--dir", str(tmp_path / "wb"), "--done", str(done), str(run_dir)]) == 0
    run_files = list((tmp_path / "wb").rglob("offline-run-*/run-*.wandb"))
    assert len(run_files) == 1 and run_files[0].stat().st_size > 0
    assert done.read_text().strip() == "InvertedPendulum-v5-clip_0_2-seed0"


def test_a_bad_manifest_is_one_line_naming_the_file(tmp_path, capsys):
    run = tmp_path / "runs" / "Hopper-v5" / "clip_0.2" / "seed0"
    run.mkdir(parents=True)
    (run / "manifest.json").write_text("[1, 2")
    assert tracking.main(["--dir", str(tmp_path / "wb"), str(run)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(run / "manifest.json") in err


def test_online_without_a_network_is_one_line_at_once(run_dir, tmp_path, monkeypatch, capsys):
    """Without a network wandb retried for minutes, then printed its stack twice: the server is tried first."""
    monkeypatch.setenv("WANDB_BASE_URL", "http://127.0.0.1:9")  # a closed port: refused at once
    assert tracking.main(["--mode", "online", "--dir", str(tmp_path / "wb"), str(run_dir)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("error: wandb mode online: cannot connect to 127.0.0.1:9 (")
    assert "records are untouched" in err and not (tmp_path / "wb").exists()


def test_unreachable_says_why():
    import socket
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        assert tracking.unreachable(f"http://127.0.0.1:{server.getsockname()[1]}", timeout=5) is None
    assert tracking.unreachable("api.wandb.ai") == "'api.wandb.ai' is not a server address"  # no scheme

import os

import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    # Runs are bit-reproducible only at a fixed thread count; the pipeline uses one thread per job.
    torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (`./repro test` runs `-n auto --dist loadgroup`): each test file runs on one worker, so its
    module fixtures are built once, and the files that share the session's smoke pipeline share a worker (it runs
    once). The files with pipeline runs go first, so that no worker is left with a long one at the end."""
    if "PYTEST_XDIST_WORKER" not in os.environ:  # a serial run keeps the files' order
        return
    with_pipeline = {item.path for item in items if item.get_closest_marker("integration")}
    items.sort(key=lambda item: item.path not in with_pipeline)  # stable: file order kept within each part
    for item in items:
        shares_smoke = "smoke_pipeline" in item.fixturenames
        item.add_marker(pytest.mark.xdist_group("smoke_pipeline" if shares_smoke else item.nodeid.split("::")[0]))

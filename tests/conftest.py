import pytest
import torch


@pytest.fixture(autouse=True)
def _one_thread():
    # Runs are bit-reproducible only at a fixed thread count; the pipeline uses one thread per job.
    torch.set_num_threads(1)

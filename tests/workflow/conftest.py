import pytest
from project_copy import SmokePipeline, copy_project, run_smoke_pipeline


@pytest.fixture(scope="session")
def smoke_pipeline(tmp_path_factory) -> SmokePipeline:
    """The smoke pipeline, run once for test_pipeline.py and test_report_html.py (each ran it in its own copy)."""
    return run_smoke_pipeline(copy_project(tmp_path_factory.mktemp("smoke_project")))

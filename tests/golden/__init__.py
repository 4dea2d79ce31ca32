"""Golden records: one tiny run per algorithm and code path, trained at a fixed revision and kept here so
that any change of numerics is caught (tests/training/test_golden_records.py; regenerate with
``python -m tests.golden.regenerate``)."""

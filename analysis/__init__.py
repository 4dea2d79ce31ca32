"""Analysis of PPO reproduction runs: load runs, score them, compare with the paper.

Modules have one job each: ``io`` (read run directories), ``scores`` (final score per
run), ``stats`` (bootstrap intervals), ``table1`` (the paper's normalised ablation
table), ``references`` (other published PPO numbers), ``curves`` (learning curves) and
``report_tables`` (CSV + markdown output).
"""

"""Analysis of PPO reproduction runs: load runs, score them, compare with the paper.

Modules have one job each: ``io`` (read run directories), ``scores`` (final score per
run), ``stats`` (bootstrap intervals), ``table1`` (the paper's normalised ablation
table), ``aggregate`` (IQM, median, mean, optimality gap, performance profiles and
probability of improvement after Agarwal et al. 2021), ``references`` (other published
PPO numbers), ``curves`` (learning and sample-efficiency curves) and ``report_tables``
(CSV + markdown output).
"""

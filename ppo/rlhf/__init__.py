"""PPO for language models: an RLHF study on a synthetic language, through the surrogate family of Table 1.

language.py (grammar, gold reward) -> model.py (tiny decoder-only transformer) -> pretrain.py (SFT policy,
Bradley-Terry reward model) -> losses.py (per-token rewards, GAE, KLs, baselines) -> train.py (the update
loop, the baselines and best-of-n). Settings are YAML data: experiments/rlhf/, read by config.py.
"""

"""A run record's config across the versions of its shape (``config_schema`` in the manifest; absent = 1).

A change to the run config that keeps every run's behaviour but changes how its record is written (fields
moved into a section, a new field recorded at its old fixed value) gets a new SCHEMA_VERSION in
ppo/config/run_config.py and a migration here from the version before. A finished run's record is then read in the
current shape and digested as the plan digests it (:func:`recorded_digest`), so results trained before
the change stay finished: nothing is trained again for a change of shape. Each migration describes the old
shape as it was, with its own constants, never through today's classes, which may change again.
"""
from __future__ import annotations

import copy

from .run_config import SCHEMA_VERSION

# Schema 1 (until 2026-11-24): PPO's settings at top level of the record; fields added after the first
# runs were published left out at their default, which every run before them used.
_V1_PPO_FIELDS = ("epochs", "minibatch_size", "learning_rate", "lr_schedule", "adam_eps", "vf_coef",
                  "max_grad_norm", "clip_schedule", "vf_clip", "target_kl", "reward_norm", "reward_clip",
                  "adv_recompute", "objective")
_V1_OMITTED_AT_DEFAULT = {"network": "mlp", "env_protocol": None}
_V1_PPO_OMITTED_AT_DEFAULT = {"clip_schedule": "constant", "vf_clip": None, "target_kl": None, "reward_norm": False,
                              "reward_clip": 10.0, "adv_recompute": False}


def _v1_to_v2(config: dict) -> dict:
    """Schema 2: every field a run reads is recorded, and PPO's settings are its section ``ppo``, as every
    other algorithm's are."""
    out = {**_V1_OMITTED_AT_DEFAULT, **config}
    if out.get("algorithm", "ppo") == "ppo":
        section = {name: out.pop(name) for name in _V1_PPO_FIELDS if name in out}
        out["ppo"] = {**_V1_PPO_OMITTED_AT_DEFAULT, **section}
    return out


def _v2_to_v3(config: dict) -> dict:
    """Schema 3 (2026-11-28): ``policy_init_scale`` is recorded; every run before it initialised its policy's
    output layer at scale 0.01."""
    return {"policy_init_scale": 0.01, **config}


MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3}  # version -> the step to the next one
# What ppo.training.driver.env_protocol_record adds to a protocol's own settings in the manifest
PROTOCOL_RECORD_EXTRAS = ("id", "made_with", "protocol", "time_limit_handling")


def current_config(config: dict, version: int) -> dict:
    """``config``, a record of schema ``version``, in the current schema (a new dict)."""
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= SCHEMA_VERSION:
        raise ValueError(f"config_schema {version!r} is not a schema this code knows (1 to {SCHEMA_VERSION})")
    config = copy.deepcopy(config)
    for step in range(version, SCHEMA_VERSION):
        config = MIGRATIONS[step](config)
    return config


def current_manifest(manifest: dict) -> dict:
    """A finished run's manifest with its config in the current schema (the record itself is not changed)."""
    version = manifest.get("config_schema", 1)
    if version == SCHEMA_VERSION:
        return manifest
    return {**manifest, "config": current_config(manifest["config"], version), "config_schema": SCHEMA_VERSION}


def recorded_digest(manifest: dict) -> str | None:
    """The config digest of a finished run as today's plan computes it: the recorded one for a run of the
    current schema; for an older one, the digest of its recorded config migrated to the current schema,
    with the environment protocol it recorded (ppo.pipeline.study.Run.config_digest digests the same)."""
    version = manifest.get("config_schema", 1)
    if version == SCHEMA_VERSION:
        return manifest.get("config_digest")
    settings = current_config(manifest["config"], version)
    if settings.get("env_protocol") is not None:  # Atari: the protocol's settings, as recorded at training
        recorded = manifest["env_protocol"]
        settings["env_protocol"] = {k: v for k, v in recorded.items() if k not in PROTOCOL_RECORD_EXTRAS}
    return settings_digest(settings)


def settings_digest(settings: dict) -> str:
    """A run's config digest: changes whenever its resolved settings change, so the pipeline re-runs exactly
    those runs (MuJoCo, Atari and RLHF runs alike)."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(settings, sort_keys=True, default=str).encode()).hexdigest()[:16]


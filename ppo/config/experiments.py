"""The files under experiments/: presets, variants and the claims they carry, read as data.

A *preset* (``experiments/presets/<name>.yaml``) is a complete set of hyperparameters plus, for every
detail the paper leaves unstated, the choice made and its source. A *variant*
(``experiments/variants/<name>.yaml``) is a preset plus a few overrides: a new ablation is one such
file, never new code. YAML is read by ppo.config.files (plain data only: no tags, bounded size, depth and
aliases); unknown keys are refused with the file and field named.
"""
from __future__ import annotations

import csv
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError, check_name, is_number, show
from .files import EXPERIMENTS_DIR, PROJECT_ROOT, check_keys, deep_merge, read_yaml
from .protocols import load_protocol
from .run_config import RunConfig, build_config, is_setting

_CHOICE_KEY = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)?")
MAX_LABEL = 100
MAX_DESCRIPTION = 1000


def check_label(label, source: str) -> str:
    """A label names a row of every table and a line of every figure, so it must render in both:
    one line of printable text, no '$' (matplotlib reads it as mathematics), no '|' (it splits a markdown
    table's cell), not starting with '_' (matplotlib leaves such a line out of the legend)."""
    if not isinstance(label, str) or not label.strip():
        raise ConfigError(f"{source}: field label must be a non-empty string, got {show(label)}")
    if len(label) > MAX_LABEL or not label.isprintable() or "$" in label or "|" in label or label.startswith("_"):
        raise ConfigError(f"{source}: field label {show(label)} cannot be shown in tables and figures: use one line "
                          f"of at most {MAX_LABEL} printable characters without '$' or '|', not starting with '_'")
    mixed = next((word for word in re.findall(r"[^\W\d_]+", label) if len(_scripts(word)) > 1), None)
    if mixed:  # "Сlipping" with a Cyrillic С prints like "Clipping": two settings would look the same
        raise ConfigError(f"{source}: field label {show(label)}: the word {mixed!r} mixes letters of "
                          f"{' and '.join(sorted(_scripts(mixed)))}, a look-alike of another word")
    return label


def _scripts(word: str) -> set[str]:
    """The scripts of a word's letters by their Unicode names' first word (LATIN, GREEK, CYRILLIC, ...)."""
    return {unicodedata.name(c, "UNKNOWN").split()[0] for c in word if c.isalpha()}


@dataclass(frozen=True)
class Preset:
    name: str
    config: dict  # the preset's settings, as written
    choices: dict  # field -> {"value", "paper_states", "source"}: the documented decisions
    path: Path


def load_preset(name: str, experiments_dir: Path = EXPERIMENTS_DIR) -> Preset:
    path = experiments_dir / "presets" / f"{name}.yaml"
    data = read_yaml(path)
    check_keys(data, {"description", "config", "choices"}, {"config", "choices"}, path)
    build_config(data["config"], str(path))  # validate now, so the error names the preset file
    if not isinstance(data["choices"], dict):
        raise ConfigError(f"{path}: field choices must be a mapping of setting -> {{paper_states, source}}")
    for key, choice in data["choices"].items():  # each becomes a row of the report's deviations table
        if not _CHOICE_KEY.fullmatch(key):
            raise ConfigError(f"{path}: field choices: key {show(key)} is not a setting name (e.g. horizon, trpo.max_kl)")
        if not is_setting(key):  # e.g. a field since moved into a section
            raise ConfigError(f"{path}: field choices.{key} names no setting of the run config")
        if not isinstance(choice, dict) or not {"paper_states", "source"} <= set(choice):
            raise ConfigError(f"{path}: choices.{key} needs 'paper_states' and 'source'")
        if not isinstance(choice["paper_states"], bool) or not isinstance(choice["source"], str):
            raise ConfigError(f"{path}: field choices.{key}: paper_states must be true or false and source a text, "
                              f"got {show(choice['paper_states'])}, {show(choice['source'])}")
    return Preset(name=name, config=data["config"], choices=data["choices"], path=path)


# A variant's claim, in a form a report can check (the ``details`` report; analysis/details.py): the direction of
# the effect on the normalised score against the study's anchor and, optionally, the mechanism the claim names,
# as one per-update statistic of the runs compared with a number or with the anchor's value. It is read by the
# reports only: it never enters a run's settings or digest, so writing one re-trains nothing.
CLAIM_DIRECTIONS = ("better", "worse", "none")  # the score rises | falls | hardly moves (|effect| < margin)
CLAIM_STATS = ("approx_kl", "kl", "clipfrac", "entropy", "explained_variance", "early_stop_fraction",
               "diverged_fraction")  # updates.parquet columns, mean per run; and two fractions (analysis/details.py)
CLAIM_OPS = ("<", ">")
_ENV_NAME = re.compile(r"[A-Z][A-Za-z0-9]{0,49}")  # a task without its version: HalfCheetah, Pong


@dataclass(frozen=True)
class Mechanism:
    stat: str  # one of CLAIM_STATS
    op: str  # "<" | ">"
    value: float | str  # a number, or "anchor": the anchor's value of the same statistic


@dataclass(frozen=True)
class Claim:
    direction: str  # one of CLAIM_DIRECTIONS: the predicted effect on the score against the anchor
    tasks: tuple[str, ...] = ()  # the tasks the claim is about, without version ("HalfCheetah"); () = all
    margin: float | None = None  # direction "none" only: the largest |effect| that is "little change"
    mechanism: Mechanism | None = None

    def text(self) -> str:
        """The prediction in a few words, as the claims table prints it."""
        if self.direction == "none":
            score = f"score within ±{self.margin:g} of the anchor"
        else:
            score = f"score {'above' if self.direction == 'better' else 'below'} the anchor"
        where = f" on {', '.join(self.tasks)}" if self.tasks else ""
        return score + where + (f"; {self.mechanism_text()}" if self.mechanism else "")

    def mechanism_text(self) -> str:
        m = self.mechanism
        return "" if m is None else f"{m.stat} {m.op} {m.value if isinstance(m.value, str) else f'{m.value:g}'}"


def load_claim(data, path: Path, config: RunConfig) -> Claim:
    """Validate a variant's ``claim`` mapping; every error names the file and the field."""
    check_keys(data, {"direction", "tasks", "margin", "mechanism"}, {"direction"}, path, "claim.")
    direction = data["direction"]
    if direction not in CLAIM_DIRECTIONS:
        raise ConfigError(f"{path}: field claim.direction must be one of {list(CLAIM_DIRECTIONS)}, "
                          f"got {show(direction)}")
    tasks = data.get("tasks", [])
    if (not isinstance(tasks, list) or len(tasks) > 100
            or not all(isinstance(t, str) and _ENV_NAME.fullmatch(t) for t in tasks)):
        raise ConfigError(f"{path}: field claim.tasks must be a list of task names without version "
                          f"(e.g. [HalfCheetah, Swimmer]), got {show(tasks)}")
    if len(set(tasks)) != len(tasks):
        raise ConfigError(f"{path}: field claim.tasks names a task twice: {show(tasks)}")
    margin = data.get("margin")
    if direction == "none" and margin is None:
        raise ConfigError(f"{path}: field claim.margin is needed with direction none: the largest change of the "
                          "normalised score (random = 0, best = 1) that counts as little change, e.g. 0.1")
    if direction != "none" and margin is not None:
        raise ConfigError(f"{path}: field claim.margin applies to direction none only (this claim is {direction})")
    if margin is not None and not (is_number(margin) and 0 < margin <= 1):
        raise ConfigError(f"{path}: field claim.margin must be a number in (0, 1], got {show(margin)}")
    mechanism = data.get("mechanism")
    if mechanism is not None:
        check_keys(mechanism, {"stat", "op", "value"}, {"stat", "op", "value"}, path, "claim.mechanism.")
        stat, op, value = mechanism["stat"], mechanism["op"], mechanism["value"]
        if stat not in CLAIM_STATS:
            raise ConfigError(f"{path}: field claim.mechanism.stat must be one of {list(CLAIM_STATS)}, "
                              f"got {show(stat)}")
        if op not in CLAIM_OPS:
            raise ConfigError(f"{path}: field claim.mechanism.op must be one of {list(CLAIM_OPS)}, got {show(op)}")
        if value != "anchor" and not is_number(value):
            raise ConfigError(f"{path}: field claim.mechanism.value must be a finite number or 'anchor', "
                              f"got {show(value)}")
        if stat == "early_stop_fraction" and (config.ppo is None or config.ppo.target_kl is None):
            raise ConfigError(f"{path}: field claim.mechanism.stat early_stop_fraction needs ppo.target_kl, which this "
                              "variant does not set")
        mechanism = Mechanism(stat, op, value if isinstance(value, str) else float(value))
    return Claim(direction, tuple(tasks), None if margin is None else float(margin), mechanism)


@dataclass(frozen=True)
class Variant:
    name: str
    label: str
    preset: Preset
    overrides: dict
    config: RunConfig  # preset + overrides, resolved (total_steps is set per study scale)
    paper_row: dict | None  # its row of reference/ppo2017_table1.csv (paper_row: true), derived from the objective
    path: Path
    description: str | None = None  # the claim the variant tests, in a sentence or two (optional)
    named_preset: str = ""  # the preset the variant file names, when a study put another in its place
    claim: Claim | None = None  # the same claim, machine-readable (optional; never part of the run's settings)


TABLE1_REFERENCE = PROJECT_ROOT / "reference" / "ppo2017_table1.csv"


def table1_row(config: RunConfig) -> dict[str, str] | None:
    """The row of reference/ppo2017_table1.csv that a PPO config's surrogate is (setting, param), or None:
    Table 1 varies one term of the objective at a time and has no entropy bonus."""
    if config.algorithm != "ppo" or config.ppo.objective.ent_coef != 0:
        return None
    o = config.ppo.objective
    if o.kl_beta == 0:
        if o.clip_epsilon is None:
            return {"setting": "no_clipping_or_penalty", "param": ""}
        return {"setting": "clipping", "param": f"epsilon={o.clip_epsilon:g}"}
    if o.clip_epsilon is not None:
        return None  # clipping and a KL penalty together: no row
    if o.kl_target is not None:
        return {"setting": "adaptive_kl", "param": f"d_targ={o.kl_target:g}"}
    return {"setting": "fixed_kl", "param": f"beta={o.kl_beta:g}"}


def surrogate_label(overrides: dict, config: RunConfig, path: Path) -> str:
    """The label of a variant that only changes PPO's surrogate and gives none: Table 1's name of its objective
    ("Clipping, ε = 0.2", "Adaptive KL, d_targ = 0.01", "Fixed KL, β = 3", "No clipping or penalty"), so that
    the file states ε (or β, d_targ) once. Any other variant names itself (field label)."""
    row = table1_row(config)
    if row is None or set(overrides) != {"ppo"} or set(overrides["ppo"]) != {"objective"}:
        raise ConfigError(f"{path}: missing field(s) ['label'] (only a variant whose overrides change ppo.objective "
                          "alone, to a surrogate of Table 1's kind, is named after its objective)")
    o = config.ppo.objective
    if row["setting"] == "no_clipping_or_penalty":
        return "No clipping or penalty"
    if row["setting"] == "clipping":
        return f"Clipping, ε = {o.clip_epsilon:g}"
    if row["setting"] == "adaptive_kl":
        return f"Adaptive KL, d_targ = {o.kl_target:g}"
    return f"Fixed KL, β = {o.kl_beta:g}"


def table1_rows() -> set[tuple[str, str]]:
    """(setting, param) of every row of the paper's Table 1 (reference/ppo2017_table1.csv)."""
    try:
        with open(TABLE1_REFERENCE, newline="") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise ConfigError(f"{TABLE1_REFERENCE}: cannot be read ({type(err).__name__}); it defines Table 1's rows, "
                          "which variants with paper_row: true name") from None
    if not rows or not {"setting", "param"} <= set(rows[0]):
        what = "has no rows" if not rows else "lacks field setting or param"
        raise ConfigError(f"{TABLE1_REFERENCE}: {what}; it defines Table 1's rows, which variants with "
                          "paper_row: true name")
    return {(row["setting"], row["param"] or "") for row in rows}


def paper_row_of(overrides: dict, config: RunConfig, path: Path) -> dict[str, str]:
    """The Table 1 row a variant with ``paper_row: true`` is: the one its objective makes (table1_row), which
    must be a row of the paper's table; and its overrides may change only the surrogate, since the report
    prints the paper's number beside ours on the strength of this."""
    row = table1_row(config)
    if row is None or (row["setting"], row["param"]) not in table1_rows():
        what = f"{{setting: {row['setting']}, param: {row['param']!r}}}" if row else "no surrogate of Table 1"
        raise ConfigError(f"{path}: field paper_row: the variant's objective is {what}, which is not a row of "
                          f"Table 1 ({TABLE1_REFERENCE.relative_to(PROJECT_ROOT)})")
    ppo_overrides = overrides.get("ppo", {})
    other = sorted(set(overrides) - {"ppo"}) or sorted(f"ppo.{k}" for k in set(ppo_overrides) - {"objective"})
    if other:
        raise ConfigError(f"{path}: field overrides.{other[0]}: a variant with a paper_row may change only "
                          "ppo.objective (Table 1 varies the surrogate alone); remove paper_row or the override")
    return row


def load_variant(name: str, experiments_dir: Path = EXPERIMENTS_DIR, *, presets: dict[str, str] | None = None,
                 **extra: Any) -> Variant:
    """Load ``experiments/variants/<name>.yaml``; ``extra`` overrides (e.g. total_steps) apply last.

    ``presets`` (a study's ``presets`` field) maps the preset a variant names to the one it is applied to
    instead: the same ablation on other tasks' settings (the Table 1 variants on ppo_classic)."""
    path = experiments_dir / "variants" / f"{name}.yaml"
    check_name(name, "variant name", str(path))
    data = read_yaml(path)
    check_keys(data, {"label", "preset", "overrides", "paper_row", "description", "claim"}, {"preset"}, path)
    if "label" in data:
        check_label(data["label"], str(path))
    description = data.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > MAX_DESCRIPTION
                                    or not " ".join(description.split()).isprintable()):
        raise ConfigError(f"{path}: field description must be text of at most {MAX_DESCRIPTION} characters, "
                          f"got {show(description)}")
    available = sorted(p.stem for p in (experiments_dir / "presets").glob("*.yaml"))
    named = check_name(data["preset"], "field preset", str(path))
    preset_name = (presets or {}).get(named, named)
    if preset_name not in available:
        raise ConfigError(f"{path}: field preset: no preset {preset_name!r} "
                          f"({experiments_dir / 'presets' / preset_name}.yaml does not exist); available: {available}")
    preset = load_preset(preset_name, experiments_dir)
    overrides = data.get("overrides") or {}
    if not isinstance(overrides, dict):
        raise ConfigError(f"{path}: field 'overrides' must be a mapping")
    replaced = sorted(set(extra) & set(overrides))
    if replaced:  # the study's scale sets these; an override would be silently replaced
        raise ConfigError(f"{path}: field overrides.{replaced[0]} is set by the study's scale; remove it here")
    merged = deep_merge(deep_merge(preset.config, overrides), extra)
    config = build_config(merged, str(path) if named == preset_name else f"{path} (applied to preset {preset_name})")
    if config.env_protocol is not None:
        try:
            load_protocol(config.env_protocol, experiments_dir)
        except ConfigError as err:
            raise ConfigError(f"{path}: field env_protocol: {err}") from None
    paper_row = data.get("paper_row", False)
    if not isinstance(paper_row, bool):
        raise ConfigError(f"{path}: field paper_row must be true or false (the row of Table 1 is the one the "
                          f"variant's objective makes), got {show(paper_row)}")
    row = paper_row_of(overrides, config, path) if paper_row else None
    claim = load_claim(data["claim"], path, config) if data.get("claim") is not None else None
    label = data["label"] if "label" in data else surrogate_label(overrides, config, path)
    return Variant(name, label, preset, overrides, config, row, path,
                   description=" ".join(description.split()) if description else None,
                   named_preset=named if named != preset_name else "", claim=claim)



"""The project's files as every layer reads them: where they are, YAML read safely (size, depth, duplicate
keys, no tags), and the checks of a file's fields that name the file and the field in one line."""
from __future__ import annotations

from pathlib import Path

import yaml

from .errors import ConfigError, show

PROJECT_ROOT = Path(__file__).resolve().parents[2]  # ppo/config/files.py -> the repository
EXPERIMENTS_DIR = PROJECT_ROOT / "experiments"



def deep_merge(base: dict, overrides: dict) -> dict:
    out = dict(base)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = value
    return out



MAX_YAML_BYTES = 1_000_000
MAX_YAML_DEPTH = 20



class _StrictLoader(yaml.SafeLoader):
    """yaml.safe_load for experiment files, refusing what could exhaust memory or break the readers:
    aliases (an alias bomb of a few hundred bytes expands to gigabytes when printed or written; a cyclic
    alias never ends), nesting deeper than MAX_YAML_DEPTH, mapping keys that are not strings, and a key
    given twice in one mapping (instead of: the last one wins)."""

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            raise yaml.composer.ComposerError(None, None, "aliases (*name) are not allowed in this project's YAML files",
                                              self.peek_event().start_mark)
        self._depth = getattr(self, "_depth", 0) + 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_YAML_DEPTH} levels",
                                                  self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if not isinstance(key, str):
                raise yaml.constructor.ConstructorError(
                    None, None, f"field names must be text, got {show(key)}", key_node.start_mark)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"field {show(key)} is given more than once (duplicate key)", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)



def read_yaml(path: Path) -> dict:
    """A YAML file's top-level mapping; any failure is one ConfigError naming the file (and line)."""
    if not path.is_file():
        what = ("a folder, not a file" if path.is_dir() else
                "not a regular file (a pipe, device or socket)" if path.exists() else "file not found")
        raise ConfigError(f"{path}: {what}")
    try:
        size = path.stat().st_size
        if size > MAX_YAML_BYTES:  # before reading: a huge (or sparse) file is never read whole
            raise ConfigError(f"{path}: {size:,} bytes, more than the limit of {MAX_YAML_BYTES:,} for an experiment file")
        with open(path, "rb") as f:
            raw = f.read(MAX_YAML_BYTES + 1)  # a file that grew since: still at most the limit and a byte
    except OSError as err:
        raise ConfigError(f"{path}: cannot read it ({err.strerror or type(err).__name__})") from None
    if len(raw) > MAX_YAML_BYTES:
        raise ConfigError(f"{path}: {len(raw):,} bytes, more than the limit of {MAX_YAML_BYTES:,} for an experiment file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError(f"{path}: not UTF-8 text (byte 0x{raw[err.start]:02x} at line {line})") from None
    try:
        data = yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        context, start = getattr(err, "context", None), getattr(err, "context_mark", None)
        if context and start:  # where the unfinished construct began, often the line to fix
            problem += f" ({context} started at line {start.line + 1})"
        raise ConfigError(f"{path}: not valid YAML{where}: {' '.join(problem.split())[:200]}") from None
    except (ValueError, OverflowError, RecursionError) as err:  # e.g. an integer of 5000 digits
        raise ConfigError(f"{path}: not valid YAML: {type(err).__name__}: {' '.join(str(err).split())[:200]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping at top level")
    return data



def check_keys(data: dict, allowed: set[str], required: set[str], path: Path, prefix: str = "") -> None:
    """Refuse unknown and missing fields of a mapping; ``prefix`` names where it sits ("settings.")."""
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: field {prefix.rstrip('.') or '(top level)'} must be a mapping, got {show(data)}")
    unknown = sorted(map(str, set(data) - allowed))
    if unknown:
        raise ConfigError(f"{path}: unknown field(s) {show([prefix + k for k in unknown] if prefix else unknown)}; "
                          f"allowed: {sorted(allowed)}")
    missing = sorted(required - set(data))
    if missing:
        raise ConfigError(f"{path}: missing field(s) {[prefix + k for k in missing] if prefix else missing}")



def check_positive_int(value, field: str, path: Path | str, limit: int) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise ConfigError(f"{path}: field {field} must be a positive integer, got {show(value)}")
    if value > limit:
        raise ConfigError(f"{path}: field {field} is {show(value)}, more than the limit of {limit:,}")
    return value



def check_name_list(value, field: str, path: Path) -> tuple[str, ...]:
    """A non-empty list of distinct non-empty strings (task ids, variant patterns)."""
    if not isinstance(value, list) or not value:
        raise ConfigError(f"{path}: field {field} must be a non-empty list, got {show(value)}")
    bad = [v for v in value if not isinstance(v, str) or not v]
    if bad:
        raise ConfigError(f"{path}: field {field} must list names (strings), got {show(bad[0])}")
    duplicated = sorted({v for v in value if value.count(v) > 1})
    if duplicated:
        raise ConfigError(f"{path}: field {field} lists {duplicated} more than once")
    return tuple(value)



def check_mapping(value, field: str, path: Path) -> dict:
    if not isinstance(value, dict) or not value:
        raise ConfigError(f"{path}: field {field} must be a non-empty mapping, got {show(value)}")
    return value


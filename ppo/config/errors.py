"""The one kind of error a bad input gets (:class:`ConfigError`, one line naming the source and the field),
and the checks every layer shares: names safe as folders and shell words, values shown short."""
from __future__ import annotations

import math
import re
import reprlib


class ConfigError(ValueError):
    """A configuration file is malformed; the message names the file and the field."""


_SHOW = reprlib.Repr()
_SHOW.maxlevel, _SHOW.maxtuple, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxset = 2, 6, 6, 4, 4
_SHOW.maxstring, _SHOW.maxlong, _SHOW.maxother = 60, 40, 60


def show(value) -> str:
    """A value as an error message quotes it: short and one line, whatever its size or depth (reprlib
    never expands more than a few items, so an alias bomb or a cyclic list costs nothing to print)."""
    text = " ".join(_SHOW.repr(value).split())
    return text if len(text) <= 120 else text[:117] + "..."


# Names that become folder names and words of shell commands (variants, studies, scales, presets,
# protocols): letters, digits, '_', '.', '-', not starting with '.' or '-', so no quoting, globbing, '..'
# or option can come from them.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def check_name(name, what: str, source: str) -> str:
    """``name`` if it is a safe name (see _NAME), else a ConfigError naming ``source`` and ``what``."""
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name:
        raise ConfigError(f"{source}: {what} {show(name)} is not a valid name: use letters, digits, '_', '.' "
                          "and '-' (at most 100, not starting with '.' or '-', no '..')")
    return name


def is_number(value) -> bool:
    """An int or a finite float: NaN and infinities are refused wherever a number is read."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or isinstance(value, float) and math.isfinite(value)

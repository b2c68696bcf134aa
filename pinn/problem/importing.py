"""Importing a problem module, and saying in one line why it failed.

`check_params(cls, params, key)` refuses constructor arguments that would not bind, naming the
key. `import_module_of(target)` imports the module of `problem.target` (`reaction.Reaction` ->
`reaction`). A failure becomes a `ConfigError` naming the file, the line and the error:

    problem.target='reaction.Reaction': reaction.py line 3 imports scipy, which is not
        installed: pip install scipy
    problem.target='reaction.Reaction': reaction.py line 7: NameError: name 'tourch' is not defined
    problem.target='reaction.Reaction': there is no module 'reaction' (no reaction.py in ...)
"""

from __future__ import annotations

import difflib
import importlib
import inspect
import os
import sysconfig
import traceback
from pathlib import Path
from types import ModuleType, TracebackType
from typing import Any

from pinn.errors import ConfigError

_LIBRARY_DIRS = (
    *(str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("stdlib", "purelib", "platlib")),
    str(Path(__file__).resolve().parents[1]),  # pinn itself
)


def import_module_of(target: str, module_name: str, key: str = "problem.target") -> ModuleType:
    """The module `module_name` of `target` (the config's `key`: problem.target, model.name),
    imported; any failure as a ConfigError naming `key`."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if _is_target_itself(error.name, module_name):
            raise ConfigError(f"{key}={target!r}: {_no_module(module_name)}") from error
        where = _where(error.__traceback__)
        missing = error.name or str(error)
        raise ConfigError(
            f"{key}={target!r}: {where} imports {missing}, which is not installed: "
            f"pip install {missing.partition('.')[0]}"
        ) from error
    except SyntaxError as error:  # the line is the error's own, not a frame's
        where = f"{_shown(error.filename or module_name)} line {error.lineno}"
        raise ConfigError(f"{key}={target!r}: {where}: SyntaxError: {error.msg}") from error
    except Exception as error:  # anything the module's top level raised: NameError, OSError, ...
        where = _where(error.__traceback__)
        message = traceback.format_exception_only(type(error), error)[-1].strip()
        raise ConfigError(f"{key}={target!r}: {where}: {message}") from error


def check_params(
    cls: type, params: dict[str, Any], key: str = "problem.params", supplied: tuple[str, ...] = ()
) -> None:
    """Refuse `params` (the config's `key`) in one line unless `cls(**supplied, **params)` binds:
    every key one of the constructor's keyword arguments (the closest named), every argument
    without a default given; `supplied` are the arguments pinn passes itself."""
    signature = inspect.signature(cls)
    accepted = {
        name: parameter
        for name, parameter in signature.parameters.items()
        if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        and name not in supplied
    }
    takes_any = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    listed = f"the params {', '.join(accepted)}" if accepted else "no params"
    for name in params:
        if name not in accepted and not takes_any:
            close = difflib.get_close_matches(name, list(accepted), n=1)
            guess = f"; did you mean {key}.{close[0]}?" if close else ""
            raise ConfigError(
                f"unknown config key '{key}.{name}': {cls.__name__}() takes {listed}{guess}"
            )
    missing = [n for n, p in accepted.items() if p.default is p.empty and n not in params]
    if missing:
        raise ConfigError(
            f"{key} lacks {', '.join(missing)}: {cls.__name__}() needs a value for "
            f"each, e.g. +{key}.{missing[0]}=..."
        )


def _is_target_itself(missing: str | None, module_name: str) -> bool:
    """Whether the module not found is `module_name` or a package above it (not a dependency)."""
    return missing is not None and (module_name + ".").startswith(missing + ".")


def _no_module(module_name: str) -> str:
    """Where `module_name` was looked for, and how to make it importable."""
    file = module_name.replace(".", "/") + ".py"
    return (
        f"there is no module {module_name!r} (no {file} in {os.getcwd()} or on PYTHONPATH): "
        "check the target's spelling, or run from the folder holding the module"
    )


def _where(tb: TracebackType | None) -> str:
    """'file line N' of the innermost frame in the user's code (not Python's or an installed
    package's), else of the module's own top level."""
    skipped = {__file__, importlib.__file__}  # import_module_of, then importlib.import_module
    frames = [
        frame
        for frame in traceback.extract_tb(tb)
        if not frame.filename.startswith("<") and frame.filename not in skipped
    ]
    if not frames:
        return "the module"
    own = [frame for frame in frames if not _in_library(frame.filename)]
    frame = own[-1] if own else frames[0]
    return f"{_shown(frame.filename)} line {frame.lineno}"


def _in_library(filename: str) -> bool:
    """Whether a file belongs to Python, pinn or an installed package."""
    return str(Path(filename).resolve()).startswith(_LIBRARY_DIRS)


def _shown(filename: str) -> str:
    """A file as the user would type it: relative to the working directory when inside it."""
    relative = os.path.relpath(filename)
    return filename if relative.startswith("..") else relative

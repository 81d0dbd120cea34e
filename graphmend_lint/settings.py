"""Settings from `[tool.graphmend]` in pyproject.toml, shared by the CLI and the Fixit path."""
from __future__ import annotations

import contextvars
import os
import re
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterator

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - fixit depends on tomli on 3.10
    import tomli as tomllib

SCOPES = ("reachable", "all")
LOG_STRATEGIES = ("guard", "defer")


class ConfigError(Exception):
    """A `[tool.graphmend]` table that cannot be used."""


@dataclass(frozen=True)
class Settings:
    select: tuple[str, ...] = ("GM",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    unsafe_fixes: bool = False
    compiled_scope: str = "reachable"
    log_strategy: str = "guard"
    # Project index (analysis/project.py): qualified names or fnmatch patterns of what it cannot see.
    module_bases: tuple[str, ...] = ()  # classes whose subclasses are nn.Modules
    compiled_functions: tuple[str, ...] = ()  # defs ("pkg.mod.f", "pkg.mod.Cls.m") that run compiled
    # The CLI adds `import torch` after fixing; Fixit cannot, so there a fix
    # that needs a torch name the file does not bind is not offered.
    can_add_imports: bool = False
    root: Path | None = field(default=None, compare=False)

    def selects(self, code: str) -> bool:
        """ruff semantics: the longest matching prefix of select/ignore wins."""
        best_sel = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        best_ign = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return best_sel >= 0 and best_sel >= best_ign


def _as_tuple(table: dict, key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.graphmend] {key} must be a list of strings")
    return tuple(value)


_QUALIFIED = re.compile(r"[A-Za-z_*?\[][\w*?\[\]!-]*(\.[A-Za-z_*?\[][\w*?\[\]!-]*)*")


def _qualified_names(table: dict, key: str) -> tuple[str, ...]:
    """module-bases / compiled-functions: qualified names (`pkg.mod.Base`), fnmatch patterns allowed."""
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.graphmend] {key} must be a list of qualified names (strings), e.g. [\"pkg.mod.Base\"]")
    for v in value:
        if not _QUALIFIED.fullmatch(v) or "." not in v and "*" not in v:
            raise ConfigError(f"[tool.graphmend] {key}: {v!r} is not a qualified name like \"pkg.mod.Name\" "
                              "(fnmatch patterns such as \"pkg.*.Base\" are allowed)")
    return tuple(value)


def from_table(table: dict, root: Path | None = None) -> Settings:
    known = {"select", "ignore", "exclude", "unsafe-fixes", "compiled-scope", "log-strategy", "module-bases",
             "compiled-functions"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"[tool.graphmend] unknown option(s): {', '.join(unknown)}")
    s = Settings(root=root)
    if "select" in table:
        s = replace(s, select=_as_tuple(table, "select"))
    s = replace(s, ignore=_as_tuple(table, "ignore"), exclude=_as_tuple(table, "exclude"))
    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError("[tool.graphmend] unsafe-fixes must be true or false")
    scope = table.get("compiled-scope", "reachable")
    if scope not in SCOPES:
        raise ConfigError(f"[tool.graphmend] compiled-scope must be one of {SCOPES}")
    strategy = table.get("log-strategy", "guard")
    if strategy not in LOG_STRATEGIES:
        raise ConfigError(f"[tool.graphmend] log-strategy must be one of {LOG_STRATEGIES}")
    return replace(s, unsafe_fixes=unsafe, compiled_scope=scope, log_strategy=strategy,
                   module_bases=_qualified_names(table, "module-bases"),
                   compiled_functions=_qualified_names(table, "compiled-functions"))


def find_pyproject(start: Path) -> Path | None:
    start = start.resolve()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def load(start: Path | None = None) -> Settings:
    """Settings of the nearest pyproject.toml at or above `start` (default: cwd)."""
    path = find_pyproject(start or Path.cwd())
    if path is None:
        return Settings()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from e
    return from_table(data.get("tool", {}).get("graphmend", {}), root=path.parent)


def env_overrides(s: Settings) -> Settings:
    if os.environ.get("GRAPHMEND_UNSAFE_FIXES", "") in ("1", "true", "yes"):
        s = replace(s, unsafe_fixes=True)
    scope = os.environ.get("GRAPHMEND_COMPILED_SCOPE")
    if scope in SCOPES:
        s = replace(s, compiled_scope=scope)
    strategy = os.environ.get("GRAPHMEND_LOG_STRATEGY")
    if strategy in LOG_STRATEGIES:
        s = replace(s, log_strategy=strategy)
    return s


_current: contextvars.ContextVar[Settings | None] = contextvars.ContextVar("graphmend_settings", default=None)
_fixit_default: Settings | None = None


def current() -> Settings:
    """The settings rules see: set by the CLI, else (Fixit path) pyproject.toml of cwd + env."""
    s = _current.get()
    if s is not None:
        return s
    global _fixit_default
    if _fixit_default is None:
        try:
            _fixit_default = env_overrides(load())
        except ConfigError:
            _fixit_default = env_overrides(Settings())
    return _fixit_default


class use:
    """Context manager: `with settings.use(s): ...` makes rules see `s`."""

    def __init__(self, s: Settings) -> None:
        self.s = s

    def __enter__(self) -> Settings:
        self.token = _current.set(self.s)
        return self.s

    def __exit__(self, *exc: object) -> None:
        _current.reset(self.token)



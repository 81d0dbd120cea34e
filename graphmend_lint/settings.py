"""Settings from `[tool.graphmend]` in pyproject.toml, shared by the CLI and the Fixit path."""
from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from .files import RealPaths

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
    log_strategy: str = "defer"
    # Project index (analysis/project.py): qualified names or fnmatch patterns of what it cannot see.
    module_bases: tuple[str, ...] = ()  # classes whose subclasses are nn.Modules
    compiled_functions: tuple[str, ...] = ()  # defs ("pkg.mod.f", "pkg.mod.Cls.m") that run compiled
    # The CLI adds `import torch` after fixing; Fixit cannot, so there a fix
    # that needs a torch name the file does not bind is not offered.
    can_add_imports: bool = False
    root: Path | None = field(default=None, compare=False)
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (glob, codes), as written
    respect_gitignore: bool = True
    line_length: int = 88  # of produced code: [tool.ruff]/[tool.black] line-length
    fix_edits: bool = False  # give each fix as text edits (JSON output, the language server)
    fix_generated: bool = False  # fix files whose header says they are generated (analysis/conventions.py)
    # Speed-ups that change no result (runner.py): `check --no-prefilter` / `--no-skeleton` turn them off.
    prefilter: bool = True  # skip files without compiled code unparsed (prefilter.py)
    skeleton: bool = True  # lint-only runs parse the code rules can report on (skeleton.py)
    # "unsafe": GM3xx validation fixes become unsafe (for code that catches the original exception)
    validation_fixes: str = "safe"
    src: tuple[str, ...] = ()  # the project's folders, relative to `root` (analysis/root.py); () = found

    @property
    def excludes(self) -> tuple[str, ...]:
        return self.exclude + self.extend_exclude

    def for_file(self, path: Path) -> "Settings":
        """These settings with the `per-file-ignores` that match `path` folded into `ignore`."""
        if not self.per_file_ignores:
            return self
        extra: list[str] = []
        for pattern, codes in self.per_file_ignores:
            if _matches(path, self.root, pattern):
                extra += codes
        return replace(self, ignore=self.ignore + tuple(extra), per_file_ignores=())

    def selects(self, code: str) -> bool:
        """ruff semantics: the longest matching prefix of select/ignore wins."""
        best_sel = max((len(p) for p in self.select if code.startswith(p)), default=-1)
        best_ign = max((len(p) for p in self.ignore if code.startswith(p)), default=-1)
        return best_sel >= 0 and best_sel >= best_ign


def _as_tuple(table: dict, key: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if isinstance(value, str):  # `select = "GM1"`: as ruff, a list is required (never silently one item)
        raise ConfigError(f"[tool.graphmend] {key} must be a list of strings, e.g. {key} = [{value!r}]".replace("'", '"'))
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"[tool.graphmend] {key} must be a list of strings")
    return tuple(value)


def _matches(path: Path, root: Path | None, pattern: str) -> bool:
    """ruff's per-file-ignores matching: the glob against the path relative to the config's
    folder, or against the file name alone."""
    import fnmatch

    try:
        rel = path.resolve().relative_to(root.resolve()).as_posix() if root else path.as_posix()
    except ValueError:
        rel = path.as_posix()
    pattern = pattern.rstrip("/")
    return (fnmatch.fnmatch(rel, pattern) or fnmatch.fnmatch(rel, pattern + "/*")
            or fnmatch.fnmatch(path.name, pattern))


def _per_file_ignores(table: dict) -> tuple[tuple[str, tuple[str, ...]], ...]:
    value = table.get("per-file-ignores", {})
    if not isinstance(value, dict):
        raise ConfigError('[tool.graphmend] per-file-ignores must be a table: {"tests/*" = ["GM201"]}')
    return tuple((glob, _as_tuple(value, glob)) for glob in value)


def _extra(s: Settings, table: dict) -> Settings:
    """The options added after the first six (kept apart so that new keys merge easily)."""
    gitignore = table.get("respect-gitignore", True)
    if not isinstance(gitignore, bool):
        raise ConfigError("[tool.graphmend] respect-gitignore must be true or false")
    length = table.get("line-length", s.line_length)
    if not isinstance(length, int) or isinstance(length, bool) or not 1 <= length <= 320:
        raise ConfigError("[tool.graphmend] line-length must be an integer from 1 to 320")
    generated = table.get("fix-generated", False)
    if not isinstance(generated, bool):
        raise ConfigError("[tool.graphmend] fix-generated must be true or false")
    validation = table.get("validation-fixes", "safe")
    if validation not in VALIDATION_FIXES:
        raise ConfigError(f"[tool.graphmend] validation-fixes must be one of {VALIDATION_FIXES}")
    return replace(s, extend_exclude=_as_tuple(table, "extend-exclude"), per_file_ignores=_per_file_ignores(table),
                   respect_gitignore=gitignore, line_length=length, fix_generated=generated,
                   validation_fixes=validation, src=_as_tuple(table, "src"))


EXTRA_KEYS = {"extend-exclude", "per-file-ignores", "respect-gitignore", "line-length", "fix-generated",
              "validation-fixes", "src"}
VALIDATION_FIXES = ("safe", "unsafe")


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


def from_table(table: dict, root: Path | None = None, line_length: int = 88) -> Settings:
    known = {"select", "ignore", "exclude", "unsafe-fixes", "compiled-scope", "log-strategy", "module-bases",
             "compiled-functions"}
    known |= EXTRA_KEYS
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(f"[tool.graphmend] unknown option(s): {', '.join(unknown)}")
    s = Settings(root=root, line_length=line_length)
    if "select" in table:
        s = replace(s, select=_as_tuple(table, "select"))
    s = replace(s, ignore=_as_tuple(table, "ignore"), exclude=_as_tuple(table, "exclude"))
    unsafe = table.get("unsafe-fixes", False)
    if not isinstance(unsafe, bool):
        raise ConfigError("[tool.graphmend] unsafe-fixes must be true or false")
    scope = table.get("compiled-scope", "reachable")
    if scope not in SCOPES:
        raise ConfigError(f"[tool.graphmend] compiled-scope must be one of {SCOPES}")
    strategy = table.get("log-strategy", "defer")
    if strategy not in LOG_STRATEGIES:
        raise ConfigError(f"[tool.graphmend] log-strategy must be one of {LOG_STRATEGIES}")
    s = replace(s, unsafe_fixes=unsafe, compiled_scope=scope, log_strategy=strategy,
                module_bases=_qualified_names(table, "module-bases"),
                compiled_functions=_qualified_names(table, "compiled-functions"))
    return _extra(s, table)


def _read_toml(path: Path) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise ConfigError(f"{path}: {e}") from e


def graphmend_table(path: Path) -> dict | None:
    """`[tool.graphmend]` of a pyproject.toml, or None when it has none."""
    table = _read_toml(path).get("tool", {}).get("graphmend")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.graphmend] must be a table")
    return table


def find_pyproject(start: Path) -> Path | None:
    """The nearest pyproject.toml at or above `start` that has a `[tool.graphmend]` table (as ruff
    looks for `[tool.ruff]`)."""
    start = start.resolve()
    for d in (start, *start.parents):
        candidate = d / "pyproject.toml"
        if candidate.is_file() and graphmend_table(candidate) is not None:
            return candidate
    return None


def _line_length_in(d: Path) -> int | None:
    """The line length that `d`'s own formatter config decides, or None when it decides none."""
    for name in ("ruff.toml", ".ruff.toml", "pyproject.toml"):
        candidate = d / name
        if not candidate.is_file():
            continue
        try:
            data = _read_toml(candidate)
        except ConfigError:
            continue
        tables = [data] if name != "pyproject.toml" else [
            data.get("tool", {}).get("ruff"), data.get("tool", {}).get("black")]
        for table in tables:
            if isinstance(table, dict) and isinstance(table.get("line-length"), int):
                return table["line-length"]
        if name == "pyproject.toml" and any(isinstance(x, dict) for x in tables):
            return 88  # the nearest formatter config sets no length: its default
    return None


def _upwards(d: Path):
    """`d`, then its parents, made one at a time (a walk stops at the first folder it knows)."""
    while True:
        yield d
        up = d.parent
        if up == d:
            return
        d = up


def find_line_length(start: Path, memo: dict | None = None, resolved: bool = False) -> int:
    """`line-length` of the nearest ruff.toml, .ruff.toml or pyproject.toml [tool.ruff]/[tool.black].
    `memo`: folder -> length, shared by the calls of one run; `resolved`: `start` is a real path."""
    memo = {} if memo is None else memo
    start = start if resolved else start.resolve()
    chain = []
    found = 88
    for d in _upwards(start):
        if d in memo:
            found = memo[d]
            break
        chain.append(d)
        got = _line_length_in(d)
        if got is not None:
            found = got
            break
    for d in chain:
        memo[d] = found
    return found


def _config_table(path: Path) -> dict:
    if not path.is_file():
        raise ConfigError(f"{path}: no such configuration file")
    if path.name == "pyproject.toml":
        table = graphmend_table(path)
        return {} if table is None else table
    return _read_toml(path)  # a TOML file of graphmend options


def load_file(path: Path, overrides: dict | None = None) -> Settings:
    """Settings of one config file: a pyproject.toml (its [tool.graphmend]) or a TOML file of options."""
    table = {**_config_table(path), **(overrides or {})}
    try:
        return from_table(table, root=path.resolve().parent, line_length=find_line_length(path.parent))
    except ConfigError as e:
        raise ConfigError(f"{path}: {e}") from None


def load(start: Path | None = None) -> Settings:
    """Settings of the nearest pyproject.toml with [tool.graphmend] at or above `start` (default: cwd)."""
    start = start or Path.cwd()
    path = find_pyproject(start)
    if path is None:
        return Settings(line_length=find_line_length(start))
    return load_file(path)


class Discovery:
    """The settings of each linted file, found as ruff finds them: the nearest pyproject.toml with
    `[tool.graphmend]` above the file, else the one above the current folder, else the defaults.
    `config` (--config PATH) replaces discovery; `overrides` (--config KEY=VALUE) are applied over
    every file's table, then the GRAPHMEND_* variables, then `adjust` (the CLI flags).
    `rules`: the rule codes selectors are checked against (None: not checked)."""

    def __init__(self, config: Path | None = None, overrides: dict | None = None, adjust=None,
                 cwd: Path | None = None, rules: tuple[str, ...] | None = None) -> None:
        self.config, self.overrides = config, dict(overrides or {})
        self.rules = rules
        self.adjust = adjust or (lambda s: s)
        self.cwd = (cwd or Path.cwd()).resolve()
        self._nearest: dict[Path, Path | None] = {}
        self._built: dict[Path | None, Settings] = {}
        self._lengths: dict[Path, int] = {}
        self._real: dict[Path, Path] = {}  # folder as given -> resolved
        self._realpaths = RealPaths()
        self._dirs: dict[Path, Settings] = {}  # resolved folder -> its settings

    def _find(self, d: Path) -> Path | None:
        chain = []
        for up in _upwards(d):
            if up in self._nearest:
                found = self._nearest[up]
                break
            chain.append(up)
            candidate = up / "pyproject.toml"
            if candidate.is_file() and graphmend_table(candidate) is not None:
                found = candidate
                break
        else:
            found = None
        for up in chain:
            self._nearest[up] = found
        return found

    def _build(self, path: Path | None) -> Settings:
        if path not in self._built:
            if path is not None:
                s = load_file(path, self.overrides)
            else:
                s = from_table(self.overrides, root=None, line_length=find_line_length(self.cwd))
            if self.rules is not None:
                check_selectors(s, self.rules, f"{path}: " if path is not None else "")
            self._built[path] = self.adjust(env_overrides(s))
        return self._built[path]

    def for_dir(self, d: Path) -> Settings:
        if self.config is not None:
            return self._build(self.config)
        if d not in self._real:
            self._real[d] = Path(self._realpaths.folder(str(d)))  # d.resolve(), a folder at a time
        d = self._real[d]
        if d not in self._dirs:
            found = self._find(d) or self._find(self.cwd)
            s = self._build(found)
            if found is None and "line-length" not in self.overrides:  # no project: the file's formatter config
                s = replace(s, line_length=find_line_length(d, self._lengths, resolved=True))
            self._dirs[d] = s
        return self._dirs[d]

    def for_path(self, path: Path) -> Settings:
        """Settings of a file (per-file-ignores applied) or a folder."""
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = None
        if mode is not None and stat.S_ISDIR(mode):
            return self.for_dir(path)
        if mode is not None and stat.S_ISREG(mode):  # not a link: its folder is its parent's real path
            return self.for_dir(path.parent).for_file(path)
        if path.is_dir():
            return self.for_dir(path)
        return self.for_dir(path.resolve().parent).for_file(path)


TRUE, FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off", "")


def env_overrides(s: Settings, environ: dict | None = None) -> Settings:
    """GRAPHMEND_UNSAFE_FIXES, GRAPHMEND_COMPILED_SCOPE, GRAPHMEND_LOG_STRATEGY; a bad value is a ConfigError."""
    env = os.environ if environ is None else environ
    unsafe = env.get("GRAPHMEND_UNSAFE_FIXES")
    if unsafe is not None:
        if unsafe.lower() not in TRUE + FALSE:
            raise ConfigError(f"GRAPHMEND_UNSAFE_FIXES must be 1/true/yes or 0/false/no, not {unsafe!r}")
        s = replace(s, unsafe_fixes=unsafe.lower() in TRUE) if unsafe else s
    for var, choices, attr in (("GRAPHMEND_COMPILED_SCOPE", SCOPES, "compiled_scope"),
                               ("GRAPHMEND_LOG_STRATEGY", LOG_STRATEGIES, "log_strategy")):
        value = env.get(var)
        if value is None:
            continue
        if value not in choices:
            raise ConfigError(f"{var} must be one of {', '.join(choices)}, not {value!r}")
        s = replace(s, **{attr: value})
    return s


def parse_override(text: str) -> dict:
    """`--config "KEY = VALUE"` (a TOML line, as in ruff) -> {key: value}; ConfigError if it is not one."""
    try:
        table = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"--config {text!r} is neither a file nor a TOML `key = value` pair ({e})") from None
    if "tool" in table and isinstance(table["tool"], dict) and "graphmend" in table["tool"]:
        table = table["tool"]["graphmend"]  # `tool.graphmend.select = [...]`
    return table


def unknown_selectors(codes: tuple[str, ...], known: tuple[str, ...]) -> list[str]:
    """The selectors that name no rule of `known` (the rule codes): a code or a prefix of one (ruff's check)."""
    return [c for c in codes if not any(k.startswith(c) for k in known)]


def check_selectors(s: Settings, known: tuple[str, ...], where: str = "") -> None:
    groups = [("select", s.select), ("ignore", s.ignore)] + [
        (f"per-file-ignores {glob!r}", codes) for glob, codes in s.per_file_ignores]
    for name, codes in groups:
        bad = unknown_selectors(codes, known)
        if bad:
            raise ConfigError(f"{where}{name}: unknown rule selector {', '.join(f'`{c}`' for c in bad)} "
                              "(`graphmend-lint rule --all` lists the rules)")


def fixit_settings() -> Settings:
    """The settings of a Fixit run (no CLI): pyproject.toml of the current folder + environment.
    A configuration that cannot be used is reported and the defaults are used: Fixit offers no way
    to stop the run. Read once per file (rules.base.FileContextProvider): nothing is kept."""
    try:
        return env_overrides(load())
    except ConfigError as e:
        print(f"graphmend-lint: {e}; using the default settings", file=sys.stderr)
        return Settings()

"""`graphmend-lint`: a ruff-style command line over the graphmend rules."""
from __future__ import annotations

import argparse
import os
import pkgutil
import sys
from dataclasses import replace
from pathlib import Path

from . import docs, output, parallel, runner, settings
from .files import discover

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _rule_codes() -> tuple[str, ...]:
    """The rule codes, read off the rule modules' names (`gm906_tensor_as_size` holds GM906, which
    rules/__init__.py enforces), so that checking the selectors imports no rule."""
    folder = Path(__file__).parent / "rules"
    return tuple(sorted(info.name.split("_")[0].upper() for info in pkgutil.iter_modules([str(folder)])
                        if info.name.startswith("gm")))


def _codes(value: str) -> tuple[str, ...]:
    """A comma-separated list of rule selectors; one that names no rule is an error (exit 2)."""
    codes = tuple(c.strip().upper() for c in value.split(",") if c.strip())
    bad = settings.unknown_selectors(codes, _rule_codes())
    if bad:  # a ConfigError passes through argparse: one line, exit 2, no usage text (as config errors)
        raise settings.ConfigError(
            f"unknown rule selector {', '.join(f'`{c}`' for c in bad)} (`graphmend-lint rule --all` lists the rules)")
    return codes


class _Version(argparse.Action):
    """`--version`: the version, and the commit a git install was built from (version.py)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from . import version

        print(f"graphmend-lint {version.describe()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="graphmend-lint", description=__doc__)
    p.add_argument("--version", action=_Version, nargs=0, help="show the version (and the git commit) and exit")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="lint files (and fix them with --fix)", description="Lint files; "
                       "exit 0 when clean, 1 when findings remain, 2 on an error.")
    c.add_argument("paths", nargs="*", type=Path, default=None,
                   help="files or folders to check (default: .); `-` reads the source from standard input")
    c.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    c.add_argument("--unsafe-fixes", action="store_true", default=None, help="also offer/apply unsafe fixes")
    c.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false",
                   help="never offer unsafe fixes, whatever the configuration says")
    c.add_argument("--fix-only", action="store_true", help="apply fixes, do not report what remains (exit 0)")
    c.add_argument("--show-fixes", action="store_true", help="list the fixes applied, per file and rule")
    c.add_argument("--diff", action="store_true", help="print the fixes as a diff; write nothing")
    c.add_argument("--select", type=_codes, help="codes or prefixes to enable (e.g. GM1,GM201)")
    c.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    c.add_argument("--extend-select", type=_codes, default=(), help="codes or prefixes to enable on top of `select`")
    c.add_argument("--output-format", choices=sorted(output.FORMATS), default="text",
                   help="text (one line a finding), full (with the source), json (as ruff's), github, sarif")
    c.add_argument("--statistics", action="store_true", help="show counts per rule, most frequent first")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    c.add_argument("--fix-generated", action="store_true", default=None,
                   help="also fix generated files (a \"do not edit\" header), e.g. an installed package you patch")
    c.add_argument("--compiled-scope", choices=settings.SCOPES,
                   help="reachable: forward()s, compiled functions and their helpers; all: every function")
    c.add_argument("--config", action="append", default=[], metavar="PATH|KEY=VALUE",
                   help="a pyproject.toml (or TOML file of options) to use instead of the discovered ones, or "
                        "one option as TOML, e.g. --config \"select = ['GM2']\" (repeatable)")
    c.add_argument("--stdin-filename", type=Path, metavar="PATH",
                   help="the name of the file read from standard input (config, per-file-ignores, output)")
    c.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    c.add_argument("--force-exclude", action="store_true", help="apply `exclude` to files named on the command line too")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the cache (.graphmend_cache/)")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: one per CPU)")
    c.add_argument("--no-prefilter", action="store_true",
                   help="parse every file whole, also those without compiled code (slower; for debugging)")
    c.add_argument("--no-skeleton", action="store_true",
                   help="lint the whole of each file, not only the code rules can report on (slower; for debugging)")

    r = sub.add_parser("rule", help="print a rule's documentation")
    r.add_argument("code", nargs="?", help="a code, name or Fixit name: GM201, print-in-compiled-code or "
                   "PrintInCompiledCode (omit with --all)")
    r.add_argument("--all", action="store_true", help="list every rule")

    # `verify` (graphmend_lint/verify/): run a script, join its real graph breaks with our findings
    v = sub.add_parser("verify", help="run a script under torch.compile and match its real graph breaks")
    v.add_argument("--compare-fix", action="store_true", help="run it again on a fixed temporary copy")
    v.add_argument("--unsafe-fixes", action="store_true", help="with --compare-fix, apply unsafe fixes too")
    v.add_argument("--fix-packages", action="store_true",
                   help="with --compare-fix, also fix copies of the installed packages that hold findings")
    v.add_argument("--output-format", choices=["text", "json"], default="text", help="report format (default: text)")
    v.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE", help="run a module (as python -m)")
    v.add_argument("script", nargs="?", help="the script to run; what follows it goes to the script")
    v.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    sub.add_parser("server", help="run the language server (LSP on stdin/stdout; needs the [lsp] extra)",
                   description="A language server for editors: diagnostics and quick fixes. "
                               "Install with `pip install 'graphmend-lint[lsp]'`.")
    return p


def _discovery(args: argparse.Namespace) -> settings.Discovery:
    fix_edits = args.output_format == "json"  # JSON gives each fix's edits
    config, overrides = None, {}
    for value in args.config:
        path = Path(value)
        if path.is_file():
            if config is not None:
                raise settings.ConfigError(f"--config names two files ({config}, {path}); give one")
            config = path
        elif "=" in value:
            table = settings.parse_override(value)
            try:  # unknown keys, bad values and unknown rule codes are errors before any file is read
                settings.check_selectors(settings.from_table(table), _rule_codes())
            except settings.ConfigError as e:
                raise settings.ConfigError(f"--config {value!r}: {str(e).replace('[tool.graphmend] ', '')}") from None
            overrides.update(table)
        else:
            raise settings.ConfigError(f"--config {value}: no such configuration file")

    def adjust(s: settings.Settings) -> settings.Settings:
        if args.select is not None:
            s = replace(s, select=args.select)
        if args.extend_select:
            s = replace(s, select=s.select + args.extend_select)
        if args.ignore is not None:
            s = replace(s, ignore=s.ignore + args.ignore)
        if args.unsafe_fixes is not None:
            s = replace(s, unsafe_fixes=args.unsafe_fixes)
        if args.compiled_scope:
            s = replace(s, compiled_scope=args.compiled_scope)
        if args.fix_generated:
            s = replace(s, fix_generated=True)
        if args.no_prefilter or args.no_skeleton:  # --no-prefilter turns the skeleton off too
            s = replace(s, prefilter=not args.no_prefilter, skeleton=False)
        return replace(s, fix_edits=fix_edits) if fix_edits else s

    return settings.Discovery(config, overrides, adjust, rules=_rule_codes())


def _stdin(args: argparse.Namespace, found: settings.Discovery) -> int:
    """`check -` / `--stdin-filename`: lint standard input; with --fix the fixed code goes to stdout."""
    name = args.stdin_filename or Path("-")
    s = found.for_path(name) if args.stdin_filename else found.for_dir(Path.cwd())
    source = sys.stdin.buffer.read()
    fixing = args.fix or args.fix_only
    excluded = args.force_exclude and args.stdin_filename is not None and not list(
        discover([name], found.for_dir, force_exclude=True))
    if excluded:
        if fixing:
            sys.stdout.buffer.write(source)
        return EXIT_CLEAN
    ext = parallel.facts_of(name, s, not args.no_cache) if args.stdin_filename else None  # its project on disk
    out = runner.check_source(name, source, s, fix=fixing or args.diff, diff=args.diff, write=False, ext=ext)
    if out.error:
        if fixing:
            sys.stdout.buffer.write(source)  # an editor replaces the buffer by what we print
        print(f"error: {name}: {out.error}", file=sys.stderr)
        return EXIT_ERROR
    rows = [(name, f) for f in out.findings]
    if args.diff:
        sys.stdout.write(out.diff)
        _would_fix(out.fixed, args)
        return EXIT_FINDINGS if out.diff and not args.exit_zero else EXIT_CLEAN
    if fixing:
        sys.stdout.buffer.write(out.fixed_source if out.fixed_source is not None else source)
        if rows and not args.fix_only:
            print(output.text(rows, s.unsafe_fixes), file=sys.stderr)
        return EXIT_FINDINGS if rows and not (args.exit_zero or args.fix_only) else EXIT_CLEAN
    _report(rows, [], s.unsafe_fixes, 0, args, sources={name: source})
    return EXIT_FINDINGS if rows and not args.exit_zero else EXIT_CLEAN


def _would_fix(n: int, args: argparse.Namespace) -> None:
    if not args.quiet:
        print(f"\nWould fix {n} error{'s' if n != 1 else ''}." if n else "\nNo errors would be fixed.",
              file=sys.stderr)


def _report(rows: list, errors: list, unsafe: bool, fixed: int, args: argparse.Namespace,
            sources: dict | None = None, listed: bool = False) -> None:
    if args.statistics:
        if rows:
            print(output.statistics(rows, unsafe))
        return
    text = output.FORMATS[args.output_format](rows, unsafe, errors=errors, sources=sources)
    if text:
        print(text)
    if args.output_format in ("text", "full") and not args.quiet:
        line = output.summary(rows, unsafe, fixed, errors=bool(errors), listed=listed)
        if line:
            print(line)


def _show_fixes(fixed_by_file: list[tuple[Path, dict]]) -> str:
    from .rules import ALL_RULES

    names = {r.CODE: r.NAME for r in ALL_RULES}
    total = sum(sum(c.values()) for _, c in fixed_by_file)
    if not total:
        return "No errors fixed."
    out = [f"Fixed {total} error{'s' if total != 1 else ''}:"]
    for path, codes in fixed_by_file:
        if codes:
            out.append(f"- {path}:")
            out += [f"    {n} × {c} ({names.get(c, '')})" for c, n in sorted(codes.items())]
    return "\n".join(out)


def cmd_check(args: argparse.Namespace) -> int:
    found_settings = _discovery(args)
    paths = args.paths if args.paths else ([Path("-")] if args.stdin_filename else [Path(".")])
    if Path("-") in paths:
        if len(paths) > 1:
            raise settings.ConfigError("`-` (standard input) cannot be checked together with paths")
        return _stdin(args, found_settings)
    fix = args.fix or args.fix_only
    missing = [p for p in paths if not p.exists() and not p.is_symlink()]
    paths = [p for p in paths if p not in missing]
    errors = [(p, "no such file or directory") for p in missing]
    files = list(discover(paths, found_settings.for_dir, args.force_exclude))
    if not files and not missing:  # as ruff: say so, rather than "All checks passed!" on nothing
        print("warning: No Python files found under the given path(s)", file=sys.stderr)
    groups: dict[tuple, list[Path]] = {}
    for f in files:  # files of one project (and the same per-file-ignores) are checked together
        s = found_settings.for_path(f)
        groups.setdefault((s, s.root), [s]).append(f)
    rows, fixed, diffs, fixed_by_file = [], 0, [], []
    unsafe = False
    for s, *group in groups.values():
        unsafe |= s.unsafe_fixes
        outcomes = parallel.check_files(group, s, fix=fix, diff=args.diff, jobs=args.jobs,
                                        use_cache=not args.no_cache)
        for path, res in zip(group, outcomes):
            if res.error:
                errors.append((path, res.error))
                continue
            fixed += res.fixed
            if res.fixed and not args.diff:
                fixed_by_file.append((path, getattr(res, "fixed_codes", {}) or {}))
            rows.extend((path, f) for f in res.findings)
            if res.diff:
                diffs.append((str(path), res.diff))
    if not groups:
        unsafe = found_settings.for_dir(Path.cwd()).unsafe_fixes
    rows.sort(key=lambda r: (str(r[0]), r[1].sort_key))
    errors.sort(key=lambda e: str(e[0]))
    for path, message in errors:
        print(f"error: {path}: {message}", file=sys.stderr)
    if args.diff:
        sys.stdout.write("".join(d for _, d in sorted(diffs)))
        _would_fix(fixed, args)
        return EXIT_ERROR if errors else (EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN)
    if args.show_fixes and fix:
        print(_show_fixes(fixed_by_file), file=sys.stderr if args.output_format not in ("text", "full") else sys.stdout)
    if args.fix_only:
        if not args.quiet and not args.show_fixes:
            print(f"Fixed {fixed} error{'s' if fixed != 1 else ''}." if fixed else "No errors fixed.")
        return EXIT_ERROR if errors else EXIT_CLEAN
    _report(rows, errors, unsafe, fixed, args, listed=bool(args.show_fixes))
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if rows and not args.exit_zero else EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
    from . import rules as rules_pkg

    if args.all or not args.code:
        for r in rules_pkg.ALL_RULES:
            print(f"{r.CODE}\t{r.NAME}\tfix: {r.FIX}")
        return EXIT_CLEAN
    rule = rules_pkg.by_code(args.code)
    if rule is None:
        print(f"error: unknown rule {args.code!r}", file=sys.stderr)
        return EXIT_ERROR
    print(docs.render(rule))
    return EXIT_CLEAN


def cmd_server(args: argparse.Namespace) -> int:
    try:
        import lsprotocol.types  # noqa: F401 - imported here, so a missing extra is a message, not a traceback
        import pygls.lsp.server  # noqa: F401

        from . import server
    except ImportError as e:
        print(f"error: the language server needs the [lsp] extra (pygls, lsprotocol): "
              f"pip install 'graphmend-lint[lsp]' ({e})", file=sys.stderr)
        return EXIT_ERROR
    server.serve()
    return EXIT_CLEAN


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except settings.ConfigError as e:  # a bad --select/--ignore value
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    try:
        if args.command == "rule":
            return cmd_rule(args)
        if args.command == "verify":
            from . import verify
            return verify.command(args, settings.env_overrides(settings.load(Path.cwd())))
        if args.command == "server":
            return cmd_server(args)
        return cmd_check(args)
    except settings.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:  # pragma: no cover
        return 130
    except BrokenPipeError:  # `graphmend-lint check . | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # Python's advice: so the flush at exit does not fail again
        return EXIT_FINDINGS


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

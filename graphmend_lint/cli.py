"""`graphmend-lint`: a ruff-style command line over the graphmend rules."""
from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from . import __version__, docs, engine, output, parallel, prefilter, settings, skeleton
from . import rules as rules_pkg
from .files import iter_python_files

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(value: str) -> tuple[str, ...]:
    return tuple(c.strip().upper() for c in value.split(",") if c.strip())


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="graphmend-lint", description=__doc__)
    p.add_argument("--version", action="version", version=f"graphmend-lint {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    c = sub.add_parser("check", help="lint files (and fix them with --fix)")
    c.add_argument("paths", nargs="*", type=Path, default=[Path(".")])
    c.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    c.add_argument("--unsafe-fixes", action="store_true", default=None, help="also offer/apply unsafe fixes")
    c.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false")
    c.add_argument("--diff", action="store_true", help="print the fixes as a diff; write nothing")
    c.add_argument("--select", type=_codes, help="codes or prefixes to enable (e.g. GM1,GM201)")
    c.add_argument("--ignore", type=_codes, help="codes or prefixes to disable")
    c.add_argument("--extend-select", type=_codes, default=())
    c.add_argument("--output-format", choices=sorted(output.FORMATS), default="text")
    c.add_argument("--statistics", action="store_true", help="show counts per rule")
    c.add_argument("--exit-zero", action="store_true", help="exit 0 even when findings remain")
    c.add_argument("--compiled-scope", choices=settings.SCOPES)
    c.add_argument("--config", type=Path, help="pyproject.toml to read [tool.graphmend] from")
    c.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    c.add_argument("--force-exclude", action="store_true", help="apply `exclude` to files named on the command line too")
    c.add_argument("--no-cache", action="store_true", help="neither read nor write the cache (.graphmend_cache/)")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: one per CPU)")
    c.add_argument("--no-prefilter", action="store_true",
                   help="parse every file whole, also those without compiled code (slower; for debugging)")
    c.add_argument("--no-skeleton", action="store_true",
                   help="lint the whole of each file, not only the code rules can report on (slower; for debugging)")

    r = sub.add_parser("rule", help="print a rule's documentation")
    r.add_argument("code", nargs="?", help="e.g. GM201 (omit with --all)")
    r.add_argument("--all", action="store_true", help="list every rule")

    # `verify` (graphmend_lint/verify/): run a script, join its real graph breaks with our findings
    v = sub.add_parser("verify", help="run a script under torch.compile and match its real graph breaks")
    v.add_argument("--compare-fix", action="store_true", help="run it again on a fixed temporary copy")
    v.add_argument("--unsafe-fixes", action="store_true", help="with --compare-fix, apply unsafe fixes too")
    v.add_argument("--fix-packages", action="store_true",
                   help="with --compare-fix, also fix copies of the installed packages that hold findings")
    v.add_argument("--output-format", choices=["text", "json"], default="text")
    v.add_argument("-m", dest="module", nargs=argparse.REMAINDER, metavar="MODULE", help="run a module (as python -m)")
    v.add_argument("script", nargs="?", help="the script to run; what follows it goes to the script")
    v.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return p


def _settings(args: argparse.Namespace) -> settings.Settings:
    if args.config is not None:
        s = settings.load(args.config.parent if args.config.name == "pyproject.toml" else args.config)
    else:
        s = settings.load(Path.cwd())
    s = settings.env_overrides(s)  # GRAPHMEND_* variables, as on the Fixit path
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
    return s


def cmd_check(args: argparse.Namespace) -> int:
    s = _settings(args)
    missing = [p for p in args.paths if not p.exists() and not p.is_symlink()]
    paths = [p for p in args.paths if p not in missing]
    errors = [f"{p}: no such file or directory" for p in missing]
    rows, fixed, diffs = [], 0, []
    prefilter.ENABLED = not args.no_prefilter
    skeleton.ENABLED = not (args.no_prefilter or args.no_skeleton)
    found = list(iter_python_files(paths, s.root, s.exclude, args.force_exclude))
    outcomes = parallel.check_files(found, s, fix=args.fix, diff=args.diff, jobs=args.jobs,
                                    use_cache=not args.no_cache)
    for path, res in zip(found, outcomes):
        if res.error:
            errors.append(f"{path}: {res.error}")
            continue
        fixed += res.fixed if not args.diff else 0
        rows.extend((path, f) for f in res.findings)
        if res.diff:
            diffs.append(res.diff)
    rows.sort(key=lambda r: (str(r[0]), r[1].sort_key))
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if args.diff:
        sys.stdout.write("".join(diffs))
        n = sum(1 for _, f in rows if engine.applicable(f, s))
        if not args.quiet and n:
            print(f"\nWould fix {n} error{'s' if n != 1 else ''}.", file=sys.stderr)
        return EXIT_ERROR if errors else (EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN)
    if args.statistics:
        if rows:
            print(output.statistics(rows, s.unsafe_fixes))
    else:
        text = output.FORMATS[args.output_format](rows, s.unsafe_fixes)
        if text:
            print(text)
        if args.output_format == "text" and not args.quiet:
            print(output.summary(rows, s.unsafe_fixes, fixed))
    if errors:
        return EXIT_ERROR
    return EXIT_FINDINGS if rows and not args.exit_zero else EXIT_CLEAN


def cmd_rule(args: argparse.Namespace) -> int:
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "rule":
            return cmd_rule(args)
        if args.command == "verify":
            from . import verify
            return verify.command(args, settings.env_overrides(settings.load(Path.cwd())))
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

"""`graphmend-lint verify`: the real graph breaks of the user's own workload, joined with our findings.

The user's script runs in a child process (child.py) with a recorder of Dynamo's `graph_breaks` log
(recorder.py); the parent (run.py) lints the files that ran and joins each runtime break site with
the finding on its statement (match.py); `--compare-fix` runs it again on a fixed copy (fixcopy.py).
Nothing here imports torch: only the child does.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile

EXIT_MATCHED, EXIT_UNMATCHED, EXIT_ERROR = 0, 1, 2


def command(args: argparse.Namespace, s) -> int:
    """Run `verify` with parsed arguments and Settings `s`; returns the exit code."""
    from dataclasses import replace

    from . import fixcopy, report, run

    module = args.module[0] if args.module else None
    target = run.Target(None if module else args.script, module,
                        args.module[1:] if module else list(args.args))
    if module is None and (not args.script or not os.path.isfile(args.script)):
        print(f"error: no such script: {args.script!r}" if args.script else "error: give a SCRIPT or -m MODULE",
              file=sys.stderr)
        return EXIT_ERROR
    if importlib.util.find_spec("torch") is None:
        print("error: `graphmend-lint verify` needs torch: it runs your script under torch.compile "
              f"(no torch in {sys.executable})", file=sys.stderr)
        return EXIT_ERROR
    s = replace(s, unsafe_fixes=bool(args.unsafe_fixes))
    before = run.run_child(target)
    if before.error:
        print(f"error: {before.error}", file=sys.stderr)
        return EXIT_ERROR
    v = run.verdict(before, s)
    error = None
    if before.status != 0:
        error = f"the script exited with status {before.status}; its stderr ends with:\n{report.tail(before.stderr)}"
    fixed = after = None
    if args.compare_fix and error is None:
        with tempfile.TemporaryDirectory(prefix="graphmend-verify-fix-") as tmp:
            fixed = fixcopy.compare(target, v.findings, s, tmp, packages=args.fix_packages)
            after = run.verdict(fixed.run, s)
        if fixed.run.error:
            error = f"on the fixed copy: {fixed.run.error}"
        elif fixed.run.status != before.status:
            error = (f"the fixed copy exited with status {fixed.run.status} (the original: {before.status}); "
                     f"its stderr ends with:\n{report.tail(fixed.run.stderr)}")
    if args.output_format == "json":
        print(report.as_json(v, s, fixed, after, error))
    else:
        print(report.as_text(v, s, fixed, after))
    if error:
        print(f"error: {error}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_MATCHED if all(site.findings for site in v.sites) else EXIT_UNMATCHED

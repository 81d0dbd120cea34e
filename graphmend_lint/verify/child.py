"""The child process of `graphmend-lint verify`: run the user's script (or module) under the recorder.

    python -c "<bootstrap>" OUT.json [--watch DIR] (-m MODULE | SCRIPT) [ARGS...]

The bootstrap (run.py) loads this file and recorder.py by path, so that the user's process imports
neither graphmend_lint nor its dependencies.

The script runs as `python SCRIPT ARGS` would run it (`__main__`, sys.argv, sys.path[0]); `-m` as
`python -m MODULE ARGS` (sys.path[0] is the working directory). What Dynamo logged goes to OUT.json,
with the exit status and the files of loaded modules under each --watch DIR.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import traceback


def _status(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
    return 1


def _loaded_under(dirs: list[str]) -> list[str]:
    files = {os.path.realpath(f) for m in list(sys.modules.values()) if isinstance(f := getattr(m, "__file__", None), str)}
    return sorted(f for f in files if any(f.startswith(d.rstrip(os.sep) + os.sep) for d in dirs))


def main(argv: list[str], recorder_class) -> int:
    out, argv = argv[0], argv[1:]
    watch = []
    while argv[:1] == ["--watch"]:
        watch.append(os.path.realpath(argv[1]))
        argv = argv[2:]
    module = argv[1] if argv[0] == "-m" else None
    target, args = (argv[1], argv[2:]) if module else (argv[0], argv[1:])
    sys.dont_write_bytecode = True  # leave no __pycache__ in the user's folders
    result: dict = {"status": None, "error": None}
    try:
        rec = recorder_class(traced=True).start()
    except ImportError as e:  # no torch in this interpreter
        result["error"] = f"cannot import torch: {e}"
        _write(out, result)
        return 2
    status = 0
    try:
        if module:
            sys.argv = [module, *args]  # runpy puts the module's path in argv[0]
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            sys.argv = [target, *args]
            sys.path[0] = os.path.dirname(os.path.realpath(target))
            runpy.run_path(target, run_name="__main__")
    except SystemExit as e:
        status = _status(e.code)
    except BaseException:  # the script's own error: shown as Python would show it
        traceback.print_exc()
        status = 1
    finally:
        sys.stdout.flush()
        rec.stop()
        result.update(rec.to_json(), status=status, loaded=_loaded_under(watch))
        _write(out, result)
    return status


def _write(path: str, data: dict) -> None:
    with open(path, "w") as f:
        json.dump(data, f)

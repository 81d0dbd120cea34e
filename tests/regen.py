"""Regenerate every generated expectation: fixture findings/fixes/patches and rules/ pages.

    python tests/regen.py

Run it after an intended change and review the diff; the tests fail on any difference.
"""
from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fixture_io import expected_outputs, fixture_cases  # noqa: E402

from graphmend_lint import docs  # noqa: E402


def main() -> int:
    changed = []
    for case in fixture_cases():
        expected = expected_outputs(case)
        for old in case.parent.glob(case.stem + ".*"):
            if old != case and old.name not in expected:
                old.unlink()
                changed.append(old)
        for name, text in expected.items():
            path = case.parent / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
                changed.append(path)
    changed += docs.write_pages(ROOT / "rules")
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    if docs.with_readme_table(text) != text:
        readme.write_text(docs.with_readme_table(text), encoding="utf-8")
        changed.append(readme)
    for p in changed:
        print(f"updated {p.relative_to(ROOT)}")
    print(f"{len(changed)} file(s) updated")
    return 0


if __name__ == "__main__":
    sys.exit(main())

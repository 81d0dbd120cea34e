from pathlib import Path

from graphmend_lint import docs
from graphmend_lint.rules import ALL_RULES, by_code, fixit_name
from graphmend_lint.rules.former_names import FORMER_NAMES

RULES_DIR = Path(__file__).resolve().parents[1] / "rules"
SECTIONS = ("## What it does", "## Why it breaks the graph", "## Example", "## Fix safety", "## When no fix is offered")


def test_rule_pages_are_current():
    pages = docs.pages()
    on_disk = {p.name for p in RULES_DIR.glob("*.md")}
    assert on_disk == set(pages), "run `python tests/regen.py`"
    for name, text in pages.items():
        assert (RULES_DIR / name).read_text(encoding="utf-8") == text, f"rules/{name} is stale: run `python tests/regen.py`"


def test_rule_docs_have_ruff_sections():
    for rule in ALL_RULES:
        page = docs.render(rule)
        for section in SECTIONS:
            assert section in page, f"{rule.CODE} lacks {section!r}"


def test_codes_are_stable_and_grouped():
    codes = [r.CODE for r in ALL_RULES]
    assert len(codes) == len(set(codes))
    for r in ALL_RULES:
        assert r.CODE[:3] in ("GM1", "GM2", "GM3", "GM9") and len(r.CODE) == 5, r.CODE
        assert r.FIX in docs.SAFETY_WORDS
        assert r.NAME and r.NAME == r.NAME.lower() and " " not in r.NAME


def test_one_name_per_rule():
    """File gmNNN_<words>.py, NAME <words> in kebab case, class <Words>Rule: the same words."""
    for r in ALL_RULES:
        words = r.NAME.split("-")
        assert all(w.isalnum() and w == w.lower() for w in words), r.NAME
        module = r.__module__.rsplit(".", 1)[1]
        assert module == f"{r.CODE.lower()}_{'_'.join(words)}", (r.CODE, module, r.NAME)
        assert r.__name__ == "".join(w.capitalize() for w in words) + "Rule", (r.CODE, r.__name__, r.NAME)
        assert fixit_name(r) == r.__name__.removesuffix("Rule")
        for name in (r.CODE, r.NAME, fixit_name(r), r.__name__):
            assert by_code(name) is r, name


def test_former_names_name_no_current_rule():
    current = {n.lower() for r in ALL_RULES for n in (r.CODE, r.NAME, fixit_name(r))}
    assert set(FORMER_NAMES) <= {r.CODE for r in ALL_RULES}
    for code, names in FORMER_NAMES.items():
        for name in names:
            assert name.lower() not in current, name
            assert by_code(name).CODE == code


def test_readme_rule_table_is_current():
    readme = (RULES_DIR.parent / "README.md").read_text(encoding="utf-8")
    assert docs.with_readme_table(readme) == readme, "run `python tests/regen.py`"


def test_ci_runs_the_readme_test_command():
    ci = (RULES_DIR.parent / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()[-1]
    readme = (RULES_DIR.parent / "README.md").read_text(encoding="utf-8")
    assert ci in readme.splitlines()

"""The documentation's examples stay true: the user guide's runnable examples run and
are checked, and the README says what the docs and CI say.

In docs/*.md a Python block preceded by `<!-- test: run -->` is run; the blocks of one
page run in order in one namespace, as a reader would type them. Hidden code beside
them, in `<!-- test: setup ... -->` (before a block: the names it takes as given) and
`<!-- test: check ... -->` (after: its results against numpy), runs in the same
namespace. A block that needs a package that is not installed skips its page.
"""
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

# a hidden piece (setup or check), or a run marker followed by its Python block
_PIECE = re.compile(
    r"<!-- test: (?P<kind>setup|check)\n(?P<hidden>.*?)\n-->"
    r"|<!-- test: run -->\n```python\n(?P<code>.*?)\n```",
    re.S,
)


def _pieces(text):
    return [(m["kind"] or "run", m["hidden"] if m["kind"] else m["code"])
            for m in _PIECE.finditer(text)]


def _pages():
    return sorted(p for p in DOCS.rglob("*.md") if "<!-- test:" in p.read_text(encoding="utf-8"))


def test_markers_are_well_formed():
    pages = _pages()
    assert len(pages) >= 5, pages
    for page in pages:
        text = page.read_text(encoding="utf-8")
        pieces = _pieces(text)
        # every marker was read: a marker not followed by a python block is a mistake
        assert len(pieces) == text.count("<!-- test:"), page
        assert any(kind == "run" for kind, _ in pieces), page


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(DOCS)))
def test_guide_examples_run(page, capsys):
    cukit = pytest.importorskip("cukit")
    if cukit.device_count() == 0:
        pytest.skip("no device and no emulator: CUKIT_BACKEND=gpu without a GPU")
    namespace = {"__name__": "__docs__"}
    for n, (kind, code) in enumerate(_pieces(page.read_text(encoding="utf-8"))):
        where = f"{page.relative_to(ROOT)}, piece {n} ({kind})"
        try:
            exec(compile(code, where, "exec"), namespace)
        except ModuleNotFoundError as e:
            pytest.skip(f"{where} needs {e.name}, not installed")
        except Exception as e:
            raise AssertionError(f"{where} failed: {type(e).__name__}: {e}\n{code}") from e
    cukit.synchronize()


def _python_blocks(text):
    return re.findall(r"```python\n(.*?)\n```", text, re.S)


def test_readme_example_is_the_getting_started_one():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    started = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    example = _python_blocks(readme)
    assert len(example) == 1, "the README has one Python example"
    assert 10 <= len(example[0].splitlines()) <= 25
    assert example[0] in _python_blocks(started)
    # and that one is run above (it is marked runnable)
    assert example[0] in [c for k, c in _pieces(started) if k == "run"]


def test_readme_commands_are_the_ones_ci_and_the_docs_use():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300
    install_and_run = "pip install '.[nvrtc]' && python examples/saxpy.py"
    install_and_test = "pip install '.[test]' && python -m pytest"
    for text in (readme, (DOCS / "getting-started.md").read_text(encoding="utf-8")):
        assert install_and_run in text and install_and_test in text
    assert (ROOT / "examples" / "saxpy.py").exists()
    ci = ROOT / ".ci" / "run"
    if ci.exists():  # CI runs exactly the README's install-and-test command
        assert install_and_test in ci.read_text(encoding="utf-8")


def test_readme_links_point_at_pages_that_exist():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert len(links) >= 10
    for link in links:
        assert (ROOT / link).exists(), link

"""The examples run and check themselves on the GPU."""
import pathlib
import runpy

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path):
    runpy.run_path(str(path), run_name="__main__")

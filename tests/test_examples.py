"""The examples, and the script the GPU sanitizer runs, run and check themselves on the GPU."""
import pathlib
import runpy

import pytest

pytestmark = pytest.mark.gpu

EXAMPLES = sorted((pathlib.Path(__file__).parent.parent / "examples").glob("*.py"))


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs(path):
    runpy.run_path(str(path), run_name="__main__")


def test_the_sanitizer_script_covers_every_family_and_agrees_with_numpy(capsys):
    # tools/generated_kernels.py is what compute-sanitizer's racecheck and synccheck run
    # (tools/gpu_sanitize.sh): it must keep passing, or those runs check nothing
    tool = runpy.run_path(str(pathlib.Path(__file__).parent.parent / "tools" / "generated_kernels.py"))
    assert tool["main"]([]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-1] == "every family agrees"
    for family in ("add", "sum, all", "sum, axis 0", "cumsum, 1-D", "InclusiveScanKernel",
                   "numpy's Philox", "strided copy"):
        assert any(line.startswith("ok") and family in line for line in lines), family

"""The architecture's guard: csrc/ is in layer folders, and no #include or call runs up.

Folders are layers, bottom to top (LAYERS). A file may include its own folder's
headers and the public header of its own layer or a lower one (PUBLIC); never a
higher layer's header, nor another folder's private header. A call to a cukit_
function defined in a higher layer is refused too (a lower layer reaches up only
through a hook the higher layer registers at init: cukit_state.hooks).
"""
import pathlib
import re

import pytest

CSRC = pathlib.Path(__file__).resolve().parent.parent / "csrc"

# Bottom to top; folders in one tuple share a rank (they may include each other's
# public headers, never each other's private ones).
LAYERS = [
    ("common",),
    ("driver",),
    ("emulator",),
    ("runtime",),
    ("memory",),
    ("compile",),
    ("launch",),
    ("array",),
    ("compute",),
    ("linalg", "sort"),
    ("nccl",),
]
RANK = {folder: rank for rank, group in enumerate(LAYERS) for folder in group}
TOP_RANK = len(LAYERS)  # csrc/cukitmodule.c: the module's init, above every layer
PUBLIC = {f"{folder}/{folder}.h" for group in LAYERS for folder in group}
MAX_HEADER_LINES = 300
MAX_SOURCE_LINES = 850

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
DEFINITION = re.compile(r"^(cukit_\w+)\s*\(", re.M)
CALL = re.compile(r"\b(cukit_\w+)\s*\(")


def rank_of(path):
    rel = path.relative_to(CSRC)
    if len(rel.parts) == 1:
        return TOP_RANK
    return RANK[rel.parts[0]]


def sources():
    return sorted(p for p in CSRC.rglob("*") if p.suffix in (".c", ".h"))


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group().count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def test_every_folder_is_a_layer():
    folders = {p.name for p in CSRC.iterdir() if p.is_dir()}
    unknown = folders - set(RANK)
    assert not unknown, f"csrc/ folders not placed in LAYERS (tests/test_layers.py): {unknown}"
    loose = [p.name for p in CSRC.iterdir() if p.is_file() and p.name != "cukitmodule.c"]
    assert not loose, f"files directly in csrc/ besides cukitmodule.c: {loose}; put them in a layer"


def test_no_include_runs_up_or_into_a_private_header():
    bad = []
    for path in sources():
        me = rank_of(path)
        folder = path.relative_to(CSRC).parts[0] if path.parent != CSRC else None
        for lineno, line in enumerate(path.read_text().splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            where = f"{path.relative_to(CSRC)}:{lineno}: #include \"{target}\""
            if "/" not in target:
                bad.append(f"{where}: write includes from csrc/ (\"layer/file.h\")")
                continue
            if not (CSRC / target).exists():
                bad.append(f"{where}: no such header under csrc/")
                continue
            theirs = target.split("/")[0]
            if RANK[theirs] > me:
                bad.append(f"{where}: {theirs}/ is a higher layer than "
                           f"{folder or 'cukitmodule.c'}; register a hook instead")
            elif theirs != folder and target not in PUBLIC:
                bad.append(f"{where}: a private header of {theirs}/; include {theirs}/{theirs}.h")
    assert not bad, "\n".join(bad)


# Every function a file exports (not static), whatever its prefix (cukit_, and the
# emulator's emu_/ptx_, compute's ck_): its return type on the line above its name.
EXPORTED = re.compile(r"^(?!static\b)[A-Za-z_][\w \*]*\n([a-z_]\w*)\s*\(", re.M)
ANY_CALL = re.compile(r"\b([a-z_]\w*)\s*\(")


def exported():
    defined = {}
    for path in CSRC.rglob("*.c"):
        for name in EXPORTED.findall(strip_comments(path.read_text())):
            defined[name] = path
    return defined


def test_exported_names_carry_their_layer_prefix():
    """An exported function is named so that its home can be told from the name."""
    allowed = {"emulator": ("emu_", "ptx_", "cukit_"), "compute": ("ck_", "cukit_")}
    bad = []
    for name, path in sorted(exported().items()):
        folder = path.relative_to(CSRC).parts[0] if len(path.relative_to(CSRC).parts) > 1 else ""
        if path.name == "worker_main.c" or path.parent == CSRC:
            continue  # the sandbox's own program; the module's init
        if not name.startswith(allowed.get(folder, ("cukit_",))):
            bad.append(f"{path.relative_to(CSRC)}: {name} is exported without its prefix "
                       f"({' or '.join(allowed.get(folder, ('cukit_',)))}); make it static or "
                       f"rename it")
    assert not bad, "\n".join(bad)


def test_no_call_runs_up():
    defined = {}
    for path in CSRC.rglob("*.c"):
        for name in DEFINITION.findall(path.read_text()):
            defined[name] = path
    defined.update(exported())  # every prefix, not only cukit_
    bad = []
    for path in sorted(CSRC.rglob("*.c")):
        me = rank_of(path)
        text = strip_comments(path.read_text())
        for lineno, line in enumerate(text.splitlines(), 1):
            for name in set(CALL.findall(line)) | set(ANY_CALL.findall(line)):
                home = defined.get(name)
                if home is not None and rank_of(home) > me:
                    bad.append(f"{path.relative_to(CSRC)}:{lineno}: calls {name}, defined in the "
                               f"higher layer {home.relative_to(CSRC)}")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("path", sources(), ids=lambda p: str(p.relative_to(CSRC)))
def test_file_opens_with_its_purpose_and_stays_small(path):
    text = path.read_text()
    first = text.splitlines()[0] if text else ""
    assert first.startswith(f"/* {path.name} - "), \
        f"{path.relative_to(CSRC)} must open with its one-line purpose: /* {path.name} - ... */"
    limit = MAX_HEADER_LINES if path.suffix == ".h" else MAX_SOURCE_LINES
    lines = text.count("\n")
    assert lines <= limit, f"{path.relative_to(CSRC)} has {lines} lines; split it (limit {limit})"


def test_the_guard_catches_an_upward_include(tmp_path, monkeypatch):
    """The checks above would fail on a runtime/ file that includes array/array.h."""
    fake = tmp_path / "csrc"
    (fake / "runtime").mkdir(parents=True)
    (fake / "array").mkdir()
    (fake / "array" / "array.h").write_text("/* array.h - x */\n")
    (fake / "runtime" / "bad.c").write_text('/* bad.c - x */\n#include "array/array.h"\n')
    monkeypatch.setattr(__import__(__name__), "CSRC", fake)
    with pytest.raises(AssertionError, match=r"runtime/bad.c:2: .*array/ is a higher layer"):
        test_no_include_runs_up_or_into_a_private_header()


# ------------------------------------------------------------------ hooks

DOCS = CSRC.parent / "docs" / "architecture.md"
HOOK_FIELD = re.compile(r"\(\s*\*\s*(\w+)\s*\)\s*\(")
REGISTRATION = re.compile(r"\bhooks\.(\w+)\s*=[^=]")
# C that imports cukit's own Python package to get its work done: each is a hook in
# disguise. None is left (issue 25 took compute/engine.c's off); a new one fails the
# test below.
PYTHON_CALLS_TO_REMOVE = set()


def hook_fields():
    text = (CSRC / "common" / "common.h").read_text()
    body = text[text.index("typedef struct {", text.index("hooks")):text.index("} cukit_hooks;")]
    return set(HOOK_FIELD.findall(strip_comments(body)))


def documented_hooks():
    """hook -> the file the architecture page says registers it."""
    out = {}
    for line in DOCS.read_text().splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*`([\w/.]+)`", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_every_hook_is_documented_where_it_is_registered():
    """Each field of cukit_hooks is in docs/architecture.md's hook table with the file
    that registers it (and the reason it points up); none is registered elsewhere."""
    docs = documented_hooks()
    fields = hook_fields()
    assert fields, "no hook fields found in common.h"
    missing = sorted(f for f in fields if f not in docs)
    assert not missing, f"hooks not in docs/architecture.md's table: {missing}"
    bad = []
    for path in sorted(CSRC.rglob("*.c")):
        rel = str(path.relative_to(CSRC))
        for name in REGISTRATION.findall(strip_comments(path.read_text())):
            if name not in fields:
                bad.append(f"{rel}: registers hooks.{name}, which cukit_hooks does not have")
            elif docs.get(name) != rel:
                bad.append(f"{rel}: registers hooks.{name}; the architecture page says "
                           f"{docs.get(name)} does")
    assert not bad, "\n".join(bad)


def test_no_new_call_from_c_into_cukits_python():
    found = set()
    for path in sorted(CSRC.rglob("*.c")):
        if re.search(r'PyImport_Import\w*\(\s*"cukit', path.read_text()):
            found.add(str(path.relative_to(CSRC)))
    new = found - PYTHON_CALLS_TO_REMOVE
    assert not new, f"C imports cukit's own Python to do its work: {sorted(new)}; register a " \
                    "hook or call the C function instead"
    gone = PYTHON_CALLS_TO_REMOVE - found
    assert not gone, f"no longer calls into Python: take {sorted(gone)} off the list"

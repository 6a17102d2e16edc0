"""What the pages name exists: every environment variable, hrx call, C
function, hrx-bench command and option, h200.sh stage, make target and file
named in docs/*.md, README.md, bench/README.md and the results pages
(bench/results/*/README.md) is one the code has. And the other way round,
the lists that claim to be complete are: every variable hrx reads is in
docs/environment.md, every public name of the Python API is in docs/api.md's
table, every h200.sh stage is in bench/README.md's stage table, every file
of csrc/core/ is in README.md's layout, and every call the fault wrapper can
fail is in docs/reliability.md. (tests/test_doc_links.py checks the links.)

Names are read from code (inline code spans and fenced blocks), where the
pages put them; environment variables and qualified calls (`Device.open`)
also from prose.
"""
from __future__ import annotations

import re
import shlex
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set, Tuple

import pytest

import hrx
import hrx.bench
import hrx.fabric
from hrx.bench.cli import build_parser

pytestmark = pytest.mark.python_only

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^\s*(```|~~~)")


def tracked(pattern: str) -> List[str]:
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", pattern],
                            capture_output=True, text=True, check=False)
    if listed.returncode != 0:
        pytest.skip("not a git checkout")
    return sorted(name for name in listed.stdout.split("\0") if name)


def pages() -> List[Path]:
    names = tracked("docs/*.md") + ["README.md", "bench/README.md"] + \
        tracked("bench/results/*/README.md")
    return [ROOT / name for name in names]


# ------------------------------------------------------------ reading pages

def code_of(text: str) -> List[str]:
    """The page's code: each fenced block's lines joined (a trailing
    backslash continues a command) and each inline code span, except the
    cells of a table column headed "makes" (what a command writes, not
    files of the tree)."""
    found: List[str] = []
    fenced, block = False, []
    makes_column: Optional[int] = None
    for line in text.splitlines():
        if FENCE.match(line):
            if fenced:
                found += re.sub(r"\s*\\\n\s*", " ", "\n".join(block)).splitlines()
                block = []
            fenced = not fenced
            continue
        if fenced:
            block.append(line)
            continue
        cells = line.strip().strip("|").split("|") if line.lstrip().startswith("|") else None
        if cells is not None:
            headers = [cell.strip() for cell in cells]
            if "makes" in headers:
                makes_column = headers.index("makes")
            elif makes_column is not None and makes_column < len(cells):
                line = "|".join(cell for i, cell in enumerate(cells) if i != makes_column)
        else:
            makes_column = None
        found += re.findall(r"`([^`]+)`", line)
    return found


def prose_of(text: str) -> str:
    """The page outside fenced blocks (inline code kept)."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------- what the code has

def _read(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8", errors="replace")


@lru_cache(maxsize=None)
def code_text() -> str:
    """Every tracked source file (C, Python, shell, make) but this one,
    whose examples of stale names are no names of the code."""
    names = [name for name in tracked("*")
             if re.search(r"\.(c|h|py|sh|mk|cfg|toml)$|(^|/)Makefile$", name)
             and ROOT / name != Path(__file__).resolve()]
    return "\n".join(_read(name) for name in names)


@lru_cache(maxsize=None)
def variables_read() -> Set[str]:
    """Environment variable names the code knows by name: string literals
    in C and Python, $NAME in shell and make."""
    text = code_text()
    return set(re.findall(r"[\"']([A-Z][A-Z0-9_]*)[\"']", text)) | \
        set(re.findall(r"\$\{?([A-Z][A-Z0-9_]*)", text))


@lru_cache(maxsize=None)
def c_identifiers() -> Set[str]:
    names = [name for name in tracked("csrc/*") + tracked("bench/baselines/*")
             + tracked("tests/c/*") if re.search(r"\.[ch]$", name)]
    return set(re.findall(r"\b[A-Za-z_]\w*\b", "\n".join(_read(n) for n in names)))


@lru_cache(maxsize=None)
def code_words() -> Set[str]:
    """Every word of the code: identifiers, keys of result lines."""
    return set(re.findall(r"\b[A-Za-z_]\w*\b", code_text()))


PRODUCT_VARIABLE_SOURCES = ("csrc/", "hrx/", "setup.py")
NOT_VARIABLES = {
    "HRX_HIP_ABSENT": "the hip symbol table's name for an entry a runtime lacks",
}
"""String literals of the product code that look like variable names."""


def product_variables() -> Set[str]:
    """The environment variables hrx itself reads or sets."""
    names = [name for name in tracked("*") if name.startswith(PRODUCT_VARIABLE_SOURCES)
             and re.search(r"\.(c|h|py)$", name)]
    text = "\n".join(_read(name) for name in names)
    found = set(re.findall(r"\"((?:HRX|CUDA|GPU|HIP|HSA)_[A-Z0-9_]+)\"", text))
    found |= set(re.findall(r"'((?:HRX|CUDA|GPU|HIP|HSA)_[A-Z0-9_]+)'", text))
    return found - set(NOT_VARIABLES)


def h200_stages() -> List[str]:
    match = re.search(r'^STAGES="([^"]*)"', _read("bench/scripts/h200.sh"), re.M)
    return match.group(1).replace("\\\n", " ").split()


def make_targets() -> Set[str]:
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", _read("Makefile"), re.M))


# -------------------------------------------------------------- the checks

PYTHON_OWNERS = {
    "Device": lambda: hrx.Device, "Stream": lambda: hrx.Stream,
    "Buffer": lambda: hrx.Buffer, "Event": lambda: hrx.Event,
    "Readback": lambda: hrx.Readback, "Graph": lambda: hrx.Graph,
    "GraphNode": lambda: hrx.GraphNode, "Completion": lambda: hrx.Completion,
    "Queue": lambda: hrx.fabric.Queue, "Results": lambda: hrx.bench.Results,
}
"""Types a page names by their bare name (`Device.open`)."""

QUALIFIED = re.compile(r"(?<![\w.])((?:hrx(?:\.\w+)+)|(?:%s)\.\w+)" % "|".join(PYTHON_OWNERS))
FILE_SUFFIXES = ("h", "c", "py", "pyi", "md", "so", "jsonl", "txt", "png", "log", "json")


def resolve_python(name: str) -> bool:
    """Whether a dotted name (hrx.bench.sweep, Device.open) resolves."""
    first, *rest = name.split(".")
    if first == "hrx":
        value: object = hrx
        for index, part in enumerate(rest):
            if not hasattr(value, part):
                try:
                    __import__(".".join(["hrx"] + rest[:index + 1]))
                except ImportError:
                    return False
            if not hasattr(value, part):
                return False
            value = getattr(value, part)
        return True
    return hasattr(PYTHON_OWNERS[first](), rest[0])


def python_names(text: str) -> Iterator[str]:
    for name in QUALIFIED.findall(text):
        if name.split(".")[-1] in FILE_SUFFIXES:   # hrx.h, a file
            continue
        yield name


def cli_problems(command: str) -> List[str]:
    """An hrx-bench command line (from `hrx-bench` or `python -m
    hrx.bench` on): its subcommand and options must exist."""
    words = shlex.split(re.split(r"\s#|[|;&>]", command)[0].replace("[", " ").replace("]", " "),
                        posix=True) if command else []
    if not words:
        return []
    parser = build_parser()
    subcommands = parser.parse_args(["table", "x"]).commands
    if words[0].startswith("-"):
        known = {o for action in parser._actions for o in action.option_strings}
        return [f"hrx-bench {w}: no such option" for w in words
                if w.startswith("-") and w.split("=")[0] not in known]
    if not re.fullmatch(r"[a-z]+", words[0]):
        return []
    if words[0] not in subcommands:
        return [f"hrx-bench {words[0]}: no such command"]
    options = {o for action in subcommands[words[0]]._actions for o in action.option_strings}
    return [f"hrx-bench {words[0]} {w}: no such option" for w in words[1:]
            if re.fullmatch(r"--?[a-z][\w-]*(=.*)?", w) and w.split("=")[0] not in options]


PATH = re.compile(r"(?<![\w./$<{-])((?:\.\.?/)*[A-Za-z0-9_][\w.-]*(?:/[\w.-]+)+/?)")
BARE_FILE = re.compile(r"(?<![\w./$<{-])([A-Za-z0-9_][\w-]*(?:\.[\w-]+)*\.(?:py|c|h|md|sh|jsonl|"
                       r"json|txt|png|log|ipynb|toml|mk|pyi))(?![\w/])")
PLACEHOLDER = re.compile(r"^(?:[A-Z]+|path/to/.*|file\.py)$|[<>{}*\[\]]")
"""Names that stand for something (FILE, F.jsonl, path/to/file.py)."""


def _ignored(path: str) -> bool:
    """A build output the tree ignores (build/testing, hrx/_build_info.py)."""
    return subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", path],
                          check=False).returncode == 0


@lru_cache(maxsize=None)
def top_level() -> Set[str]:
    return {name.split("/")[0] for name in tracked("*")} | {".", ".."}


def file_problem(page: Path, name: str) -> Optional[str]:
    stem = Path(name.rstrip("/")).name.split(".")[0]
    if PLACEHOLDER.search(name) or re.match(r"[A-Z][A-Z0-9_]*(?:-|$)", stem) or \
            "://" in name or name.startswith("/"):
        return None
    if "/" in name.rstrip("/") and "." not in Path(name).name and \
            not name.endswith("/") and name.split("/")[0] not in top_level():
        return None   # words with a slash ("copy/fill"), not a path
    if "/" not in name.rstrip("/"):
        if (page.parent / name).exists() or (ROOT / name).exists() or \
                any(Path(t).name == name for t in tracked("*")) or _ignored(name):
            return None
        return f"{name}: no such file in the tree"
    for base in (page.parent, ROOT):
        if (base / name).exists():
            return None
    if _ignored(name):
        return None
    return f"{name}: no such file or directory"


def page_problems(page: Path) -> List[str]:
    text = page.read_text(encoding="utf-8")
    code = code_of(text)
    problems: List[str] = []
    for variable in sorted(set(re.findall(r"(?<![\w])\$?\{?(HRX_[A-Z0-9_]+)", prose_of(text)))):
        if variable not in variables_read() and variable not in c_identifiers():
            problems.append(f"{variable}: no code reads it")
    for name in sorted(set(python_names(prose_of(text)))):
        if not resolve_python(name):
            problems.append(f"{name}: not in the Python API")
    for span in code:
        for name in re.findall(r"(?<![\w.])(hrx_[a-z0-9_]+)\b", span):
            if name not in code_words():
                problems.append(f"{name}: no such name in the code")
        for match in re.finditer(r"(?:hrx-bench|python3? -m hrx\.bench)\b(.*)", span):
            problems += cli_problems(match.group(1).strip())
        for match in re.finditer(r"h200\.sh((?:\s+[a-z][a-z0-9-]*)*)", span):
            problems += [f"h200.sh {stage}: no such stage" for stage in match.group(1).split()
                         if stage not in h200_stages()]
        for match in re.finditer(r"(?<![\w-])make\s+([a-z][\w-]*)(?![\w=-])", span):
            if match.group(1) not in make_targets():
                problems.append(f"make {match.group(1)}: no such target")
        for name in set(PATH.findall(span)) | set(BARE_FILE.findall(span)):
            problem = file_problem(page, name)
            if problem:
                problems.append(problem)
    return sorted(set(problems))


def test_every_name_a_page_gives_exists():
    found = {str(page.relative_to(ROOT)): page_problems(page) for page in pages()}
    assert {page: names for page, names in found.items() if names} == {}


# ------------------------------------------------ the lists that are complete

def test_every_variable_hrx_reads_is_in_the_environment_page():
    page = _read("docs/environment.md")
    missing = sorted(name for name in product_variables() if name not in page)
    assert missing == []


def _api_rows() -> Dict[str, str]:
    rows = {}
    for line in _read("docs/api.md").splitlines():
        match = re.match(r"\|\s*`([\w.]+)`[^|]*\|(.*)\|\s*$", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


API_ROW_OWNERS = {"hrx": lambda: hrx, "Device": lambda: hrx.Device,
                  "Stream": lambda: hrx.Stream, "Buffer": lambda: hrx.Buffer,
                  "Event": lambda: hrx.Event, "Readback": lambda: hrx.Readback,
                  "Graph": lambda: hrx.Graph, "GraphNode": lambda: hrx.GraphNode,
                  "Completion": lambda: hrx.Completion,
                  "Kernel": lambda: hrx.Kernel}
API_DUNDERS = {"__dlpack__", "__dlpack_device__", "__cuda_array_interface__",
               "__cuda_stream__"}
"""Special names of the protocols hrx implements, which the table lists."""


def api_table_problems() -> List[str]:
    rows = _api_rows()
    problems = []
    for owner, get in API_ROW_OWNERS.items():
        if owner not in rows:
            problems.append(f"{owner}: no row in the table")
            continue
        listed = set(re.findall(r"`(\w+)", rows[owner])) - {"buf"} - set(hrx.__all__) \
            if owner != "hrx" else set(re.findall(r"`(\w+)", rows[owner]))
        target = get()
        public = {name for name in dir(target) if not name.startswith("_")} | \
            (API_DUNDERS & set(dir(target)))
        if owner == "hrx":
            public = set(hrx.__all__) - {"__version__"} - {
                name for name in hrx.__all__ if isinstance(getattr(hrx, name), type)
                and issubclass(getattr(hrx, name), hrx.Error)}
        for name in sorted(public - listed):
            problems.append(f"{owner}.{name}: missing from the table")
        for name in sorted(listed - public):
            if not hasattr(target, name):
                problems.append(f"{owner}: lists {name}, which it does not have")
    return problems


def test_the_api_table_lists_every_public_name():
    assert api_table_problems() == []


def test_every_h200_stage_has_a_row_in_the_stage_table():
    table = _read("bench/README.md")
    rows = set(re.findall(r"^\|\s*`([a-z0-9-]+)`\s*\|", table, re.M))
    assert [stage for stage in h200_stages() if stage not in rows] == []


def test_the_readme_layout_names_every_file_of_the_core():
    readme = _read("README.md")
    entry = re.search(r"^csrc/core/\s+(.*?)(?=^\S)", readme, re.M | re.S)
    assert entry, "README.md's layout has no csrc/core/ entry"
    named = set(re.findall(r"[a-z_]+", entry.group(1)))
    stems = {Path(name).stem for name in tracked("csrc/core/*.c")}
    assert sorted(stems - named) == []


def test_every_call_the_fault_wrapper_fails_is_in_the_reliability_page():
    source = _read("csrc/drivers/fault/fault_backend.c")
    array = re.search(r"hrx_fault_op_names\[[^]]*\]\s*=\s*\{(.*?)\};", source, re.S)
    operations = re.findall(r'"(\w+)"', array.group(1))
    assert "copy" in operations and "peer_copy" in operations
    section = _read("docs/reliability.md").split("## Fault injection", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(\w+)`", section))
    assert [op for op in operations if op not in listed] == []


# ----------------------------------------------------- the checks can fail

def test_the_checks_see_stale_names(tmp_path):
    page = tmp_path / "page.md"
    page.write_text(
        "Set `HRX_NO_SUCH_VARIABLE` or HRX_BACKEND.\n"
        "Call `Device._commands_submitted()` or `Device.open()`, "
        "`hrx.fabric.Queue.open` and `hrx.bench.nothing`.\n"
        "`hrx-bench --help` `hrx-bench describe -v` `hrx-bench run 2 --samples 1`\n"
        "`hrx-bench frobnicate` `hrx-bench table --no-such F.jsonl`\n"
        "`bash bench/scripts/h200.sh sweep no-such-stage` `make bench` `make nothing`\n"
        "`hrx_stream_copy` `hrx_version` `hrx_no_such_function()`\n"
        "`csrc/core/stream.c` `csrc/core/gone.c` `tests/test_doc_names.py` `gone.py`\n"
        "`path/to/file.py:function` `F.jsonl` `build/testing` `hrx/_build_info.py`\n"
        "`copy/fill` `reference/notes.md` `tests/c/test_fault`\n\n"
        "| stage | makes |\n|---|---|\n| `sweep` | `made-later.jsonl` |\n")
    assert page_problems(page) == sorted([
        "Device._commands_submitted: not in the Python API",
        "HRX_NO_SUCH_VARIABLE: no code reads it",
        "csrc/core/gone.c: no such file or directory",
        "gone.py: no such file in the tree",
        "h200.sh no-such-stage: no such stage",
        "hrx-bench frobnicate: no such command",
        "hrx-bench table --no-such: no such option",
        "hrx.bench.nothing: not in the Python API",
        "hrx_no_such_function: no such name in the code",
        "reference/notes.md: no such file or directory",
        "tests/c/test_fault: no such file or directory",
        "make nothing: no such target",
    ])


def test_the_code_of_a_page_joins_continued_lines_and_skips_outputs():
    text = ("```sh\nhrx-bench sweep --driver native \\\n    --resume\n```\n"
            "| stage | makes | command |\n|---|---|---|\n| `a` | `x.log` | `y` |\n\ntail `z`\n")
    assert code_of(text) == ["hrx-bench sweep --driver native --resume", "a", "y", "z"]

"""The kernel header hrx installs (hrx/include/hrx_kernel.h) is the one the
host backend gives its compiler: the backend carries its text compiled in
(csrc/drivers/host/host_kernel_header.h, made from the file by this
module), and the package ships the file.

Regenerate the backend's copy after editing the header:

    python3 tests/test_kernel_header.py --write
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
HEADER = ROOT / "hrx" / "include" / "hrx_kernel.h"
EMBEDDED = ROOT / "csrc" / "drivers" / "host" / "host_kernel_header.h"


def c_string_lines(text: str) -> list[str]:
    """The text as C string literals, one per line of it."""
    out = []
    for line in text.splitlines(keepends=True):
        escaped = line.replace("\\", "\\\\").replace('"', '\\"').replace(
            "\n", "\\n")
        out.append(f'    "{escaped}"')
    return out


def embedded_source(text: str) -> str:
    return "\n".join([
        "/* Generated from hrx/include/hrx_kernel.h by",
        " * `python3 tests/test_kernel_header.py --write`; do not edit. The host",
        " * backend writes this text beside each kernel source it compiles",
        " * (host_kernel_compiler.c), so the compiler sees the header hrx",
        " * installs. tests/test_kernel_header.py checks that they match. */",
        "#ifndef HRX_DRIVERS_HOST_HOST_KERNEL_HEADER_H_",
        "#define HRX_DRIVERS_HOST_HOST_KERNEL_HEADER_H_",
        "",
        "static const char hrx_host_kernel_header[] =",
        *c_string_lines(text),
        "    ;",
        "",
        "#endif /* HRX_DRIVERS_HOST_HOST_KERNEL_HEADER_H_ */",
        "",
    ])


@pytest.mark.python_only
def test_the_backend_carries_the_installed_header():
    expected = embedded_source(HEADER.read_text())
    assert EMBEDDED.read_text() == expected, (
        "csrc/drivers/host/host_kernel_header.h is stale: run "
        "`python3 tests/test_kernel_header.py --write`")


@pytest.mark.python_only
def test_the_package_ships_the_header():
    import hrx
    path = pathlib.Path(hrx.kernel_include_dir()) / "hrx_kernel.h"
    assert path.read_text() == HEADER.read_text()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true",
                        help="rewrite the backend's copy of the header")
    args = parser.parse_args(argv)
    text = embedded_source(HEADER.read_text())
    if args.write:
        EMBEDDED.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The README's Python example runs as written (on the host backend, in a
fresh process), so the first thing a newcomer copies works."""
import pathlib
import re

from conftest import run_fresh

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_example_runs():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "README.md has no python example"
    out = run_fresh(blocks[0] + "\nprint('example ok')\n", backend="host",
                    env={"HRX_BACKEND": "host"})
    assert out.strip().endswith("example ok")

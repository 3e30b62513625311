"""The README's Python examples run, in order, as a user would paste them."""

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 7
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)  # noqa: S102
    np = namespace["np"]
    np.testing.assert_allclose(namespace["x1"].grad, namespace["x2"].data.T)
    assert namespace["z"].grad == 6 + 8j


def test_readme_shows_the_two_commands():
    text = README.read_text()
    assert "make demo" in text and "make test" in text

"""The solver examples at small sizes: the transverse-field Ising chain by eigsh (against the
free-fermion solution and SciPy's memory) and the differentiable quench."""

import pytest

from tests.support.examples import EXAMPLES, load


@pytest.mark.parametrize("name", ["tfim_eigsh", "quench", "mean_field"])
def test_examples_are_documented_scripts(name):
    text = (EXAMPLES / f"{name}.py").read_text()
    assert text.startswith('"""') and 'if __name__ == "__main__":' in text


@pytest.mark.parametrize("h", [0.5, 1.0, 1.5])
def test_tfim_energy_and_derivative_match_free_fermions(h):
    r = load("tfim_eigsh").main(["--L", "10", "--h", str(h)])
    assert r["relative_error"][0] <= 1e-8 and r["relative_error"][1] <= 1e-8
    assert r["memory"] <= 3 * r["scipy_memory"]
    assert abs(r["E0"] - r["scipy_E0"]) <= 1e-10 * abs(r["E0"])


def test_quench_optimisation_improves_the_fidelity():
    r = load("quench").main(["--L", "6", "--K", "3", "--iterations", "5"])
    assert r["gradient_check"] < 1e-6
    assert r["fidelity_after"] > r["fidelity_before"] + 0.05


def test_docs_sparse_code_runs():
    import re

    page = EXAMPLES.parent / "docs" / "sparse.md"
    code = "\n".join(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))
    assert code.strip()
    exec(compile(code, str(page), "exec"), {"__name__": "docs"})

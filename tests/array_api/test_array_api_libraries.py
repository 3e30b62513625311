"""SciPy (SCIPY_ARRAY_API=1) and scikit-learn (array_api_dispatch=True) array API code on
yaad tensors that require grad, gradients compared with PyTorch's: the functions of
tests/support/array_api_libraries.py, run in a fresh interpreter (SciPy reads
SCIPY_ARRAY_API when it is imported). docs/backends.md#array-api shows this table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parents[1] / "support" / "array_api_libraries.py"

# Values and gradients equal to PyTorch's (rtol 1e-10).
MATCH = ["scipy.special.logsumexp", "scipy.special.softmax", "scipy.special.xlogy",
         "scipy.stats.skew", "scipy.stats.kurtosis", "scipy.stats.moment",
         "scipy.stats.variation", "scipy.stats.zscore", "scipy.stats.gmean", "scipy.stats.hmean",
         "scipy.stats.pmean", "scipy.stats.tmean", "scipy.fft.fft",
         "sklearn rbf_kernel", "sklearn polynomial_kernel", "sklearn linear_kernel",
         "sklearn euclidean_distances", "sklearn MinMaxScaler"]
# Both raise, and why.
BOTH_RAISE = {
    "scipy.special.log_softmax": "writes in place into a saved output (max)",
    "scipy.cluster.vq.whiten": "writes in place into a saved output (std)",
    "sklearn cosine_similarity": "writes in place into a saved output (sqrt)",
    "sklearn normalize": "writes in place into a saved output (sqrt)",
    "sklearn StandardScaler": "writes in place into a saved output (sqrt)",
    "sklearn extmath.softmax": "writes in place into a saved output (exp)",
    "scipy.fft.dct": "SciPy converts the input to NumPy",
}
# yaad raises where PyTorch gives the gradient, and why.
YAAD_RAISES = {
    "scipy.special.expit": ("cannot convert a tensor that requires grad", "SciPy calls "
                            "torch.special for PyTorch, converts other arrays to NumPy"),
    "scipy.special.entr": ("cannot convert a tensor that requires grad", "as expit"),
    "scipy.stats.entropy": ("cannot convert a tensor that requires grad", "calls entr"),
}


@pytest.fixture(scope="module")
def report():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    out = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                         env=env, timeout=600, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def test_every_function_is_classified(report):
    assert set(report) == set(MATCH) | set(BOTH_RAISE) | set(YAAD_RAISES)
    assert len(report) == 28


@pytest.mark.parametrize("name", MATCH)
def test_gradient_equals_pytorchs(report, name):
    assert report[name] == {"result": "match"}


@pytest.mark.parametrize("name", sorted(BOTH_RAISE))
def test_both_raise(report, name):
    assert report[name]["result"] == "raises"
    assert report[name]["torch"] != "ok" and report[name]["yaad"] != "ok"


@pytest.mark.parametrize("name", sorted(YAAD_RAISES))
def test_yaad_raises_and_says_why(report, name):
    # never a silently wrong or missing gradient: an error that names the cause
    assert report[name]["result"] == "raises" and report[name]["torch"] == "ok"
    assert YAAD_RAISES[name][0] in report[name]["yaad"]

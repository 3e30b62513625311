"""What ``import yaad`` loads: the heavy SciPy submodules only where first used.

``scipy.signal`` alone took 62% of ``import yaad`` (0.4 s of 0.63 s); ``scipy.optimize``
and ``scipy.integrate`` another 0.1 s. yaad binds the ``scipy`` package, whose own
``__getattr__`` imports a submodule at its first use. Times are not asserted (they
vary with the machine); what is imported is.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

LAZY = ("scipy.signal", "scipy.optimize", "scipy.integrate", "scipy.stats", "scipy.interpolate",
        "autoray", "quimb", "cotengra")  # (yaad.interop waits for them to be imported)


def _modules_after(code: str) -> set[str]:
    run = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(*sys.modules)"],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return set(run.stdout.split())


def test_import_yaad_leaves_the_heavy_scipy_submodules_unimported():
    loaded = _modules_after("import yaad")
    assert "yaad" in loaded and "yaad.signal" in loaded and "yaad.integrate" in loaded
    assert not loaded & set(LAZY), sorted(loaded & set(LAZY))


@pytest.mark.parametrize("code, module", [
    ("import yaad, numpy as np\n"
     "print(yaad.signal.convolve(np.ones((2, 2)), np.ones((2, 2))).shape)", "scipy.signal"),
    ("import yaad, numpy as np\n"
     "print(yaad.optimize.minimize(lambda x: (x * x).sum(), np.ones(2)).x.shape)",
     "scipy.optimize"),
    ("import yaad, numpy as np\n"  # (the continuous adjoint steps with SciPy's solvers)
     "print(yaad.integrate.odeint(lambda y, t: -y, np.ones(2), np.array([0.0, 1.0]),\n"
     "                            adjoint='backsolve').shape)", "scipy.integrate"),
])
def test_a_heavy_submodule_is_imported_at_first_use(code, module):
    assert module in _modules_after(code)


def test_the_lazily_imported_functions_compute_what_scipy_computes():
    import scipy.signal

    import yaad

    rng = np.random.default_rng(0)
    a, v = rng.standard_normal((4, 3)), rng.standard_normal((2, 2))
    for mode in ("full", "valid", "same"):
        np.testing.assert_allclose(np.asarray(yaad.signal.convolve(a, v, mode)),
                                   scipy.signal.convolve(a, v, mode), rtol=1e-14)
        np.testing.assert_allclose(np.asarray(yaad.signal.correlate(a, v, mode)),
                                   scipy.signal.correlate(a, v, mode), rtol=1e-14)

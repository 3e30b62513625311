"""The release: the sdist and the wheel build without a warning, the wheel installs into a
fresh virtual environment (not editable, no network), and the examples run against it.

The fresh environment reaches this one's site-packages through a ``.pth`` line for
NumPy, SciPy and the examples' other imports; a path line in a ``.pth`` file does not
run the ``.pth`` files of that directory, so this environment's editable yaad stays out
(the test checks where ``yaad`` comes from).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

import yaad

ROOT = Path(__file__).resolve().parents[1]

# A quick run of each example (a new script needs its line here).
QUICK = {
    "complex_descent.py": ["--steps", "20"],
    "custom_op.py": [],
    "demo_seed.py": ["--repeats", "2", "--number", "2"],
    "hessian.py": ["--atoms", "3"],
    "ipeps_heisenberg.py": ["--D", "2", "--chi", "8", "--steps", "5", "--no-check",
                            "--no-progress"],
    "ising_ground_state.py": ["--L", "6", "--steps", "100"],
    "mean_field.py": ["--L", "8"],
    "mlp_digits.py": ["--epochs", "1", "--hidden", "16"],
    "mps.py": ["--L", "6", "--D", "4", "--steps", "30"],
    "quantum_vmc.py": ["--L", "4", "--steps", "20", "--alpha", "1"],
    "quench.py": ["--L", "6", "--K", "2", "--iterations", "2"],
    "tfim_eigsh.py": ["--L", "8"],
    "trg_specific_heat.py": ["--chi", "6", "--steps", "8", "--temps", "2.5", "--check", "3.0"],
}

RUN_EXAMPLES = """
import os, runpy, sys
import yaad
assert yaad.__file__.startswith(sys.prefix), yaad.__file__
for name, args in QUICK.items():
    sys.argv = [name, *args]
    runpy.run_path(os.path.join(EXAMPLES, name), run_name="__main__")
    print("ran", name, flush=True)
"""


def _warnings(output: str) -> list[str]:
    return [line for line in output.splitlines()
            if "warning" in line.lower() and "Location 'file:" not in line]  # pip's config


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """The sdist and the wheel, built from a copy of the sources."""
    tmp = tmp_path_factory.mktemp("release")
    src = tmp / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__",
                                                                             "*.egg-info"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    run = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir",
                          str(tmp / "dist"), str(src)], env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert not _warnings(run.stdout + run.stderr), _warnings(run.stdout + run.stderr)
    return tmp / "dist"


def test_build_makes_a_wheel_and_an_sdist_with_metadata(dist):
    wheels = list(dist.glob("*.whl"))
    sdists = list(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1
    assert wheels[0].name == f"yaad_autodiff-{yaad.__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheels[0]) as whl:
        names = whl.namelist()
        info = f"yaad_autodiff-{yaad.__version__}.dist-info"
        metadata = whl.read(f"{info}/METADATA").decode()
    assert "yaad/py.typed" in names and f"{info}/licenses/LICENSE" in names
    assert f"Version: {yaad.__version__}" in metadata
    assert "License-Expression: MIT" in metadata
    for dependency in ("numpy>=2", "scipy", "opt_einsum"):
        assert f"Requires-Dist: {dependency}" in metadata
    assert not any(n.startswith(("tests/", "benchmarks/", "examples/")) for n in names)


def test_the_wheel_installs_into_a_fresh_venv_and_runs_the_examples(dist, tmp_path):
    assert set(QUICK) == {p.name for p in (ROOT / "examples").glob("*.py")}, (
        "give each example a quick run in QUICK")
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=False)
    python = env_dir / "bin" / "python"
    wheel = next(dist.glob("*.whl"))
    install = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                              "--no-deps", "--no-index", "--disable-pip-version-check",
                              str(wheel)], capture_output=True, text=True)
    assert install.returncode == 0, install.stderr[-3000:]
    assert not _warnings(install.stdout + install.stderr), install.stdout + install.stderr
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path("
                           "'purelib'))"], capture_output=True, text=True, check=True)
    (Path(site.stdout.strip()) / "_test_dependencies.pth").write_text(
        sysconfig.get_path("purelib") + "\n")
    code = f"QUICK = {QUICK!r}\nEXAMPLES = {str(ROOT / 'examples')!r}\n" + RUN_EXAMPLES
    env = dict(os.environ, MPLBACKEND="Agg", OMP_NUM_THREADS="1")
    run = subprocess.run([str(python), "-c", code], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert [line for line in run.stdout.splitlines() if line.startswith("ran ")] == [
        f"ran {name}" for name in QUICK]

"""yaad's build: its hot modules compiled by Cython where a C compiler is found, else pure
Python.

``pip install .``, ``pip wheel .`` and ``python -m build`` compile the modules named in
``COMPILED`` with Cython (a build requirement in pyproject.toml, which pip fetches into
the build environment) from the very same ``.py`` files, in Cython's pure-Python mode: one
implementation, interpreted or compiled. The ``.pxd`` files beside some of them only
declare C types for the compiled build (graph.pxd: the Node as a C struct; op.pxd: the
Op; engine.pxd: the backward loop's locals). If compiling fails (no C compiler, no
Cython), the build prints one message and stays pure Python, and the wheel is tagged
``py3-none-any`` (a compiled wheel carries the interpreter's and the platform's tags); the
results are the same either way. ``YAAD_COMPILE=0`` asks for the pure-Python build. An
editable install (``pip install -e .``) is always pure Python, since an extension module
built in place would shadow later edits of its ``.py`` file.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The modules of the eager hot path (what compiling them gains: docs/performance.md,
# "The compiled build").
COMPILED = ("core.graph", "core.tensor", "core.op", "core.engine", "core.gradients", "core.views")

DIRECTIVES = {
    "language_level": 3,
    "binding": True,  # functions keep their signatures and docstrings for inspect
    "annotation_typing": False,  # annotations document; they must not become C types
}


class BuildExt(build_ext):
    """Compiles the extensions, or leaves the package pure Python where it cannot (no
    Cython, no C compiler, a compile error: a warning) or must not (an in-place build,
    as editable installs make)."""

    def run(self) -> None:
        if not self.extensions:
            return
        if self.inplace or getattr(self, "editable_mode", False):
            self._pure("an editable (in-place) install stays pure Python, so that an edit of a "
                       ".py file is what runs")
            return
        try:
            from Cython.Build import cythonize

            for ext in self.extensions:  # (the .py sources become C sources)
                (made,) = cythonize([ext], compiler_directives=DIRECTIVES, include_path=["src"],
                                    build_dir="build/cython", quiet=True)
                ext.sources = made.sources
            super().run()
        except Exception as exc:  # (whatever stops the compiler)
            for ext in self.extensions:  # all modules compiled, or none
                path = os.path.join(self.build_lib, self.get_ext_filename(ext.name))
                if os.path.exists(path):
                    os.remove(path)
            first = (str(exc).strip().splitlines() or [""])[0]
            first = first if len(first) <= 100 else first[:100] + "..."
            self._pure(f"could not compile the hot modules ({type(exc).__name__}: "
                       f"{first}); installing the pure-Python build (the same "
                       "results, slower on small arrays). For the compiled build, install a C "
                       "compiler (and Cython>=3.1 when building without isolation) and "
                       "reinstall.")

    def _pure(self, why: str) -> None:
        print(f"yaad: {why}", file=sys.stderr)
        self.extensions = []
        # a wheel of pure Python is tagged py3-none-any (bdist_wheel reads this after the
        # build, when it names the wheel and chooses purelib)
        self.distribution.ext_modules = []
        wheel = self.distribution.command_obj.get("bdist_wheel")
        if wheel is not None:
            wheel.root_is_pure = True

    def get_outputs(self) -> list:
        return super().get_outputs() if self.extensions else []


def extensions() -> list:
    if os.environ.get("YAAD_COMPILE", "1").strip() == "0":
        return []
    return [Extension(f"yaad.{name}", [f"src/yaad/{name.replace('.', '/')}.py"])
            for name in COMPILED]


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildExt},
)

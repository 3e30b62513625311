"""yaad's build: pure Python, or with its hot modules compiled by Cython.

``pip install .`` builds pure Python (no compiler, no Cython needed). With
``YAAD_COMPILE=1`` in the environment, the modules named in ``COMPILED`` are compiled by
Cython (it becomes a build requirement) from the very same ``.py`` files, in Cython's
pure-Python mode: one implementation, interpreted or compiled. The ``.pxd`` files beside
some of them only declare C types for the compiled build (graph.pxd: the Node as a C
struct; op.pxd: the Op; engine.pxd: the backward loop's locals). If compiling fails (no C
compiler), the build warns and stays pure Python; the results are the same either way.
An editable install (``pip install -e .``) is always pure Python, since an extension
module built in place would shadow later edits of its ``.py`` file.
"""

import os
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

# The modules of the eager hot path (what compiling them gains: docs/performance.md,
# "The compiled build").
COMPILED = ("core.graph", "core.tensor", "core.op", "core.engine", "core.gradients")

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
        if self.inplace:
            self._pure("an in-place (editable) build stays pure Python")
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
            self._pure(f"compiling failed ({type(exc).__name__}: {exc}); pure Python")

    def _pure(self, why: str) -> None:
        print(f"yaad: {why}", file=sys.stderr)
        self.extensions = []

    def get_outputs(self) -> list:
        return super().get_outputs() if self.extensions else []


def extensions() -> list:
    if os.environ.get("YAAD_COMPILE", "") != "1":
        return []
    return [Extension(f"yaad.{name}", [f"src/yaad/{name.replace('.', '/')}.py"])
            for name in COMPILED]


setup(
    ext_modules=extensions(),
    cmdclass={"build_ext": BuildExt},
    setup_requires=["cython>=3.1"] if extensions() else [],
)

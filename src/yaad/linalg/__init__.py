"""yaad.linalg: NumPy's linear algebra, differentiable, batched and complex.

The functions of ``numpy.linalg`` with their names and signatures, batched over leading
axes ``(..., m, n)``, for real and complex inputs, each with a VJP and a JVP (so second
derivatives and forward mode work), plus SciPy's ``expm``, ``logm``, ``sqrtm``,
``solve_triangular``, ``solve_sylvester``, ``solve_continuous_lyapunov``,
``solve_banded``, ``polar`` and ``schur`` (without gradient). ``numpy.linalg.f(t)`` on a
tensor calls ``yaad.linalg.f``.

Differences from NumPy, all deliberate:

- ``eig`` and ``eigvals`` always return complex arrays (NumPy returns real ones when all
  eigenvalues happen to be real, a value-dependent dtype that breaks differentiation).
- ``eigh``, ``eig`` and ``svd`` take ``eps=``: Lorentzian broadening of the gradient for
  losses that depend on the basis inside a degenerate subspace (see ``docs/linalg.md``).
- ``lstsq`` is batched too; ``residuals`` is then ``(..., K)``.

Gradients stay finite where the mathematics allows: degenerate eigenvalues and singular
values (for losses that do not depend on the basis inside the degenerate subspace), the
norm at zero (subgradient 0), singular matrices in ``det``. Where a gradient does not
exist (the loss depends on an eigenvector's phase) a :class:`GaugeError` says so.
"""

from numpy.linalg import LinAlgError

from . import matrix_functions, norms, products, rank, spectral, systems
from .matrix_functions import *
from .norms import *
from .products import *
from .rank import *
from .spectral import *
from .systems import *

__all__ = ["LinAlgError", *products.__all__, *systems.__all__, *rank.__all__,
           *spectral.__all__, *norms.__all__, *matrix_functions.__all__]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)

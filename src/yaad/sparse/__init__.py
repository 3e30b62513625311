"""``yaad.sparse``: sparse and matrix-free operators with gradients, and their solvers.

SciPy sparse matrices (csr, csc, coo, dia, bsr, as matrices or arrays) and
``scipy.sparse.linalg.LinearOperator`` multiply tensors in ``yaad.matmul``, ``yaad.dot``,
``np.matmul`` and ``tensor @ A``; the gradient flows to the dense side. For gradients
with respect to the operator itself, build a :class:`SparseTensor`: ``csr_array`` /
``coo_array`` with differentiable nonzeros, ``asarray(H) * theta`` and sums of them
(``sum(theta[k] * H[k])``, never densified), or ``yaad.sparse.linalg.LinearOperator``
around a function ``v -> A v``. ``yaad.sparse.linalg`` has the solvers (``eigsh``,
``eigs``, ``expm_multiply``, ``cg``, ``minres``, ``gmres``, ``spsolve``).
"""

from . import linalg
from .tensor import SparseTensor, asarray, coo_array, csr_array, is_operator

__all__ = ["SparseTensor", "asarray", "csr_array", "coo_array", "is_operator", "linalg"]


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)

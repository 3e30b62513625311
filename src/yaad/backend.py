"""Array backends: which library an array belongs to, and its array API namespace.

The public face of :mod:`yaad.core.backend` (docs/backends.md): a tensor keeps the array
it is given (NumPy, CuPy, Dask, any array-API library), and these functions tell which.
"""

from .core.backend import *  # noqa: F403
from .core.backend import __all__  # noqa: F401


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)

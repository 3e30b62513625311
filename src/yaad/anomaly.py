"""``yaad.detect_anomaly``: find the forward operation behind a NaN or inf in backward.

The public face of :mod:`yaad.modes.anomaly`, where the mode is implemented.
"""

from .modes.anomaly import *  # noqa: F403
from .modes.anomaly import __all__  # noqa: F401


def __dir__() -> list[str]:  # what dir() and completion list: the public names only
    return list(__all__)

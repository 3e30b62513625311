"""Where the user's code called into yaad: the innermost stack frames outside the package
(named by ``detect_anomaly``'s errors and by warnings that point at the user's line)."""

from __future__ import annotations

import os
import sys
from types import FrameType

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # (yaad/)
_FRAMES = 4  # user frames kept
Frames = tuple[tuple[str, int, str], ...]  # (filename, line, function), innermost first


def user_frames() -> Frames:
    """(filename, line, function) of the innermost frames outside the yaad package."""
    frames: list[tuple[str, int, str]] = []
    f: FrameType | None = sys._getframe(1)
    while f is not None and len(frames) < _FRAMES:
        name = f.f_code.co_filename
        if not name.startswith(_PACKAGE):
            frames.append((name, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    return tuple(frames)


def called_from_user(skip: str) -> bool:
    """Whether the innermost frame outside the file ``skip`` (the caller's own file) lies
    outside the yaad package: a conversion the user's code made, not one inside yaad."""
    f: FrameType | None = sys._getframe(1)
    while f is not None and f.f_code.co_filename == skip:
        f = f.f_back
    return f is not None and not f.f_code.co_filename.startswith(_PACKAGE)

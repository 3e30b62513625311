"""Copies and pickles of tensors read their state the way Python 3.11's
``object.__getstate__`` does, also where it is missing (Python 3.10): the fallback read
from the instance dict and the slots gives the same state as the built-in."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import yaad
from yaad.core.presentation import state_of_slots


def _tensors():
    leaf = yaad.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    param = yaad.nn.Parameter(np.ones(3))
    return {
        "leaf": leaf,
        "constant": yaad.tensor(np.array(1 + 2j)),
        "computed": (leaf * 2).sum(),
        "view": leaf[0],
        "parameter": param,
        "empty": yaad.zeros((0, 2)),
    }


def _same(a, b):
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, tuple):
        assert isinstance(b, tuple) and len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    else:
        assert a is b


@pytest.mark.parametrize("name", list(_tensors()))
def test_the_fallback_state_equals_python_3_11s(name):
    t = _tensors()[name]
    _same(state_of_slots(t), object.__getstate__(t))


class _Slotted:
    __slots__ = ("a", "__hidden", "unset")

    def __init__(self):
        self.a = 1
        self.__hidden = 2


class _SlottedWithDict(_Slotted):
    pass


@pytest.mark.parametrize("cls", [_Slotted, _SlottedWithDict])
def test_the_fallback_reads_mangled_and_unset_slots_as_python_does(cls):
    obj = cls()
    if cls is _SlottedWithDict:
        obj.extra = 3
    assert state_of_slots(obj) == object.__getstate__(obj)


def test_copies_and_pickles_keep_values_and_flags():
    for name, t in _tensors().items():
        if name in ("computed", "view"):
            continue  # (deepcopy of a computed tensor raises, as in PyTorch)
        for made in (copy.copy(t), copy.deepcopy(t), pickle.loads(pickle.dumps(t))):
            assert type(made) is type(t), name
            assert made.shape == t.shape and made.dtype == t.dtype, name
            np.testing.assert_array_equal(np.asarray(made.detach()), np.asarray(t.detach()))
            assert made.requires_grad == t.requires_grad, name

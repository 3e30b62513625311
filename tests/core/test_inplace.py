"""In-place operations: NumPy's memory semantics, PyTorch's autograd rules (recorded on
non-leaves, refused on leaves that require grad, version counters), views."""

from __future__ import annotations

import numpy as np
import pytest

import yaad
from tests.support.shape_checks import check_jvp, rand
from yaad.testing import gradcheck, gradgradcheck

C128, F32 = np.complex128, np.float32

# (method, arguments, the out-of-place function)
METHODS = [
    ("__iadd__", (2.5,), lambda a, b: a + b),
    ("__isub__", ("other",), lambda a, b: a - b),
    ("__imul__", ("other",), lambda a, b: a * b),
    ("__itruediv__", ("other",), lambda a, b: a / b),
    ("__ipow__", (2,), lambda a, b: a ** b),
    ("add_", ("other",), lambda a, b: a + b),
    ("sub_", (1.0,), lambda a, b: a - b),
    ("mul_", ("other",), lambda a, b: a * b),
    ("div_", (4.0,), lambda a, b: a / b),
    ("pow_", (3,), lambda a, b: a ** b),
    ("neg_", (), lambda a: -a),
    ("exp_", (), yaad.exp),
    ("sin_", (), yaad.sin),
    ("tanh_", (), yaad.tanh),
    ("square_", (), yaad.square),
    ("clip_", (-0.5, 0.5), yaad.clip),
    ("clamp_", (-0.5, None), yaad.clip),
    ("copy_", ("other",), lambda a, b: b + 0 * a),
    ("fill_", (1.5,), lambda a, v: 0 * a + v),
]


def _args(args, other):
    return tuple(other if a == "other" else a for a in args)


@pytest.mark.parametrize("name,args,fn", METHODS, ids=[m[0] for m in METHODS])
def test_inplace_method_equals_out_of_place_and_is_differentiable(name, args, fn):
    x, o = rand((2, 3)), rand((2, 3), seed=1) + 3.0

    def inplace(a, b):
        h = yaad.as_tensor(a) * 1.0  # a non-leaf (a tensor even for plain arrays)
        out = getattr(h, name)(*_args(args, b))
        assert out is h
        return h

    def reference(a, b):
        return fn(a, *_args(args, b))

    got = inplace(yaad.tensor(x, requires_grad=True), yaad.tensor(o, requires_grad=True))
    np.testing.assert_allclose(got.data, reference(yaad.tensor(x), yaad.tensor(o)).data)
    gradcheck(inplace, [x, o])
    gradgradcheck(inplace, [x, o])
    check_jvp(inplace, [x, o])


def test_inplace_without_grad_writes_the_memory_and_bumps_the_version():
    a = np.arange(4.0)
    t = yaad.Tensor(a)
    v0 = t._version
    t += 1
    t[0] = 10
    t.mul_(2)
    assert t.data is a
    np.testing.assert_array_equal(a, [20, 4, 6, 8])
    assert t._version == v0 + 3
    assert t.is_leaf and not t.requires_grad


def test_recorded_inplace_on_a_non_leaf():
    x = yaad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 2
    data = h.data
    h += x
    h *= h
    assert h.data is data  # the same memory
    assert h.grad_fn.name == "multiply"
    h.sum().backward()
    np.testing.assert_allclose(x.grad, 2 * 3 * x.data * 3)


def test_setitem_recorded_gradients():
    x = yaad.tensor(rand((3, 2)), requires_grad=True)
    v = yaad.tensor(rand((2,), seed=1), requires_grad=True)
    h = x * 1
    h[1] = v * 3
    h[0, 0] = 7.0
    w = rand((3, 2), seed=2)
    (h * w).sum().backward()
    expected = w.copy()
    expected[1] = 0
    expected[0, 0] = 0
    np.testing.assert_allclose(x.grad, expected)
    np.testing.assert_allclose(v.grad, 3 * w[1])
    assert h.data[0, 0] == 7.0


@pytest.mark.parametrize("dtype", [np.float64, C128], ids=["real", "complex"])
def test_setitem_gradcheck(dtype):
    def f(a, b):
        h = a * 1
        h[:, 1] = b
        h[np.array([0, 0, 2])] += b[0]  # advanced: copy, add, write back
        h[h.real > 0] *= 2.0
        return h

    x, v = rand((3, 2), dtype), rand((3,), dtype, seed=1)
    gradcheck(f, [x, v])
    gradgradcheck(f, [x, v])


def test_setitem_on_a_constant_leaf_makes_it_depend_on_the_value():
    buf = yaad.zeros(3)
    w = yaad.tensor(2.0, requires_grad=True)
    buf[1] = w ** 2
    assert buf.requires_grad and not buf.is_leaf
    buf.sum().backward()
    assert w.grad == 4.0


def test_building_a_tensor_row_by_row():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    out = yaad.zeros((3, 2))
    for i in range(3):
        out[i] = yaad.stack([x[i], x[i] ** 2])
    out.sum().backward()
    np.testing.assert_allclose(x.grad, 1 + 2 * x.data)


# ---- what is refused, and what is detected ---------------------------------------------------

def test_inplace_on_a_leaf_that_requires_grad_raises_and_changes_nothing():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    for op in (lambda t: t.__iadd__(1), lambda t: t.mul_(2), lambda t: t.__setitem__(0, 5.0),
               lambda t: t.zero_(), lambda t: t.copy_(yaad.ones(2))):
        with pytest.raises(RuntimeError, match="leaf tensor that requires grad"):
            op(x)
    np.testing.assert_array_equal(x.data, [1.0, 2.0])
    assert x._version == 0


def test_inplace_on_a_leaf_is_allowed_under_no_grad():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    with yaad.no_grad():
        x -= 0.1 * x.grad
        x[0] = 0.5
    np.testing.assert_allclose(x.data, [0.5, 1.6])
    assert x.is_leaf and x.requires_grad and x.grad_fn is None


def test_a_saved_value_changed_in_place_makes_backward_raise():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    y = x * 1
    z = yaad.sin(y)  # saves y
    y += 1
    with pytest.raises(RuntimeError, match=r"'sin'.*version 1"):
        z.sum().backward()
    e = yaad.exp(x * 1)  # saves its output
    total = e.sum()
    e[0] = 0.0
    with pytest.raises(RuntimeError, match=r"'exp'.*version 1"):
        total.backward()


def test_a_saved_value_changed_under_no_grad_is_detected_too():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    y = x * 1
    z = y * y
    with yaad.no_grad():
        y.add_(1)
        y.add_(1)
    with pytest.raises(RuntimeError, match=r"'multiply'.*version 2"):
        z.sum().backward()


def test_unrelated_inplace_changes_do_not_disturb_backward():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    y = x * 1
    z = yaad.sin(y)
    other = y + 1  # new memory
    other += 5
    z.sum().backward()
    np.testing.assert_allclose(x.grad, np.cos(x.data))


def test_shape_or_dtype_mismatch_raises_and_records_nothing():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    h = x * 1
    node = h.grad_fn
    with pytest.raises(ValueError, match="__iadd__"):
        h += yaad.ones((2, 3))
    assert h.grad_fn is node
    i = yaad.tensor([1, 2, 3])
    with pytest.raises(TypeError, match="__itruediv__"):
        i /= 2
    np.testing.assert_array_equal(i.data, [1, 2, 3])
    f = yaad.tensor(rand((2,), F32))
    f += np.float64(1.5)
    assert f.dtype == F32


# ---- views ------------------------------------------------------------------------------

def test_inplace_on_a_basic_view_writes_through_the_base():
    x = yaad.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x * 1
    v = h[1:3]
    v *= 2
    np.testing.assert_array_equal(h.data, [1, 4, 6, 4])
    np.testing.assert_array_equal(v.data, [4, 6])
    (h * np.arange(4.0)).sum().backward()
    np.testing.assert_array_equal(x.grad, [0, 2, 4, 3])


def test_augmented_assignment_through_an_index():
    def f(a):
        h = a * 1
        h[1:3] += 5 * a[0]
        h[:, 0] *= 3  # a view of a column
        h[0][1:] -= a[2, 1:]  # a view of a view
        row = h[3]
        row[1:] = a[0, :2] * 2  # setitem on a view
        return h

    x = rand((4, 3))
    gradcheck(f, [x])
    gradgradcheck(f, [x])
    check_jvp(f, [x])


def test_a_second_view_sees_the_change_through_the_first_with_its_gradient():
    import torch
    x0 = rand((4,))

    def run(lib, x):
        h = x * 1
        v1, v2 = h[0:2], h[0:2]
        v1 *= 3  # v2 is rebased onto h's new value (PyTorch's view semantics)
        return (v2 * lib.tensor([1.0, 2.0])).sum(), v2

    x = yaad.tensor(x0, requires_grad=True)
    loss, v2 = run(yaad, x)
    loss.backward()
    xt = torch.tensor(x0, requires_grad=True)
    loss_t, v2_t = run(torch, xt)
    loss_t.backward()
    np.testing.assert_allclose(v2.data, v2_t.detach().numpy())
    np.testing.assert_allclose(x.grad, xt.grad.numpy())
    np.testing.assert_array_equal(x.grad, [3, 6, 0, 0])


def test_a_view_of_a_leaf_that_requires_grad_cannot_change():
    x = yaad.tensor(rand((4,)), requires_grad=True)
    v = x[1:3]
    with pytest.raises(RuntimeError, match="leaf tensor"):
        v += 1
    np.testing.assert_array_equal(v.data, x.data[1:3])


def test_other_views_of_recorded_tensors_write_through_their_base():
    import torch
    x0 = rand((2, 3))
    w = np.arange(6.0).reshape(2, 3)

    def run(lib, x, view):
        h = x * 1
        v = view(h)
        v += 1
        v *= lib.tensor(3.0) * v.detach()  # lands in h at the view's positions
        return (h * lib.tensor(w)).sum()

    for view in (lambda h: h.reshape(3, 2), lambda h: h.T, lambda h: h[:, 1:][1:],
                 lambda h: h.reshape(6)[::2]):
        x = yaad.tensor(x0, requires_grad=True)
        run(yaad, x, view).backward()
        xt = torch.tensor(x0, requires_grad=True)
        run(torch, xt, view).backward()
        np.testing.assert_allclose(x.grad, xt.grad.numpy(), rtol=1e-12)
    h = yaad.tensor(x0, requires_grad=True) * 1
    d = yaad.diagonal(h)
    with pytest.raises(ValueError, match="read-only"):  # NumPy's diagonal is read-only
        d += 1
    with yaad.no_grad():
        r = h.reshape(3, 2)
        r += 1  # NumPy semantics without recording: the base changes
    np.testing.assert_allclose(h.data, x0 + 1)


def test_views_of_memory_nothing_else_holds_can_change():
    x = yaad.tensor(rand((3, 4)), requires_grad=True)
    h = x * 1
    cols = h[:, [0, 1]]  # NumPy returns a view of a fresh buffer
    cols += 1
    r = (x * 2).reshape(4, 3)  # a view of a temporary
    r *= 3
    (cols.sum() + r.sum() + h.sum()).backward()
    np.testing.assert_array_equal(x.grad, np.array([[8, 8, 7, 7]] * 3))


def test_view_inplace_without_recording_changes_the_base():
    t = yaad.tensor(np.zeros((2, 3)))
    t[0][1:] += 1
    row = t[1]
    row.fill_(2.0)
    np.testing.assert_array_equal(t.data, [[0, 1, 1], [2, 2, 2]])


def test_a_constant_view_changed_by_a_recorded_value():
    base = yaad.zeros(4)
    w = yaad.tensor(3.0, requires_grad=True)
    v = base[1:3]
    v += w
    assert base.requires_grad  # the base records the change, not only the view
    (base * np.arange(4.0)).sum().backward()
    assert w.grad == 1.0 + 2.0


def test_fill_zero_copy():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    h = x * 2
    h.zero_()
    h.add_(x)
    h.sum().backward()
    np.testing.assert_array_equal(x.grad, [1, 1, 1])
    t = yaad.zeros((2, 2))
    t.copy_(yaad.tensor([1.0, 2.0]))
    t.fill(3.0)
    np.testing.assert_array_equal(t.data, np.full((2, 2), 3.0))


def test_inplace_on_a_zero_d_result():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    s = x.sum()
    s *= 2
    s += x[0]
    s.backward()
    np.testing.assert_allclose(x.grad, [3, 2, 2])


def test_inplace_against_torch():
    import torch
    x = rand((3, 4))

    def run(lib, t):
        h = t * 1
        h[1:, 1:3] *= 2
        h[0] = h[2].clone() ** 2
        h.add_(t)
        return (h ** 2).sum()

    t = yaad.tensor(x, requires_grad=True)
    run(yaad, t).backward()
    tt = torch.tensor(x, requires_grad=True)
    run(torch, tt).backward()
    np.testing.assert_allclose(t.grad, tt.grad.numpy())


def test_views_are_remembered_weakly_and_forgotten_when_gone():
    base = yaad.tensor(rand((10,)))
    for k in range(1000):
        base[k % 10] * 2  # a view, dropped at once
    assert len(base._views) <= 64
    kept = [base[k] for k in range(10)]
    assert sum(r() is not None for r in base._views) == 10
    with yaad.no_grad():
        base += 1
    np.testing.assert_array_equal([v.data for v in kept], base.data)


def test_a_view_of_a_view_of_a_recorded_base_follows_every_change():
    x = yaad.tensor(rand((3, 4)), requires_grad=True)
    w = yaad.tensor(2.0, requires_grad=True)
    h = x * 1
    row = h[1]
    col = h.T[2]  # column 2: two views sharing the element h[1, 2]
    cell = row[2]
    h.mul_(w)
    row.add_(1)
    col.mul_(w)
    assert cell.data == h.data[1, 2] == col.data[1]
    (cell * 3).backward()
    # cell = ((x[1, 2] * w) + 1) * w
    assert w.grad == pytest.approx(3 * (2 * x.data[1, 2] * 2.0 + 1))
    np.testing.assert_allclose(x.grad, np.where(np.arange(12).reshape(3, 4) == 6, 12.0, 0))


def test_a_view_made_under_no_grad_refuses_backward_after_its_base_changed():
    x = yaad.tensor(rand((3,)), requires_grad=True)
    h = x * 1
    with yaad.no_grad():
        v = h[:2]
    h.add_(1)
    assert v.requires_grad
    loss = (v * 2).sum()
    with pytest.raises(RuntimeError, match="no_grad().*add_|add_.*no_grad()"):
        loss.backward()


def test_copies_of_a_base_and_its_views_share_nothing():
    import copy
    import pickle

    x = yaad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[1:]
    y = pickle.loads(pickle.dumps(x))  # a tensor with views pickles as before
    np.testing.assert_array_equal(y.data, x.data)
    c = yaad.tensor([1.0, 2.0, 3.0])
    w = c[1:]
    c2, w2 = copy.deepcopy([c, w])
    c2.add_(1)  # the copies have memory of their own: not a base and its view
    np.testing.assert_array_equal(w2.data, [2.0, 3.0])
    assert w2._base is None and pickle.loads(pickle.dumps(w))._base is None
    assert v._base.parent is x


@pytest.mark.parametrize("recorded", [False, True])
def test_assigning_the_real_part_of_a_complex_tensor_to_it(recorded):
    # Found by tests/conformance/test_fuzz_views.py: the real part shares the complex
    # array's address, shape and strides, and was taken for the same memory (a no-op).
    z0 = np.array([1 + 2j, 3 - 1j, -2 + 0.5j])
    z = yaad.tensor(z0, requires_grad=recorded)
    b = z * 1
    b[...] = b.real
    np.testing.assert_array_equal(b.data, z0.real + 0j)
    b.copy_(b.imag * 1j + 1)
    np.testing.assert_array_equal(b.data, np.ones(3, C128))
    if recorded:
        w = yaad.tensor(z0, requires_grad=True)
        c = w * 1
        c[...] = c.real
        (abs(c) ** 2).sum().backward()
        np.testing.assert_allclose(w.grad, 2 * z0.real)  # d/dz of (Re z)^2, PyTorch's way


def test_a_view_of_a_reshaped_copy_writes_through():
    # Found by tests/conformance/test_fuzz_views.py: reshape of a strided view is a copy
    # whose NumPy base its own views share; that is not memory held by anything else.
    x = yaad.tensor(np.arange(12.0).reshape(3, 4), requires_grad=True)
    flat = (x * 1)[::2].reshape(-1)  # a copy (rows 0 and 2 are not contiguous)
    v = flat[..., 0]
    v.add_(10.0)
    flat[::2] = 0.5
    np.testing.assert_array_equal(flat.data, [0.5, 1, 0.5, 3, 0.5, 9, 0.5, 11])
    (flat * flat).sum().backward()
    np.testing.assert_array_equal(x.grad, [[0, 2, 0, 6], [0] * 4, [0, 18, 0, 22]])


def test_copying_a_tensor_into_itself_changes_nothing():
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = h * x  # saves h
    version = h._version
    h.copy_(h)
    h[...] = h
    assert h._version == version
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, 2 * x.data)


# ---- an in-place change of an op's output, against PyTorch -------------------------------
# An op whose rule reads its inputs only (PyTorch saves the inputs of these) lets its
# output change in place before backward, as PyTorch does: ``q = x / y; q -= 1`` (the
# standardisation in scipy.stats.zscore, then ``z[const] = nan``).


def _torch_conv_full(a, v):
    import torch
    n = v.shape[0]
    return torch.nn.functional.conv1d(a[None, None], v.flip(0)[None, None],
                                      padding=n - 1)[0, 0]


def _torch_corr_valid(a, v):
    import torch
    return torch.nn.functional.conv1d(a[None, None], v[None, None])[0, 0]


_POS, _ANY, _UNIT = (0.5, 2.0), (-2.0, 2.0), (-0.8, 0.8)
# (name, yaad function, PyTorch function, the inputs' intervals (shapes (6,) unless given))
KEEPS_INPUTS = [
    ("divide", yaad.divide, "div", (_ANY, _POS)),
    ("divide_by_a_constant", lambda x: yaad.divide(x, 3.0), lambda x: x / 3.0, (_ANY,)),
    ("constant_over", lambda y: yaad.divide(2.0, y), lambda y: 2.0 / y, (_POS,)),
    ("sinc", yaad.sinc, "sinc", (_ANY,)),
    ("erfinv", yaad.erfinv, "erfinv", (_UNIT,)),
    ("logaddexp", yaad.logaddexp, "logaddexp", (_ANY, _ANY)),
    ("logaddexp2", yaad.logaddexp2, "logaddexp2", (_ANY, _ANY)),
    ("sign", yaad.sign, "sign", (_ANY,)),
    ("clip", lambda x: yaad.clip(x, -0.5, 0.5), lambda x: x.clamp(-0.5, 0.5), (_ANY,)),
    ("round", yaad.round, "round", (_ANY,)),
    ("convolve", yaad.convolve, _torch_conv_full, (_ANY, (_ANY, (3,)))),
    ("correlate", yaad.correlate, _torch_corr_valid, (_ANY, (_ANY, (3,)))),
]


def _inputs(intervals, seed):
    rng = np.random.default_rng(seed)
    out = []
    for iv in intervals:
        (lo, hi), shape = (iv, (6,)) if isinstance(iv[0], float) else iv
        out.append(rng.uniform(lo, hi, shape))
    return out


def _change(lib_index, q):
    """The two in-place changes: a recorded subtraction, and an indexing assignment."""
    q -= 0.25
    q[0] = 7.0
    return q


@pytest.mark.parametrize("name,f,tf,intervals", KEEPS_INPUTS, ids=[c[0] for c in KEEPS_INPUTS])
def test_an_output_changed_in_place_where_pytorch_keeps_the_inputs(name, f, tf, intervals):
    import torch
    xs = _inputs(intervals, seed=len(name))
    tf = getattr(torch, tf) if isinstance(tf, str) else tf
    ts = [yaad.tensor(x, requires_grad=True) for x in xs]
    q = _change(1, f(*ts))
    w = np.linspace(0.5, 2.0, q.size).reshape(q.shape)
    (q * q * w).sum().backward()
    tts = [torch.tensor(x, requires_grad=True) for x in xs]
    tq = _change(0, tf(*tts))
    (tq * tq * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(q.data, tq.detach().numpy(), rtol=1e-12, atol=1e-13)
    for t, tt in zip(ts, tts):
        assert t.grad.dtype == np.float64 and t.grad.shape == t.shape
        np.testing.assert_allclose(t.grad, tt.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_an_output_changed_in_place_complex_sign_and_quotient():
    # sgn(z): PyTorch keeps the output (and raises); yaad recomputes it from z, so the
    # gradient is the one of the same program without the in-place change (PyTorch's).
    import torch
    rng = np.random.default_rng(3)
    z = rng.normal(size=5) + 1j * rng.normal(size=5)
    d = rng.normal(size=5) + 1j * rng.normal(size=5) + 3
    quotients = (lambda a: a / yaad.tensor(d), lambda a: a / torch.tensor(d))
    for f, tf in ((yaad.sign, torch.sgn), quotients):
        t = yaad.tensor(z, requires_grad=True)
        q = f(t)
        q -= 1
        yaad.sum(yaad.absolute(q) ** 2).backward()
        tt = torch.tensor(z, requires_grad=True)
        (tf(tt) - 1).abs().pow(2).sum().backward()
        np.testing.assert_allclose(t.grad, tt.grad.numpy(), rtol=1e-12)


# Ops whose rule reads their output, as PyTorch's do: both raise at backward.
KEEPS_THE_OUTPUT = [
    ("exp", yaad.exp, "exp", _ANY), ("exp2", yaad.exp2, "exp2", _ANY),
    ("expm1", yaad.expm1, "expm1", _ANY), ("tan", yaad.tan, "tan", _UNIT),
    ("tanh", yaad.tanh, "tanh", _ANY), ("sqrt", yaad.sqrt, "sqrt", _POS),
    ("reciprocal", yaad.reciprocal, "reciprocal", _POS),
    ("expit", yaad.expit, "sigmoid", _ANY), ("erfcx", yaad.erfcx, "special.erfcx", _ANY),
    ("i0e", yaad.i0e, "special.i0e", _ANY), ("i1e", yaad.i1e, "special.i1e", _ANY),
    ("log_ndtr", yaad.log_ndtr, "special.log_ndtr", _ANY),
    ("ndtri", yaad.ndtri, "special.ndtri", (0.1, 0.9)),
    ("hypot", lambda x: yaad.hypot(x, x + 1), lambda x: x.hypot(x + 1), _ANY),
    ("softmax", lambda x: yaad.softmax(x, axis=0), lambda x: x.softmax(0), _ANY),
    ("log_softmax", lambda x: yaad.log_softmax(x, axis=0), lambda x: x.log_softmax(0), _ANY),
    ("cumprod", lambda x: yaad.cumprod(x, axis=0), lambda x: x.cumprod(0), _ANY),
    ("prod", lambda x: yaad.prod(x, keepdims=True), lambda x: x.prod().reshape(1), _ANY),
    ("logsumexp", lambda x: yaad.logsumexp(x, keepdims=True),
     lambda x: x.logsumexp(0, keepdim=True), _ANY),
    ("lstsq", lambda x: yaad.linalg.lstsq(yaad.reshape(x, (3, 2)), yaad.ones(3))[0],
     lambda x: __import__("torch").linalg.lstsq(x.reshape(3, 2), x.new_ones(3, 1))[0][:, 0],
     _ANY),
]


@pytest.mark.parametrize("name,f,tf,interval", KEEPS_THE_OUTPUT,
                         ids=[c[0] for c in KEEPS_THE_OUTPUT])
def test_an_output_changed_in_place_where_pytorch_keeps_it_raises_in_both(name, f, tf,
                                                                          interval):
    import functools

    import torch
    x = np.random.default_rng(0).uniform(*interval, 6)
    tf = functools.reduce(getattr, tf.split("."), torch) if isinstance(tf, str) else tf
    tq = tf(torch.tensor(x, requires_grad=True))
    tq -= 0.25
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        tq.sum().backward()
    q = f(yaad.tensor(x, requires_grad=True))
    q -= 0.25
    with pytest.raises(RuntimeError, match="its output of '"):
        q.sum().backward()

"""User-defined operators: ``yaad.op``, ``yaad.Function``, and ``yaad.testing``."""

from __future__ import annotations

import importlib.util
import pathlib

import numpy as np
import pytest

import yaad
from yaad import func as F
from yaad.testing import GradcheckError, gradcheck, gradgradcheck

EXAMPLES = pathlib.Path(__file__).resolve().parents[1] / "examples"
rng = np.random.default_rng(5)


def load_example(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- yaad.op ----------------------------------------------------------------------------


def test_op_in_a_few_lines():
    softsign = yaad.op(lambda x: x / (1 + np.abs(x)), name="softsign",
                       vjp=lambda g, ans, x: g / (1 + yaad.abs(x)) ** 2,
                       jvp=lambda t, ans, x: t / (1 + yaad.abs(x)) ** 2)
    x = rng.uniform(0.2, 1, (2, 3)) * rng.choice([-1, 1], (2, 3))
    np.testing.assert_allclose(softsign(x), x / (1 + np.abs(x)))
    assert isinstance(softsign(yaad.tensor(x)), yaad.Tensor)
    assert gradcheck(softsign, [x], check_forward_ad=True)
    assert gradgradcheck(softsign, [x], check_forward_ad=True)


def test_op_decorator_with_defvjp_and_defjvp():
    @yaad.op
    def scaled_exp(x, scale):
        """scale * exp(x); scale is not differentiated."""
        return scale * np.exp(x)

    scaled_exp.defvjp(lambda g, ans, x, scale: g * yaad.conj(ans), None)
    scaled_exp.defjvp(lambda t, ans, x, scale: t * ans, None)
    assert scaled_exp.__doc__.startswith("scale * exp(x)")
    f = lambda x: scaled_exp(x, 3.0)  # noqa: E731
    for x in (rng.standard_normal(3), rng.standard_normal(3) + 1j * rng.standard_normal(3)):
        assert gradcheck(f, [x], check_forward_ad=True)
        assert gradgradcheck(f, [x])


def test_op_vjp_with_a_wrong_shape_raises_naming_it():
    bad = yaad.op(lambda x: np.sum(x), name="bad_sum", vjp=lambda g, ans, x: np.ones(5))
    x = yaad.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(ValueError, match="bad_sum") as e:
        bad(x).backward()
    assert "(5,)" in str(e.value) and "(3,)" in str(e.value)


def test_forward_error_is_named():
    picky = yaad.op(lambda x: np.linalg.cholesky(x), name="picky",
                    vjp=lambda g, ans, x: g)
    with pytest.raises(np.linalg.LinAlgError, match="picky"):
        picky(yaad.tensor(-np.eye(2), requires_grad=True))


# ---- yaad.Function ----------------------------------------------------------------------


class Exp(yaad.Function):
    @staticmethod
    def forward(ctx, x):
        y = np.exp(x)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * yaad.conj(y)

    @staticmethod
    def jvp(ctx, t):
        (y,) = ctx.saved_tensors
        return t * y


class MulAdd(yaad.Function):
    """a * b + c with c a Python number: two tensor inputs, one constant."""

    @staticmethod
    def forward(ctx, a, b, c):
        ctx.save_for_backward(a, b)
        ctx.c = c
        return a * b + c

    @staticmethod
    def backward(ctx, g):
        a, b = ctx.saved_tensors
        ga = g * yaad.conj(b) if ctx.needs_input_grad[0] else None
        gb = g * yaad.conj(a) if ctx.needs_input_grad[1] else None
        return ga, gb, None


class SplitScale(yaad.Function):
    """Two outputs: 2 * x[:k] and 3 * x[k:]."""

    @staticmethod
    def forward(ctx, x, k):
        ctx.k = k
        return 2 * x[:k], 3 * x[k:]

    @staticmethod
    def backward(ctx, ga, gb):
        return yaad.concatenate([2 * ga, 3 * gb]), None


def test_function_gradients_real_and_complex():
    x = yaad.tensor([0.0, 1.0], requires_grad=True)
    y = Exp.apply(x)
    assert y.grad_fn.name == "Exp"
    yaad.sum(y).backward()
    np.testing.assert_allclose(x.grad, np.exp([0.0, 1.0]))
    for v in (rng.standard_normal(3), rng.standard_normal(3) + 1j * rng.standard_normal(3)):
        assert gradcheck(Exp.apply, [v], check_forward_ad=True)
        assert gradgradcheck(Exp.apply, [v], check_forward_ad=True)


def test_function_on_arrays_returns_arrays():
    out = Exp.apply(np.array([0.0]))
    assert type(out) is np.ndarray and out[0] == 1.0


def test_function_needs_input_grad_and_constants():
    a = yaad.tensor([2.0, 3.0], requires_grad=True)
    b = yaad.tensor([5.0, 7.0])
    out = MulAdd.apply(a, b, 1.0)
    np.testing.assert_array_equal(out.data, [11.0, 22.0])
    yaad.sum(out).backward()
    np.testing.assert_array_equal(a.grad, [5.0, 7.0])
    assert b.grad is None
    assert gradgradcheck(lambda a, b: MulAdd.apply(a, b, 2.0),
                         [rng.standard_normal(2), rng.standard_normal(2) * 1j + 1])


def test_function_several_outputs_and_unused_output():
    x = yaad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a, b = SplitScale.apply(x, 1)
    yaad.sum(b).backward()  # a gets no gradient: it arrives as zeros
    np.testing.assert_array_equal(x.grad, [0.0, 3.0, 3.0])


def test_function_wrong_number_or_shape_of_gradients():
    class TooFew(yaad.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g

    class WrongShape(yaad.Function):
        @staticmethod
        def forward(ctx, a):
            return np.sum(a)

        @staticmethod
        def backward(ctx, g):
            return np.ones(4)

    a = yaad.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="TooFew.backward returned an incorrect number "
                       r"of gradients \(expected 2, got 1\)"):
        TooFew.apply(a, a).sum().backward()
    with pytest.raises(ValueError, match="WrongShape"):
        WrongShape.apply(a).backward()


def test_function_in_forward_mode():
    x, v = np.array([0.5, 1.5]), np.array([1.0, -1.0])
    _, t = F.jvp(Exp.apply, (x,), (v,))
    np.testing.assert_allclose(t, np.exp(x) * v)
    np.testing.assert_allclose(F.hessian(lambda x: yaad.sum(Exp.apply(x)))(x),
                               np.diag(np.exp(x)))
    with pytest.raises(NotImplementedError, match="MulAdd"):
        F.jvp(lambda a: MulAdd.apply(a, a, 0.0), (x,), (v,))


# ---- yaad.testing -----------------------------------------------------------------------


def test_gradcheck_catches_a_wrong_rule_and_names_the_input():
    wrong = yaad.op(lambda x, y: x * np.sin(y), name="wrong",
                    vjp=(lambda g, ans, x, y: g * yaad.sin(y),
                         lambda g, ans, x, y: g * x * yaad.sin(y)))  # should be cos
    x, y = rng.standard_normal(3), rng.standard_normal((2, 3))
    with pytest.raises(GradcheckError) as e:
        gradcheck(lambda first, second: wrong(first, second), [x, y])
    msg = str(e.value)
    assert "input 1 ('second')" in msg and "worst entry" in msg
    assert "analytical" in msg and "numerical" in msg
    assert gradcheck(lambda a, b: wrong(a, b), [x, y], raise_exception=False) is False


def test_gradcheck_catches_a_wrong_jvp_and_a_wrong_second_derivative():
    wrong_jvp = yaad.op(np.sin, name="wrong_jvp", vjp=lambda g, ans, x: g * yaad.cos(x),
                        jvp=lambda t, ans, x: t * yaad.sin(x))
    x = rng.standard_normal(3)
    assert gradcheck(wrong_jvp, [x])
    with pytest.raises(GradcheckError, match="Jacobian-vector product"):
        gradcheck(wrong_jvp, [x], check_forward_ad=True)
    # right first derivative, but written with NumPy on the data: no second derivative
    opaque = yaad.op(np.sin, name="opaque",
                     vjp=lambda g, ans, x: g * np.cos(x.data if isinstance(x, yaad.Tensor)
                                                      else x))
    assert gradcheck(opaque, [x])
    with pytest.raises(GradcheckError, match="second derivatives"):
        gradgradcheck(opaque, [x])


def test_gradcheck_complex_wrong_conjugation_is_caught():
    # the holomorphic VJP is g * conj(f'(z)); forgetting the conj is a classic mistake
    sq = yaad.op(lambda z: z * z, name="sq_noconj", vjp=lambda g, ans, z: g * 2 * z)
    z = rng.standard_normal(2) + 1j * rng.standard_normal(2)
    with pytest.raises(GradcheckError, match="input 0"):
        gradcheck(sq, [z])


def test_gradcheck_tolerances_and_eps():
    f = lambda x: yaad.exp(x) * 1e3  # noqa: E731
    x = np.array([2.0])
    assert gradcheck(f, [x], eps=1e-5, atol=1e-3, rtol=1e-5)
    assert not gradcheck(f, [x], eps=1e-1, atol=1e-6, rtol=1e-9, raise_exception=False)


# ---- the documented example --------------------------------------------------------------


def test_custom_op_example(capsys):
    ex = load_example("custom_op")
    r = ex.main()
    a = ex.positive_definite(np.random.default_rng(0), 4)
    np.testing.assert_allclose(r["logdet"], np.linalg.slogdet(a)[1])
    np.testing.assert_allclose(r["grad"], np.linalg.inv(a))
    assert "passed" in capsys.readouterr().out
    # batched, and called through the same machinery as built-ins
    b = ex.positive_definite(rng, 3, batch=(2,))
    np.testing.assert_allclose(ex.logdet(b), np.linalg.slogdet(b)[1])
    assert yaad.registry["logdet"].fn is ex.logdet


def test_custom_ops_doc_code_matches_example():
    # docs/custom-ops.md shows the example's code: keep them the same
    doc = (EXAMPLES.parent / "docs" / "custom-ops.md").read_text()
    code = (EXAMPLES / "custom_op.py").read_text()
    for fragment in ("def _logdet(a):", "def _logdet_vjp(g, ans, a):",
                     "def _logdet_jvp(t, ans, a):",
                     "from yaad.extend import op",
                     'logdet = op(_logdet, name="logdet", vjp=_logdet_vjp, jvp=_logdet_jvp,'
                     ' save_ans=False,\n            batch="broadcast")'):
        assert fragment in doc and fragment in code, fragment


def test_function_outputs_beside_arrays_and_second_derivatives():
    class Poly(yaad.Function):
        @staticmethod
        def forward(ctx, x):
            y, z = x ** 3, np.floor(x)
            ctx.mark_non_differentiable(z)
            ctx.set_materialize_grads(False)
            ctx.save_for_backward(x)
            return y, z, "cubed", None

        @staticmethod
        def backward(ctx, gy, gz, gs, gn):
            assert gz is None and gs is None and gn is None
            (x,) = ctx.saved_tensors
            return 3 * x * x * gy

    x = yaad.tensor([0.5, 2.0], requires_grad=True)
    y, z, s, n = Poly.apply(x)
    assert (s, n) == ("cubed", None) and not z.requires_grad and y.requires_grad
    (g,) = yaad.autograd.grad(y.sum(), x, create_graph=True)
    (h,) = yaad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    np.testing.assert_allclose(h, 6 * x.data)


def test_once_differentiable_names_the_backward_it_refuses_to_differentiate():
    class Sq(yaad.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @yaad.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    x = yaad.tensor([1.0, 3.0], requires_grad=True)
    (g,) = yaad.autograd.grad((Sq.apply(x) * x).sum(), x, create_graph=True)
    np.testing.assert_allclose(g.data, 3 * x.data ** 2)
    with pytest.raises(RuntimeError, match=r"Sq\.backward is marked @once_differentiable"):
        g.sum().backward()


def test_op_reads_keeps_only_what_the_needed_rules_read():
    scale = yaad.op(lambda x, s: x * s, name="scale_by",
                    vjp=(lambda g, ans, x, s: g * s, lambda g, ans, x, s: g * x),
                    reads=[[False, True], [True, False]])
    x = yaad.tensor([1.0, 2.0], requires_grad=True)
    s = np.array([3.0, 4.0])
    h = x * 1
    y = scale(h, s)
    assert isinstance(y.grad_fn.args[0], yaad.ShapeDtype) and y.grad_fn.args[1] is s  # not h
    h.add_(10)  # so this in-place change cannot spoil the backward
    y.sum().backward()
    np.testing.assert_array_equal(x.grad, s)
    both = scale(x, yaad.tensor(s, requires_grad=True))
    assert both.grad_fn.args[0] is x.data


# A Function that saves its own outputs (PyTorch's semantics): the saved outputs stay
# linked to the graph, so the second derivative sees that they depend on the input. The
# outputs here are a NumPy scalar (the norm r, from np.sqrt of a sum) and an array (u).


class NormDir(yaad.Function):
    """(r, u) = (|x|, x / |x|); backward reads only the saved outputs."""

    @staticmethod
    def forward(ctx, x):
        r = np.sqrt(np.sum(x * x))
        u = x / r
        ctx.save_for_backward(r, u)
        return r, u

    @staticmethod
    def backward(ctx, gr, gu):
        r, u = ctx.saved_tensors
        return gr * u + (gu - u * yaad.sum(u * gu)) / r


class Inv(yaad.Function):
    @staticmethod
    def forward(ctx, x):
        y = 1 / x
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return -g * y * y


def _torch_functions():
    import torch

    class TNormDir(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            r = torch.sqrt(torch.sum(x * x))
            u = x / r
            ctx.save_for_backward(r, u)
            return r, u

        @staticmethod
        def backward(ctx, gr, gu):
            r, u = ctx.saved_tensors
            return gr * u + (gu - u * torch.sum(u * gu)) / r

    class TInv(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = 1 / x
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return -g * y * y

    return torch, TNormDir, TInv


@pytest.mark.parametrize("shape", [(), (1,), (3,)])
def test_function_saving_its_outputs_has_second_derivatives_as_in_torch(shape):
    torch, TNormDir, TInv = _torch_functions()
    x0 = np.asarray(rng.uniform(0.5, 2.0, shape))
    w = rng.standard_normal(shape)

    def loss(lib, norm_dir, inv, x):
        r, u = norm_dir(x)
        return 3.0 * r + lib.sum(u * lib.tensor(w)) + lib.sum(inv(x))

    xt = torch.tensor(x0, requires_grad=True)
    (gt,) = torch.autograd.grad(loss(torch, TNormDir.apply, TInv.apply, xt), xt,
                                create_graph=True)
    ht = np.stack([torch.autograd.grad(gt.reshape(-1)[k], xt, retain_graph=True)[0].numpy()
                   for k in range(x0.size)]).reshape(shape + shape)

    x = yaad.tensor(x0, requires_grad=True)
    (g,) = yaad.autograd.grad(loss(yaad, NormDir.apply, Inv.apply, x), x, create_graph=True)
    h = np.stack([yaad.autograd.grad(g.reshape(-1)[k], x, retain_graph=True)[0]
                  for k in range(x0.size)]).reshape(shape + shape)
    np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h, ht, rtol=1e-10, atol=1e-12)
    assert np.asarray(h).dtype == np.float64 and np.shape(h) == shape + shape

    # the transforms see the same: jacrev of grad, on arrays
    h2 = F.jacrev(F.grad(lambda x: loss(yaad, NormDir.apply, Inv.apply, x)))(x0)
    np.testing.assert_allclose(h2, ht, rtol=1e-10, atol=1e-12)
    # (the Hessian of 1/x alone: 2 / x^3, which a constant saved output turned into 0)
    np.testing.assert_allclose(F.jacrev(F.grad(lambda x: yaad.sum(Inv.apply(x))))(x0),
                               np.diag(2 / x0.reshape(-1) ** 3).reshape(shape + shape),
                               rtol=1e-12)


def _kept_on_ctx(lib):
    """Cube and Exp keeping what backward needs as attributes of ctx (``ctx.x = x``), not
    with save_for_backward: a common way in PyTorch code."""
    base = yaad.Function if lib is yaad else lib.autograd.Function
    exp = np.exp if lib is yaad else lib.exp

    class Cube(base):
        @staticmethod
        def forward(ctx, x):
            ctx.x = x
            ctx.pair = (x, 3.0)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g * ctx.pair[1] * ctx.x ** 2

    class Exp(base):
        @staticmethod
        def forward(ctx, x):
            y = exp(x)
            ctx.y = y
            return y

        @staticmethod
        def backward(ctx, g):
            return g * ctx.y

    return Cube, Exp


def test_inputs_and_outputs_kept_on_ctx_have_second_derivatives_as_in_torch():
    # They were the arrays forward saw, constants to a recorded backward: the second
    # derivative of sum(cube(x)^2 + exp(x)^2) came out 18 x^4 + 2 e^(2x), not 30 x^4 + 4 e^(2x).
    import torch

    x0 = np.array([0.5, 1.0, 1.5])

    def loss(lib, x):
        cube, ex = _kept_on_ctx(lib)
        return (cube.apply(x) ** 2).sum() + (ex.apply(x) ** 2).sum()

    xt = torch.tensor(x0, requires_grad=True)
    (gt,) = torch.autograd.grad(loss(torch, xt), xt, create_graph=True)
    (ht,) = torch.autograd.grad(gt.sum(), xt)
    x = yaad.tensor(x0, requires_grad=True)
    (g,) = yaad.autograd.grad(loss(yaad, x), x, create_graph=True)
    (h,) = yaad.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(g.data, gt.detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(h, ht.numpy(), rtol=1e-13)
    np.testing.assert_allclose(h, 30 * x0 ** 4 + 4 * np.exp(2 * x0), rtol=1e-13)
    np.testing.assert_allclose(F.jacrev(F.grad(lambda x: loss(yaad, x)))(x0), np.diag(ht.numpy()),
                               rtol=1e-13)
    # first order is unchanged, and so are the attributes once backward has run
    cube, _ = _kept_on_ctx(yaad)
    x = yaad.tensor(x0, requires_grad=True)
    y = cube.apply(x)
    ctx = y.grad_fn.kw["ctx"]
    y.sum().backward()
    np.testing.assert_allclose(x.grad, 3 * x0 ** 2, rtol=1e-15)
    assert isinstance(ctx.x, np.ndarray) and isinstance(ctx.pair[0], np.ndarray)

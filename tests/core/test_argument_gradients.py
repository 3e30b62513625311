"""Every argument of the public API that takes a tensor gets its gradient or raises, naming
the argument: none is dropped without a word (a tensor requiring grad passed where no
derivative is implemented used to get None, e.g. an ODE solver's times).

The walk: every public function of ``yaad``, ``yaad.linalg``, ``yaad.fft``, ``yaad.stats``,
``yaad.func``, ``yaad.nn.functional``, ... is

- a case of the op table (``tests/op_cases/``): its arguments that are not
  differentiated (``Case.nondiff``, and every argument of a case without gradient) are
  passed as tensors requiring grad, and each must raise, get a gradient, or give a
  result without a floating point value (nothing to differentiate);
- a probe below (``PROBES``): a call and, for each tensor argument, ``"grad"`` or
  ``"raises"``;
- or listed in ``NOT_WALKED`` with the reason it takes no tensor to differentiate.

A new public function that is in none of them fails ``test_every_public_function_is_walked``.
"""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import yaad
from tests.op_cases import CASES, available, resolve

MODULES = ["", "linalg", "fft", "stats", "func", "nn.functional", "nn.init", "integrate",
           "sparse", "sparse.linalg", "signal", "optimize", "implicit", "autograd"]


def public_functions() -> dict:
    """Public callables (not classes) by dotted path, e.g. ``"linalg.det"``."""
    out = {}
    for m in MODULES:
        mod = resolve(m) if m else yaad
        names = getattr(mod, "__all__", None) or [n for n in dir(mod) if not n.startswith("_")]
        for n in names:
            obj = getattr(mod, n, None)
            if obj is None or inspect.isclass(obj) or inspect.ismodule(obj) or not callable(obj):
                continue
            out[f"{m}.{n}" if m else n] = obj
    return out


# ---- the probes: a call, and what each tensor argument gets -----------------------------

A = np.array([[4.0, 1.0], [1.0, 3.0]])
B = np.array([1.0, 2.0])
F = yaad.nn.functional
SL = yaad.sparse.linalg


def _loss(out):
    """A real scalar of the outputs that are tensors requiring grad."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    outs = [o for o in outs if isinstance(o, yaad.Tensor) and o.requires_grad]
    return sum(yaad.sum(yaad.real(o) if np.iscomplexobj(o.data) else o) for o in outs)


PROBES = {
    "concat": (lambda t: yaad.concat([t("x1", [1.0, 2.0]), t("x2", [3.0])]),
               {"x1": "grad", "x2": "grad"}),
    **{f"unique_{kind}": (
        lambda t, kind=kind: getattr(yaad, f"unique_{kind}")(t("x", [2.0, 1.0, 2.0]))[0],
        {"x": "grad"}) for kind in ("all", "counts", "inverse")},
    # name: (call(t), {argument: "grad" | "raises"}); t(argument, value) is the value as a
    # tensor, requiring grad when the argument is the one probed
    "nn.functional.binary_cross_entropy": (
        lambda t: F.binary_cross_entropy(t("input", [0.3, 0.6]), t("target", [0.0, 1.0]),
                                         t("weight", [1.0, 2.0])),
        {"input": "grad", "target": "grad", "weight": "grad"}),
    "nn.functional.binary_cross_entropy_with_logits": (
        lambda t: F.binary_cross_entropy_with_logits(
            t("input", [0.3, -0.6]), t("target", [0.0, 1.0]), t("weight", [1.0, 2.0]),
            pos_weight=t("pos_weight", [1.5, 0.5])),
        {"input": "grad", "target": "grad", "weight": "grad", "pos_weight": "grad"}),
    "nn.functional.cross_entropy": (
        lambda t: F.cross_entropy(t("input", [[0.1, 0.5, -0.2], [0.3, 0.0, 0.2]]),
                                  np.array([0, 2]), t("weight", [1.0, 2.0, 0.5])),
        {"input": "grad", "weight": "grad"}),
    "nn.functional.nll_loss": (
        lambda t: F.nll_loss(t("input", [[-1.1, -0.5, -2.0], [-0.3, -1.0, -2.2]]),
                             np.array([0, 2]), t("weight", [1.0, 2.0, 0.5])),
        {"input": "grad", "weight": "grad"}),
    "nn.functional.dropout": (
        lambda t: F.dropout(t("input", [1.0, 2.0, 3.0]), t("p", 0.5),
                            generator=np.random.default_rng(0)),
        {"input": "grad", "p": "raises"}),
    "nn.functional.embedding": (
        lambda t: F.embedding(np.array([0, 2]), t("weight", np.ones((3, 2)))),
        {"weight": "grad"}),
    "nn.functional.gelu": (lambda t: F.gelu(t("input", [0.5, -1.0])), {"input": "grad"}),
    "nn.functional.l1_loss": (
        lambda t: F.l1_loss(t("input", [0.5, -1.0]), t("target", [0.0, 1.0])),
        {"input": "grad", "target": "grad"}),
    "nn.functional.mse_loss": (
        lambda t: F.mse_loss(t("input", [0.5, -1.0]), t("target", [0.0, 1.0])),
        {"input": "grad", "target": "grad"}),
    "nn.functional.layer_norm": (
        lambda t: F.layer_norm(t("input", [[1.0, 2.0, 4.0], [0.0, 1.0, -1.0]]), (3,),
                               t("weight", [1.0, 2.0, 3.0]), t("bias", [0.0, 0.1, 0.2]),
                               t("eps", 1e-5)),
        {"input": "grad", "weight": "grad", "bias": "grad", "eps": "grad"}),
    "nn.functional.linear": (
        lambda t: F.linear(t("input", [[1.0, 2.0]]), t("weight", A), t("bias", B)),
        {"input": "grad", "weight": "grad", "bias": "grad"}),
    "nn.functional.softmax": (lambda t: F.softmax(t("input", [0.5, -1.0]), 0) * B,
                              {"input": "grad"}),
    "nn.functional.log_softmax": (lambda t: F.log_softmax(t("input", [0.5, -1.0]), 0) * B,
                                  {"input": "grad"}),
    "nn.functional.softplus": (
        lambda t: F.softplus(t("input", [0.5, -1.0]), t("beta", 2.0), t("threshold", 20.0)),
        {"input": "grad", "beta": "grad", "threshold": "raises"}),
    "sparse.linalg.cg": (lambda t: SL.cg(A, t("b", B), t("x0", [0.0, 0.0]))[0],
                         {"b": "grad", "x0": "raises"}),
    "sparse.linalg.minres": (lambda t: SL.minres(A, t("b", B), t("x0", [0.0, 0.0]))[0],
                             {"b": "grad", "x0": "raises"}),
    "sparse.linalg.gmres": (lambda t: SL.gmres(t("A", A), t("b", B), t("x0", [0.0, 0.0]))[0],
                            {"A": "grad", "b": "grad", "x0": "raises"}),
    "sparse.linalg.spsolve": (lambda t: SL.spsolve(A, t("b", B)), {"b": "grad"}),
    "sparse.linalg.eigsh": (
        lambda t: SL.eigsh(t("A", np.diag([1.0, 2.0, 3.0, 5.0])), k=1,
                           v0=t("v0", [1.0, 1.0, 1.0, 1.0]))[0],
        {"A": "grad", "v0": "raises"}),
    "sparse.linalg.eigs": (
        lambda t: SL.eigs(t("A", np.diag([1.0, 2.0, 3.0, 5.0])), k=1,
                          v0=t("v0", [1.0, 1.0, 1.0, 1.0]))[0],
        {"A": "grad", "v0": "raises"}),
    "sparse.linalg.expm_multiply": (
        lambda t: SL.expm_multiply(t("A", A * 0.1), t("B", B)), {"A": "grad", "B": "grad"}),
    "implicit.fixed_point": (
        lambda t: yaad.implicit.fixed_point(lambda x, th: yaad.cos(x) * th, t("x0", 1.0),
                                            t("theta", 0.5)),
        {"x0": "raises", "theta": "grad"}),
    "implicit.root": (
        lambda t: yaad.implicit.root(lambda x, th: x * x * x + x - th, t("x0", 0.0),
                                     t("theta", 2.0)),
        {"x0": "raises", "theta": "grad"}),
    "optimize.minimize": (
        lambda t: yaad.optimize.minimize(lambda x, c: yaad.sum((x - c) ** 2), t("x0", B),
                                         args=(t("args", [1.0, 1.0]),)),
        {"x0": "raises", "args": "raises"}),
    "integrate.odeint": (
        lambda t: yaad.integrate.odeint(lambda y, s, k: -k * y, t("y0", [1.0]),
                                        t("t", [0.0, 0.5]), t("k", 0.7), rtol=1e-6,
                                        compiled=False),  # (the arguments, not compile)
        {"y0": "grad", "k": "grad", "t": "grad"}),
    "integrate.solve_ivp": (
        lambda t: yaad.integrate.solve_ivp(lambda s, y, k: -k * y, t("t_span", [0.0, 0.5]),
                                           t("y0", [1.0]), t_eval=t("t_eval", [0.0, 0.25, 0.5]),
                                           args=(t("k", 0.7),), rtol=1e-6).y,
        {"y0": "grad", "k": "grad", "t_eval": "grad", "t_span": "grad"}),
    "integrate.solve_ivp#no t_eval": (
        lambda t: yaad.integrate.solve_ivp(lambda s, y: -0.7 * y, t("t_span", [0.0, 0.5]),
                                           t("y0", [1.0]), rtol=1e-6).y,
        {"y0": "grad", "t_span": "grad"}),
    "append": (lambda t: yaad.append(t("arr", B), t("values", [3.0])),
               {"arr": "grad", "values": "grad"}),
    "atleast_1d": (lambda t: yaad.atleast_1d(t("x", 2.0)), {"x": "grad"}),
    "atleast_2d": (lambda t: yaad.atleast_2d(t("x", B)), {"x": "grad"}),
    "atleast_3d": (lambda t: yaad.atleast_3d(t("x", B)), {"x": "grad"}),
    "broadcast_arrays": (lambda t: yaad.broadcast_arrays(t("a", B), t("b", A)),
                         {"a": "grad", "b": "grad"}),
    "hsplit": (lambda t: yaad.hsplit(t("x", A), 2), {"x": "grad"}),
    "vsplit": (lambda t: yaad.vsplit(t("x", A), 2), {"x": "grad"}),
    "dsplit": (lambda t: yaad.dsplit(t("x", np.ones((1, 1, 2))), 2), {"x": "grad"}),
    "matvec": (lambda t: yaad.matvec(t("x1", A), t("x2", B)), {"x1": "grad", "x2": "grad"}),
    "vecmat": (lambda t: yaad.vecmat(t("x1", B), t("x2", A)), {"x1": "grad", "x2": "grad"}),
    "linspace": (lambda t: yaad.linspace(t("start", 0.0), t("stop", 1.0), 3),
                 {"start": "grad", "stop": "grad"}),
}

# Public functions that take no tensor to differentiate, and why.
_MADE = ("makes a tensor from given values or shapes (np.asarray refuses a tensor that "
         "requires grad)")
_TRANSFORM = ("a transform or mode: it differentiates a function; tests/test_func.py walks "
              "its outputs")
_INFRA = "autograd or library machinery, not a computation on tensor values"
_INIT = "an initializer: writes into a parameter without recording (as torch.nn.init)"
_DISTRIBUTION = ("a distribution object: its methods are cases of the op table "
                 "(stats.norm.logpdf, ...)")
NOT_WALKED = {
    **dict.fromkeys(["arange", "array", "as_tensor", "asarray", "tensor", "from_numpy", "empty",
                     "empty_like", "eye", "identity", "full", "full_like", "ones", "ones_like",
                     "zeros", "zeros_like", "rand", "randn", "fft.fftfreq", "fft.rfftfreq",
                     "sparse.asarray", "sparse.coo_array"], _MADE),
    **dict.fromkeys(["func.grad", "func.value_and_grad", "func.vjp", "func.jvp", "func.jacrev",
                     "func.jacfwd", "func.hessian", "func.hvp", "func.linearize", "func.vmap",
                     "checkpoint", "compile", "autograd.grad", "autograd.backward"], _TRANSFORM),
    **dict.fromkeys(["op", "elementwise_op", "once_differentiable",
                     "autograd.once_differentiable", "is_grad_enabled", "is_tensor", "save",
                     "load", "compute", "to", "unwrap_index", "expand_reduced",
                     "sparse.is_operator", "sparse.linalg.LinearOperator",
                     "sparse.linalg.aslinearoperator"], _INFRA),
    **dict.fromkeys(["nn.init.calculate_gain", "nn.init.constant_", "nn.init.default_generator",
                     "nn.init.fan_in_and_fan_out", "nn.init.kaiming_normal_",
                     "nn.init.kaiming_uniform_", "nn.init.manual_seed", "nn.init.normal_",
                     "nn.init.ones_", "nn.init.uniform_", "nn.init.xavier_normal_",
                     "nn.init.xavier_uniform_", "nn.init.zeros_"], _INIT),
    **dict.fromkeys([f"stats.{d}" for d in ("beta", "binom", "cauchy", "chi2", "dirichlet",
                                            "expon", "gamma", "laplace", "lognorm",
                                            "multivariate_normal", "norm", "poisson", "t",
                                            "uniform")], _DISTRIBUTION),
    "nonzero": "an integer result (indices): nothing to differentiate",
    **dict.fromkeys(["isdtype", "result_type"], "takes dtypes: nothing to differentiate"),
    "from_dlpack": _MADE,
    **dict.fromkeys(["allclose", "array_equal"], "a Python bool: nothing to differentiate"),
}


def _case_functions() -> set:
    ids = set()
    for c in CASES.values():
        if available(c.path):
            ids.update({id(c.fn), id(getattr(c.fn, "__wrapped__", None))})
    return ids


def test_every_public_function_is_walked():
    cases = {c.path for c in CASES.values() if available(c.path)}
    probed = {p.split("#")[0] for p in PROBES}
    ids = _case_functions()
    missing = sorted(p for p, fn in public_functions().items()
                     if p not in cases and p not in probed and p not in NOT_WALKED
                     and id(fn) not in ids and p.replace("func.", "implicit.") not in probed)
    assert not missing, (
        f"public functions no walk covers: {missing}. Add a case to tests/op_cases/ (the "
        f"module of its family), a probe to PROBES here, or list them in NOT_WALKED with "
        f"the reason")
    stale = sorted(p for p in [*probed, *NOT_WALKED] if not available(p))
    assert not stale, f"walked names that are not public: {stale}"
    assert len(PROBES) >= 35 and len(cases) >= 300


def _run(call, active):
    made = {}

    def t(name, value):
        made[name] = yaad.tensor(np.asarray(value, dtype=float), requires_grad=name in active)
        return made[name]

    return call(t), made


@pytest.mark.parametrize("path", sorted(PROBES))
def test_each_argument_gets_its_gradient_or_raises_naming_it(path):
    call, expect = PROBES[path]
    for name, kind in expect.items():
        if kind == "raises":
            with pytest.raises(TypeError, match=f"argument '{name}' requires grad, but .* "
                                                f"has no derivative"):
                _run(call, {name})
            continue
        out, made = _run(call, {name})
        (g,) = yaad.autograd.grad(_loss(out), made[name])
        assert g is not None and np.shape(g) == made[name].shape, (path, name)
        assert np.all(np.isfinite(g)), (path, name)



def _not_differentiated(case) -> bool:
    return bool(case.nondiff) or case.grad == "none"


WALKED_CASES = sorted(p for p, c in CASES.items() if available(p) and _not_differentiated(c))


@pytest.mark.parametrize("path", WALKED_CASES)
def test_an_argument_without_derivative_raises_or_gives_no_value_to_differentiate(path):
    """Each argument of a case that is not differentiated, as a tensor requiring grad:
    the call raises naming it, or the argument gets a gradient, or the result has no
    floating point value (a comparison, an index)."""
    case = CASES[path]

    @settings(max_examples=1, derandomize=True, database=None, deadline=None,
              suppress_health_check=list(HealthCheck))
    @given(st.data())
    def walk(data):
        dtype = np.dtype(np.float64) if np.float64 in map(np.dtype, case.dtypes) else \
            np.dtype(case.dtypes[0])
        call = case.draw(data, dtype)
        positions = [i for i, a in enumerate(call.args)
                     if isinstance(a, np.ndarray) and a.dtype.kind in "fc"
                     and (i in case.nondiff or case.grad == "none")]
        for i in positions:
            args = list(call.args)
            args[i] = yaad.tensor(args[i], requires_grad=True)
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    out = case.fn(*args, **call.kwargs)
            except (TypeError, ValueError, NotImplementedError) as e:
                assert str(i) in str(e) or "requires grad" in str(e) or "gradient" in str(e), e
                continue
            outs = out if isinstance(out, (tuple, list)) else (out,)
            floats = [o for o in outs if isinstance(o, yaad.Tensor) and o.requires_grad]
            if not floats:
                assert all(not isinstance(o, yaad.Tensor) or o.dtype.kind not in "fc"
                           for o in outs), (path, i, "a float result without a gradient")
                continue
            (g,) = yaad.autograd.grad(_loss(out), args[i], allow_unused=True)
            assert g is not None, (path, i, "the argument's gradient was dropped")

    walk()

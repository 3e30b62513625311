"""yaad.detect_anomaly: a NaN or inf in backward names the forward op and its call site."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import yaad
from yaad.core.grad_mode import state
from yaad.modes.anomaly import AnomalyError, forward_site

# detect_anomaly() warns on entry that it is slow (as PyTorch's): expected here.
pytestmark = pytest.mark.filterwarnings("ignore:anomaly detection is on:UserWarning")


def sqrt_at_zero():
    x = yaad.tensor([0.0, 4.0], requires_grad=True)
    y = yaad.sqrt(x)  # the offending line: d sqrt / dx = inf at 0
    return x, yaad.sum(y * 2)


def test_names_the_op_and_the_line():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with yaad.detect_anomaly():
            x, loss = sqrt_at_zero()
            with pytest.raises(AnomalyError) as e:
                loss.backward()
    msg = str(e.value)
    assert "'sqrt'" in msg and "input 0" in msg and "inf" in msg
    assert "test_anomaly.py" in msg and "in sqrt_at_zero" in msg
    assert "y = yaad.sqrt(x)  # the offending line" in msg
    assert state.anomaly is False and not state.modes_on


def test_nan_is_reported_as_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with yaad.detect_anomaly():
            x = yaad.tensor([-1.0], requires_grad=True)
            y = yaad.log(x) * 0 + x  # log(-1) = nan; its gradient 1/x is finite ...
            z = yaad.sqrt(y - x)    # ... sqrt(nan) gives nan in the gradient
            with pytest.raises(AnomalyError, match="'sqrt' for its input 0 contains nan"):
                yaad.sum(z).backward()


def test_the_first_bad_rule_is_blamed_not_its_consumers():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with yaad.detect_anomaly():
            x = yaad.tensor([0.0], requires_grad=True)
            y = yaad.exp(yaad.sqrt(x) + 1)  # exp's rule is fine; sqrt's is not
            with pytest.raises(AnomalyError, match="'sqrt'"):
                yaad.sum(y).backward()


def test_nothing_raised_without_the_mode():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x, loss = sqrt_at_zero()
        loss.backward()
    assert np.isinf(x.grad[0])


def test_finite_gradients_pass_and_match():
    with yaad.detect_anomaly():
        x = yaad.tensor([1.0, 4.0], requires_grad=True)
        yaad.sum(yaad.sqrt(x) * x).backward()
    np.testing.assert_allclose(x.grad, 1.5 * np.sqrt([1.0, 4.0]))


def test_check_nan_false_records_sites_only():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with yaad.detect_anomaly(check_nan=False):
            x, loss = sqrt_at_zero()
            loss.backward()
    assert np.isinf(x.grad[0])
    site = forward_site(loss.grad_fn)
    assert "test_anomaly.py" in site and "sqrt_at_zero" in site


def test_decorator_and_nesting():
    @yaad.detect_anomaly()
    def step():
        x, loss = sqrt_at_zero()
        loss.backward()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(AnomalyError):
            step()
        with yaad.detect_anomaly(check_nan=False):
            with pytest.raises(AnomalyError):
                step()  # the inner mode checks
            assert state.anomaly  # the outer mode is back
    assert state.anomaly is False


def test_second_order_and_multi_output_ops_under_the_mode():
    with yaad.detect_anomaly():
        a = yaad.tensor(np.array([[2.0, 1.0], [1.0, 3.0]]), requires_grad=True)
        w, v = yaad.linalg.eigh(a)
        (g,) = yaad.autograd.grad(yaad.sum(w * w), a, create_graph=True)
        (h,) = yaad.autograd.grad(yaad.sum(g), a)
    assert np.all(np.isfinite(h))
    np.testing.assert_allclose(g.data, 2 * a.data, atol=1e-12)  # sum(w^2) = |a|_F^2


def test_site_is_the_user_frame_not_the_library():
    with yaad.detect_anomaly(check_nan=False):
        x = yaad.tensor([[1.0, 2.0]], requires_grad=True)
        y = yaad.mean(x)  # a composite: its ops run inside yaad's reductions module
    site = forward_site(y.grad_fn)
    assert "test_anomaly.py" in site and "yaad.mean(x)" in site
    assert "reductions.py" not in site


def test_a_graph_recorded_before_is_checked_by_a_backward_inside():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        x, loss = sqrt_at_zero()  # recorded without the mode: no call site
        with yaad.detect_anomaly(), pytest.raises(AnomalyError, match="(?s)'sqrt'.*unknown"):
            loss.backward()


def test_a_backward_outside_the_mode_is_not_checked():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with yaad.detect_anomaly():
            x, loss = sqrt_at_zero()
        loss.backward()  # as in PyTorch: the check belongs to the backward pass
    assert np.isinf(x.grad[0])


def test_entering_the_mode_warns_that_it_is_slow():
    with pytest.warns(UserWarning, match="anomaly detection is on"), yaad.detect_anomaly():
        pass

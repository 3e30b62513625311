"""PyTorch's autograd mechanics, program by program, with PyTorch 2.13 as the oracle.

Each program below runs once in PyTorch and once in yaad (see ``harness.py``); their
results, logs (hook calls, flags), warnings and errors must agree. Where yaad differs on
purpose, the program names the difference (``differs=``), documented with its reason in
docs/pytorch-map.md ("Deliberate differences"), and both sides are asserted as stated.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.conformance.harness import PROGRAMS, area, program, raised, returned, value, warned

# ---- graph building ---------------------------------------------------------------------
area("graph building")


@program
def leaf_flags(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([1.0, 2.0])
    y = x * c
    return [x.is_leaf, x.requires_grad, x.grad_fn is None, c.is_leaf, c.requires_grad,
            y.is_leaf, y.requires_grad, y.grad_fn is None]


@program
def constants_do_not_require_grad(L, log):
    c = L.tensor([1.0, 2.0])
    y = (c * 2).sin().sum()
    return [y.requires_grad, y.is_leaf, y.grad_fn is None]


@program
def one_input_requiring_grad_is_enough(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([3.0, 4.0])
    return [(c + x).requires_grad, (c * c + x * 0).requires_grad, (c - c).requires_grad]


@program
def detach_shares_data_and_cuts(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    d = y.detach()
    with L.no_grad():
        d += 1  # changes y's memory too
    return [d.requires_grad, d.is_leaf, d.grad_fn is None, y, d]


@program(differs="error-types", torch_side=raised(RuntimeError, "floating point"),
         yaad_side=raised(TypeError, "floating point"))
def requires_grad_on_integers_raises(L, log):
    L.tensor([1, 2]).requires_grad_()


@program(raises=RuntimeError, meaning="leaf")
def requires_grad_false_on_a_non_leaf_raises(L, log):
    x = L.tensor([1.0], requires_grad=True)
    (x * 2).requires_grad_(False)


@program
def requires_grad_false_on_a_leaf(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.requires_grad_(False)
    return [x.requires_grad, (x * 2).requires_grad]


@program
def requires_grad_after_creation_records_later_ops(L, log):
    x = L.tensor([1.0, 2.0])
    y = x * 2
    x.requires_grad_()
    z = x * 3
    z.sum().backward()
    return [y.requires_grad, z.requires_grad, x.grad]


@program
def backward_of_a_scalar(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (x * x).sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning="scalar")
def backward_of_a_non_scalar_needs_a_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).backward()


@program
def backward_of_a_non_scalar_with_a_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(L.tensor([1.0, 10.0]))
    return x.grad


@program(raises=RuntimeError, meaning="does not require grad")
def backward_of_a_constant_raises(L, log):
    L.tensor([1.0]).sum().backward()


@program
def backward_of_a_leaf_itself(L, log):
    x = L.tensor(2.0, requires_grad=True)
    x.backward()
    return x.grad


@program
def backward_of_a_one_element_vector(L, log):
    x = L.tensor([3.0], requires_grad=True)
    (x * x).backward()
    return x.grad


@program(raises=RuntimeError, meaning="shape")
def gradient_of_the_wrong_shape_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).backward(L.tensor([1.0, 2.0, 3.0]))


@program
def a_leaf_used_twice_sums(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * x + x.sin() * x).sum().backward()
    return x.grad


@program
def diamond_graph(L, log):
    x = L.tensor([0.5, -1.5], requires_grad=True)
    a = x.exp()
    b = a * 2
    c = a.sin()
    (b * c).sum().backward()
    return x.grad


@program
def broadcasting_reduces_gradients(L, log):
    x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    b = L.tensor([1.0, -1.0, 2.0], requires_grad=True)
    s = L.tensor([[2.0]], requires_grad=True)
    ((x + b) * s).pow(2).sum().backward()
    return [x.grad, b.grad, s.grad]


@program
def float32_stays_float32(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True, dtype="float32")
    w = L.tensor([0.5, 0.25], requires_grad=True, dtype="float32")
    y = (x * w).exp().sum()
    y.backward()
    return [y, x.grad, w.grad]


@program
def item_and_tolist(L, log):
    x = L.tensor([1.5, 2.5], requires_grad=True)
    s = (x * 2).sum()
    return [s.item(), (x * 1).tolist()]


@program
def operations_under_no_grad_do_not_record(L, log):
    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        y = x * 2
    return [y.requires_grad, y.is_leaf, y.grad_fn is None]


@program(raises=RuntimeError, meaning="does not require grad")
def backward_of_a_result_made_under_no_grad_raises(L, log):
    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        y = (x * 2).sum()
    y.backward()


@program
def integer_results_do_not_require_grad(L, log):
    x = L.tensor([1.5, -2.5], requires_grad=True)
    return [(x > 0).requires_grad, x.argmax().requires_grad]


@program
def a_long_chain(L, log):
    x = L.tensor([1.0], requires_grad=True)
    y = x
    for _ in range(5000):
        y = y * 0.999 + 0.001
    y.sum().backward()
    return x.grad


@program
def matmul_gradients(L, log):
    a = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    b = L.tensor([[0.5, -1.0], [2.0, 0.0]], requires_grad=True)
    (a @ b).sum().backward()
    return [a.grad, b.grad]


@program
def indexing_gradients(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x[1:3].sum() + x[[0, 0, 3]].sum() * 2 + x[x > 2.5].sum()
    y.backward()
    return x.grad


# ---- accumulation -----------------------------------------------------------------------
area("accumulation")


@program
def gradients_accumulate_over_backward_calls(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    log.append(x.grad)
    (x * 3).sum().backward()
    return x.grad


@program
def grad_is_accumulated_in_place(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    first = x.grad
    (x * 5).sum().backward()
    return [first, x.grad, first is x.grad]


@program
def grad_set_to_none_starts_over(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * 2).sum().backward()
    x.grad = None
    (x * 5).sum().backward()
    return x.grad


@program
def grad_assigned_by_hand_is_added_to(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.grad = L.tensor([10.0, 20.0])
    (x * 2).sum().backward()
    return x.grad


@program(differs="error-types", torch_side=raised(RuntimeError, "size"),
         yaad_side=raised(ValueError, "shape"))
def grad_of_the_wrong_shape_is_refused(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.grad = L.tensor([1.0, 2.0, 3.0])


@program
def gradients_of_separate_graphs_add(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = (x * 2).sum()
    b = (x ** 3).sum()
    a.backward()
    b.backward()
    return x.grad


@program
def several_roots_with_autograd_backward(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = x.sin()
    L.backward([a.sum(), b], [None, L.tensor([1.0, -1.0])])
    return x.grad


@program
def first_gradient_does_not_alias_the_given_one(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    g = L.tensor([1.0, 1.0])
    (x * 1).backward(g)
    with L.no_grad():
        g += 5
    return [x.grad, g]


@program
def two_leaves_never_share_a_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([3.0, 4.0], requires_grad=True)
    (x + y).sum().backward()
    return [x.grad, y.grad, x.grad is y.grad]


@program
def accumulation_of_complex_gradients(L, log):
    z = L.tensor([1 + 2j, -1j], requires_grad=True)
    (z * z.conj()).real.sum().backward()
    (z.abs()).sum().backward()
    return z.grad


@program
def accumulation_in_float32(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True, dtype="float32")
    for _ in range(3):
        (x * 0.1).sum().backward()
    return x.grad


# ---- hooks ------------------------------------------------------------------------------
area("hooks")


@program
def hook_on_a_leaf_sees_the_total_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: log.append(g))
    (x * x + x * 3).sum().backward()
    return x.grad


@program
def hook_on_a_leaf_replaces_the_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (x * x).sum().backward()
    return x.grad


@program
def hook_on_an_intermediate_replaces_what_flows_on(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: log.append(g) or g * 2)
    (y * y).sum().backward()
    return x.grad


@program
def hooks_run_in_order_of_registration(L, log):
    x = L.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append(("a", g)) or g + 1)
    y.register_hook(lambda g: log.append(("b", g)) or g * 10)
    y.sum().backward()
    return x.grad


@program
def a_removed_hook_is_not_called(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x.register_hook(lambda g: log.append("removed") or g * 100)
    x.register_hook(lambda g: log.append("kept"))
    h.remove()
    (x * 2).sum().backward()
    return x.grad


@program
def hook_returning_none_keeps_the_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: None)
    (x * 4).sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning="requires? grad")
def hook_on_a_constant_raises(L, log):
    L.tensor([1.0]).register_hook(lambda g: g)


@program
def hook_on_the_root_sees_the_seed(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    y.register_hook(lambda g: log.append(g) or g * 3)
    y.backward()
    return x.grad


@program
def hook_is_called_once_per_backward(L, log):
    x = L.tensor([1.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: log.append("y"))
    z = y * y + y
    z.sum().backward(retain_graph=True)
    z.sum().backward()
    return x.grad


@program
def hooks_of_unused_branches_are_not_called(L, log):
    x = L.tensor([1.0], requires_grad=True)
    a = x * 2
    b = x * 3
    b.register_hook(lambda g: log.append("b"))
    a.sum().backward()
    return x.grad


@program
def hook_of_a_multi_use_intermediate(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.register_hook(lambda g: log.append(g))
    (y.sin() + y * y).sum().backward()
    return x.grad


@program
def hook_sees_create_graph_gradients_that_require_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: log.append(g.requires_grad))
    (gx,) = L.grad((y * y).sum(), x, create_graph=True)
    return gx


@program
def hook_on_a_leaf_under_autograd_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: log.append(g) or g * 2)
    (gx,) = L.grad((x * x).sum(), x)
    return [gx, x.grad]


@program
def hooks_further_back_than_the_inputs_do_not_fire(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: log.append("x"))
    a = x * 2
    a.register_hook(lambda g: log.append("a"))
    b = a * 3
    b.register_hook(lambda g: log.append("b"))
    return L.grad((b * b).sum(), [a, b])


@program
def a_hook_changing_an_intermediate_gradient_changes_autograd_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    a.register_hook(lambda g: g * 10)
    return L.grad((a * a).sum(), [a, x])


@program
def hook_on_an_output_of_a_two_output_function(L, log):
    x = L.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    q, r = L.linalg.qr(x)
    r.register_hook(lambda g: log.append(g))
    r.sum().backward()
    return x.grad


@program
def hook_on_a_view(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[1:]
    v.register_hook(lambda g: log.append(g) or g * 2)
    (v * v).sum().backward()
    return x.grad


# ---- retain_grad ------------------------------------------------------------------------
area("retain_grad")


@program
def retain_grad_keeps_an_intermediate_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (y * y).sum().backward()
    return [y.grad, x.grad, y.retains_grad, x.retains_grad, (x * 1).retains_grad]


@program
def retained_gradients_accumulate(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    z = (y * y).sum()
    z.backward(retain_graph=True)
    z.backward()
    return y.grad


@program
def retain_grad_on_a_leaf_does_nothing_more(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.retain_grad()
    (x * 3).sum().backward()
    return x.grad


@program
def retain_grad_then_in_place_gives_the_new_values_gradient(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    a = w * 2
    a.retain_grad()
    a.mul_(3)
    (a * a).sum().backward()
    return [a.grad, w.grad]


@program
def retain_grad_sees_what_hooks_made_of_the_gradient(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    return [y.grad, x.grad]


@program
def retain_grad_on_the_root(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sum()
    y.retain_grad()
    y.backward()
    return [y.grad, x.grad]


@program
def retain_grad_of_an_unused_intermediate_stays_none(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    (x * 3).sum().backward()
    return y.grad


@program
def retain_grad_under_autograd_grad_fills_the_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    y.retain_grad()
    (gx,) = L.grad((y * y).sum(), x)
    return [gx, y.grad, x.grad]


@program(warns="not a leaf")
def grad_of_a_non_leaf_without_retain_grad_warns(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    return y.grad


@program
def retain_grad_on_a_view(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    v = h[:2]
    v.retain_grad()
    (v * v).sum().backward()
    return [v.grad, x.grad]


# ---- retain_graph ------------------------------------------------------------------------
area("retain_graph")

FREED = r"second time|freed"


@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_saved_values_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    y.backward()


@program(raises=RuntimeError, meaning=r"retain_graph")
def the_error_says_retain_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp().sum()
    y.backward()
    y.backward()


@program
def retain_graph_allows_a_second_backward(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad


@program
def a_graph_that_saved_nothing_runs_twice(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    return x.grad


@program
def autograd_grad_twice_through_nodes_that_saved_nothing(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (-x + 1).sum()
    a = L.grad(y, [x])
    b = L.grad(y, [x])
    return [a, b]


@program(raises=RuntimeError, meaning=FREED)
def a_product_with_a_number_saves_the_number(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2.0).sum()
    L.grad(y, [x])
    L.grad(y, [x])


@program
def sharded_autograd_grad_over_one_loss(L, log):
    w = [L.tensor([float(k), 1.0], requires_grad=True) for k in range(3)]
    loss = sum((v * 3.0).sum() for v in w)
    return [L.grad(loss, [v])[0] for v in w]


@program(raises=RuntimeError, meaning=FREED)
def autograd_grad_twice_through_saved_values_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    L.grad(y, [x])
    L.grad(y, [x])


@program
def autograd_grad_with_retain_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x.sin() * x).sum()
    a = L.grad(y, [x], retain_graph=True)
    b = L.grad(y, [x])
    return [a, b]


@program
def create_graph_retains_the_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 3).sum()
    y.backward(create_graph=True)
    y.backward()
    return x.grad


@program(raises=RuntimeError, meaning=FREED)
def a_shared_subgraph_is_freed_by_the_first_backward(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    a = (h * 2).sum()
    b = (h * 3).sum()
    a.backward()
    b.backward()


@program
def a_shared_subgraph_kept_by_retain_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x.exp()
    a = (h * 2).sum()
    b = (h * 3).sum()
    a.backward(retain_graph=True)
    b.backward()
    return x.grad


@program
def a_branch_not_reached_is_not_freed(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([3.0], requires_grad=True)
    a = (x * x).sum()
    b = (y * y).sum()
    a.backward()
    (a.detach() + b).backward()
    return [x.grad, y.grad]


# ---- create_graph ------------------------------------------------------------------------
area("create_graph")


@program
def second_derivative_by_autograd_grad(L, log):
    x = L.tensor([0.5, 1.5], requires_grad=True)
    (g,) = L.grad((x ** 3).sum(), x, create_graph=True)
    (h,) = L.grad(g.sum(), x)
    return [g, h, g.requires_grad]


@program
def backward_with_create_graph_makes_grad_differentiable(L, log):
    x = L.tensor([0.5, 1.5], requires_grad=True)
    (x.sin() * x).sum().backward(create_graph=True)
    g = x.grad
    log.append(g.requires_grad)
    x.grad = None
    g.sum().backward()
    return [g, x.grad]


@program
def third_derivative(L, log):
    x = L.tensor([0.7], requires_grad=True)
    y = x.exp() * x.sin()
    (d1,) = L.grad(y.sum(), x, create_graph=True)
    (d2,) = L.grad(d1.sum(), x, create_graph=True)
    (d3,) = L.grad(d2.sum(), x)
    return [d1, d2, d3]


@program
def hessian_vector_product(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = L.tensor([1.0, 0.0, -1.0])
    y = (x * x * x.roll(1, 0) if L.name == "torch" else x * x * L.roll(x, 1, 0)).sum()
    (g,) = L.grad(y, x, create_graph=True)
    (hv,) = L.grad((g * v).sum(), x)
    return hv


@program
def mixed_second_derivative(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    w = L.tensor([3.0, -1.0], requires_grad=True)
    (gx,) = L.grad((x * x * w).sum(), x, create_graph=True)
    (gw,) = L.grad(gx.sum(), w)
    return [gx, gw]


@program
def gradient_of_a_gradient_of_a_matrix_function(L, log):
    a = L.tensor([[2.0, 1.0], [0.5, 3.0]], requires_grad=True)
    (g,) = L.grad((a @ a).sum(), a, create_graph=True)
    (h,) = L.grad((g * g).sum(), a)
    return [g, h]


@program
def create_graph_under_no_grad_still_records(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x ** 2).sum()
    with L.no_grad():
        (g,) = L.grad(y, x, create_graph=True)
    return [g, g.requires_grad]


@program
def without_create_graph_the_gradient_is_a_constant(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (g,) = L.grad((x ** 2).sum(), x)
    return [g, getattr(g, "requires_grad", False)]


@program(raises=RuntimeError, meaning="does not require grad")
def differentiating_a_constant_gradient_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (g,) = L.grad((x * 3).sum(), x, create_graph=True)  # linear: g does not depend on x
    L.grad(g.sum(), x)


@program
def differentiating_a_constant_gradient_with_allow_unused(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([1.0, 1.0], requires_grad=True)
    (g,) = L.grad((x * y).sum(), x, create_graph=True)  # g = y
    return L.grad(g.sum(), [x, y], allow_unused=True)


@program
def second_derivative_through_a_hook(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    y.register_hook(lambda g: g * x)
    (g,) = L.grad(y.sum(), x, create_graph=True)
    (h,) = L.grad(g.sum(), x)
    return [g, h]


@program
def grad_outputs_that_require_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    v = L.tensor([3.0, 4.0], requires_grad=True)
    (g,) = L.grad(x * x, x, grad_outputs=v, create_graph=True)
    g.sum().backward()
    return [g, v.grad, x.grad]


@program
def double_backward_of_complex(L, log):
    z = L.tensor([1 + 1j, 2 - 0.5j], requires_grad=True)
    (g,) = L.grad((z * z.conj()).real.sum(), z, create_graph=True)
    (h,) = L.grad(g.abs().sum(), z)
    return [g, h]


# ---- autograd.grad options ---------------------------------------------------------------
area("autograd.grad")


@program
def grad_does_not_touch_dot_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (g,) = L.grad((x * x).sum(), x)
    return [g, x.grad]


@program
def grad_of_several_inputs(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([3.0], requires_grad=True)
    return L.grad((x * y).sum(), [x, y])


@program
def grad_of_several_outputs_adds(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    return L.grad([(x * x).sum(), (x * 3).sum()], x)


@program
def grad_outputs_weight_each_output(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    return L.grad([x * x, x.sin()], x, grad_outputs=[L.tensor([1.0, 2.0]),
                                                     L.tensor([-1.0, 0.5])])


@program(raises=RuntimeError, meaning="not.*used|unused|allow_unused")
def grad_of_an_unused_input_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    z = L.tensor([1.0], requires_grad=True)
    L.grad((x * 2).sum(), [x, z])


@program
def allow_unused_gives_none(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    z = L.tensor([1.0], requires_grad=True)
    return L.grad((x * 2).sum(), [x, z], allow_unused=True)


@program
def materialize_grads_gives_zeros(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    z = L.tensor([1.0, 5.0, 6.0], requires_grad=True)
    return L.grad((x * 2).sum(), [x, z], materialize_grads=True)


@program(raises=ValueError, meaning="allow_unused")
def materialize_grads_with_allow_unused_false_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.grad((x * 2).sum(), [x], materialize_grads=True, allow_unused=False)


@program
def materialize_grads_under_create_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    z = L.tensor([1.0], requires_grad=True)
    gx, gz = L.grad((x * x).sum(), [x, z], materialize_grads=True, create_graph=True)
    return [gx, gz, gx.requires_grad, gz.requires_grad]


@program(raises=RuntimeError, meaning="inputs.*empty")
def grad_with_no_inputs_raises(L, log):
    x = L.tensor([1.0], requires_grad=True)
    L.grad((x * 2).sum(), [])


@program(raises=RuntimeError, meaning="inputs.*empty")
def backward_with_no_inputs_raises(L, log):
    x = L.tensor([1.0], requires_grad=True)
    (x * 2).sum().backward(inputs=[])


@program
def backward_inputs_accumulates_only_there(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.tensor([3.0], requires_grad=True)
    (x * y).sum().backward(inputs=[y])
    return [x.grad, y.grad]


@program
def backward_inputs_with_an_unused_input_leaves_none(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    z = L.tensor([1.0], requires_grad=True)
    (x * 2).sum().backward(inputs=[x, z])
    return [x.grad, z.grad]


@program
def backward_inputs_does_not_run_other_leaves_hooks(L, log):
    x = L.tensor([1.0], requires_grad=True)
    w = L.tensor([2.0], requires_grad=True)
    x.register_hook(lambda g: log.append("x"))
    w.register_hook(lambda g: log.append("w"))
    (x * w).sum().backward(inputs=[w])
    return [x.grad, w.grad]


@program
def backward_inputs_an_intermediate_fills_its_grad(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    (h * h).sum().backward(inputs=[h])
    return [h.grad, x.grad]


@program
def grad_with_respect_to_intermediates_stops_there(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 2
    b = a * 3
    return L.grad((b * b).sum(), [a, b])


@program
def grad_with_respect_to_an_intermediate_and_a_leaf(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x.exp()
    return L.grad((a * a).sum(), [a, x])


@program
def grad_with_respect_to_the_output_itself(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    return L.grad(y, [y, x])


@program
def grad_of_a_leaf_output(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    return L.grad(x, x, grad_outputs=L.tensor([3.0, 4.0]))


@program(raises=RuntimeError, meaning="does not require grad")
def grad_with_respect_to_a_constant_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([1.0, 2.0])
    L.grad((x * c).sum(), [c])


@program(raises=RuntimeError, meaning="scalar")
def grad_of_a_non_scalar_without_grad_outputs_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.grad(x * 2, x)


@program
def grad_of_one_output_of_two_outputs_op(L, log):
    a = L.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    w, v = L.linalg.eigh(a)
    return L.grad(w.sum(), a)


@program
def grad_with_respect_to_an_output_of_a_two_output_op(L, log):
    a = L.tensor([[2.0, 1.0], [1.0, 3.0]], requires_grad=True)
    w, v = L.linalg.eigh(a)
    return L.grad((w * w).sum() + v[0, 0], [w, a])


@program
def grad_of_a_gradient_wrt_an_intermediate(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x.sin()
    (gh,) = L.grad((h ** 3).sum(), h, create_graph=True)
    return L.grad(gh.sum(), x)


# ---- grad mode ------------------------------------------------------------------------------
area("grad mode")


@program
def no_grad_nests_and_restores(L, log):
    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        log.append(L.is_grad_enabled())
        with L.enable_grad():
            log.append(L.is_grad_enabled())
            y = x * 2
        log.append(L.is_grad_enabled())
    return [L.is_grad_enabled(), y.requires_grad]


@program
def no_grad_restores_after_an_exception(L, log):
    try:
        with L.no_grad():
            raise KeyError("inside")
    except KeyError:
        pass
    return L.is_grad_enabled()


@program
def set_grad_enabled_as_a_function(L, log):
    x = L.tensor([1.0], requires_grad=True)
    L.set_grad_enabled(False)
    y = x * 2
    L.set_grad_enabled(True)
    z = x * 2
    return [y.requires_grad, z.requires_grad]


@program
def set_grad_enabled_as_a_context_manager(L, log):
    x = L.tensor([1.0], requires_grad=True)
    with L.set_grad_enabled(False):
        y = x * 2
        log.append(L.is_grad_enabled())
    with L.set_grad_enabled(True):
        z = x * 2
    return [y.requires_grad, z.requires_grad, L.is_grad_enabled()]


@program
def no_grad_decorator_called(L, log):
    @L.no_grad()
    def f(x):
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    return [f(x).requires_grad, L.is_grad_enabled()]


@program
def no_grad_decorator_bare(L, log):
    @L.no_grad
    def f(x):
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    return [f(x).requires_grad, L.is_grad_enabled()]


@program
def no_grad_applied_to_a_function(L, log):
    x = L.tensor([1.0], requires_grad=True)
    f = L.no_grad(lambda t: t * 2)
    return [f(x).requires_grad, L.is_grad_enabled()]


@program
def enable_grad_decorator_inside_no_grad(L, log):
    @L.enable_grad()
    def f(x):
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        y = f(x)
        log.append(L.is_grad_enabled())
    return y.requires_grad


@program
def enable_grad_bare_decorator(L, log):
    @L.enable_grad
    def f(x):
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        y = f(x)
    return y.requires_grad


@program
def set_grad_enabled_decorator(L, log):
    @L.set_grad_enabled(False)
    def f(x):
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    return [f(x).requires_grad, L.is_grad_enabled()]


@program
def no_grad_on_a_generator_function(L, log):
    @L.no_grad()
    def gen(x):
        for k in range(3):
            log.append(L.is_grad_enabled())
            yield (x * k).requires_grad

    x = L.tensor([1.0], requires_grad=True)
    out = []
    for r in gen(x):
        out.append((r, L.is_grad_enabled()))
    return out


@program
def enable_grad_on_a_generator_function(L, log):
    @L.enable_grad()
    def gen(x):
        yield (x * 2).requires_grad
        yield (x * 3).requires_grad

    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        return [(r, L.is_grad_enabled()) for r in gen(x)]


@program
def no_grad_generator_send_and_return(L, log):
    @L.no_grad()
    def gen():
        got = yield L.is_grad_enabled()
        log.append(got)
        return "done"

    g = gen()
    first = next(g)
    try:
        g.send(5)
    except StopIteration as stop:
        return [first, stop.value, L.is_grad_enabled()]


@program
def no_grad_on_a_method(L, log):
    class M:
        @L.no_grad()
        def f(self, x):
            return x * 2

    x = L.tensor([1.0], requires_grad=True)
    return M().f(x).requires_grad


@program
def grad_mode_is_per_thread(L, log):
    seen = {}

    def worker():
        seen["worker"] = L.is_grad_enabled()

    with L.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        seen["main"] = L.is_grad_enabled()
    return [seen["worker"], seen["main"]]


@program
def no_grad_in_a_thread_does_not_leak(L, log):
    box = {}

    def worker():
        with L.no_grad():
            box["inside"] = L.is_grad_enabled()
            box["ev"].set()
            box["go"].wait()

    box["ev"], box["go"] = threading.Event(), threading.Event()
    t = threading.Thread(target=worker)
    t.start()
    box["ev"].wait()
    main = L.is_grad_enabled()
    box["go"].set()
    t.join()
    return [box["inside"], main]


@program
def backward_in_threads_accumulates(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    ys = [(x * float(k)).sum() for k in range(1, 5)]
    lock = threading.Lock()

    def worker(y):
        with lock:
            y.backward()

    threads = [threading.Thread(target=worker, args=(y,)) for y in ys]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return x.grad


@program
def graphs_recorded_in_threads(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    out = {}

    def worker(k):
        y = (x * x * float(k)).sum()
        out[k] = L.grad(y, x)[0]

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [out[k] for k in range(3)]


@program
def in_place_under_no_grad_on_a_leaf(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with L.no_grad():
        w -= 0.1 * w.grad
    return [w, w.requires_grad, w.is_leaf, w.grad_fn is None]


# ---- views and in-place ---------------------------------------------------------------------
area("views and in-place")

INPLACE_SAVED = r"modified by an in-?place operation"


@program
def in_place_on_a_non_leaf_is_recorded(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.add_(1)
    h.mul_(L.tensor([3.0, 4.0]))
    h.sum().backward()
    return [h, x.grad]


@program(raises=RuntimeError, meaning="leaf")
def in_place_on_a_leaf_that_requires_grad_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    x.add_(1)


@program
def in_place_on_a_leaf_that_requires_grad_changes_nothing_when_refused(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    try:
        x.mul_(5)
    except RuntimeError:
        pass
    return x


@program(raises=RuntimeError, meaning="view of a leaf")
def in_place_on_a_view_of_a_leaf_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[:2]
    v.mul_(2)


@program(raises=RuntimeError, meaning="view of a leaf")
def view_of_a_leaf_taken_before_requires_grad_then_written_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0])
    v = x[0:2]
    x.requires_grad_()
    v.mul_(2)


@program
def view_of_a_leaf_written_under_no_grad(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x[0:2]
    with L.no_grad():
        v.mul_(2)
    (x * x).sum().backward()
    return [x, x.grad]


@program
def view_rebased_when_its_base_changes(L, log):
    x = L.ones(5, dtype=L.float64)
    r = L.tensor(2.0, requires_grad=True)
    v = x[1]
    x.add_(r)
    log.append([v.requires_grad, v.grad_fn is None])
    (v * 3).backward()
    return [v, r.grad]


@program
def slice_view_rebased_when_its_base_changes(L, log):
    w = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * 1
    v = h[1:]
    h.mul_(w)
    (v * v).sum().backward()
    return [v, w.grad]


@program
def view_rebased_inside_a_function_whatever_its_locals(L, log):
    def f(x, v):
        a = x * 1.0
        b = a[0]
        a *= v
        return b.sum() + a.sum()

    x = L.tensor([1.0, 2.0], requires_grad=True)
    v = L.tensor([3.0, 4.0], requires_grad=True)
    f(x, v).backward()
    return [x.grad, v.grad]


@program
def in_place_on_a_view_changes_the_base(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x * 1
    v = h[1:3]
    v.mul_(10)
    (h * L.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    return [h, v, x.grad]


@program
def two_views_of_one_base_written_and_used_together(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    y = x * 1
    a = y[0:2]
    b = y[2:4]
    a.mul_(2)
    b.mul_(3)
    (a * b).sum().backward()
    return [a, b, x.grad]


@program
def the_same_view_taken_twice(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    h = x * 1
    v1, v2 = h[0:2], h[0:2]
    v1.mul_(3)
    (v2 * L.tensor([1.0, 2.0])).sum().backward()
    return [v2, x.grad]


@program
def a_view_of_a_view_written(L, log):
    x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    h = x * 1
    row = h[1]
    cell = row[1:]
    cell.add_(L.tensor([10.0, 20.0]))
    (h * h).sum().backward()
    return [h, row, x.grad]


@program
def views_of_views_rebased(L, log):
    w = L.tensor(2.0, requires_grad=True)
    h = L.tensor([[1.0, 2.0], [3.0, 4.0]]) * 1
    row = h[0]
    cell = row[1]
    h.mul_(w)
    (cell * 5).backward()
    return [cell, w.grad]


@program
def reshape_view_written_in_place(L, log):
    x = L.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    h = x * 1
    r = h.reshape(3, 2)
    r.mul_(L.tensor([1.0, 2.0]))
    (h * h).sum().backward()
    return [h, x.grad]


@program
def transpose_view_written_in_place(L, log):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = x * 1
    t = h.T
    t.add_(L.tensor([[0.0, 10.0], [0.0, 0.0]]))
    (h * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    return [h, x.grad]


@program
def reshape_view_rebased(L, log):
    w = L.tensor(3.0, requires_grad=True)
    h = L.tensor([[1.0, 2.0], [3.0, 4.0]]) * 1
    flat = h.reshape(4)
    h.mul_(w)
    (flat * L.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    return [flat, w.grad]


@program
def setitem_records_the_values(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = L.tensor(5.0, requires_grad=True)
    y = x * 1
    y[1] = v * 2
    (y * y).sum().backward()
    return [y, x.grad, v.grad]


@program
def setitem_of_a_zero_d_tensor(L, log):
    x = L.tensor(1.0, requires_grad=True)
    y = x * 1
    v = L.tensor(5.0, requires_grad=True)
    y[()] = v
    y.backward()
    return [v.grad, x.grad]


@program
def setitem_broadcasting_leading_ones(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    v = L.tensor([[5.0, 6.0]], requires_grad=True)
    y[:] = v
    (y * L.tensor([1.0, 3.0])).sum().backward()
    return [v.grad, x.grad]


@program
def setitem_with_a_new_axis(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    v = L.tensor([[5.0, 6.0]], requires_grad=True)
    y[None, :] = v
    y.sum().backward()
    return [v.grad, x.grad]


@program
def setitem_with_a_new_axis_broadcasting_the_value(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 1
    v = L.tensor([5.0, 6.0], requires_grad=True)
    y[None, :] = v * 2
    (y * y).sum().backward()
    return [y, v.grad, x.grad]


@program
def setitem_with_two_new_axes_and_a_scalar(L, log):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    v = L.tensor(3.0, requires_grad=True)
    y[None, 1, None] = v
    (y * L.tensor([[1.0, 2.0], [3.0, 4.0]])).sum().backward()
    return [y, v.grad, x.grad]


@program
def setitem_of_a_zero_d_tensor_with_a_new_axis(L, log):
    x = L.tensor(1.0, requires_grad=True)
    y = x * 1
    v = L.tensor([5.0], requires_grad=True)
    y[None] = v * v
    (y * 3).backward()
    return [y, v.grad, x.grad]


@program
def setitem_broadcasting_a_scalar(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = L.tensor(2.0, requires_grad=True)
    y = x * 1
    y[1:] = v
    (y * L.tensor([1.0, 2.0, 3.0])).sum().backward()
    return [x.grad, v.grad]


@program
def setitem_with_an_index_array(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    v = L.tensor([10.0, 20.0], requires_grad=True)
    y = x * 1
    y[L.tensor([3, 0])] = v
    (y * L.tensor([1.0, 2.0, 3.0, 4.0])).sum().backward()
    return [y, x.grad, v.grad]


@program
def setitem_with_a_mask(L, log):
    x = L.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x * 1
    y[y < 0] = 0.0
    (y * y).sum().backward()
    return [y, x.grad]


@program
def a_constant_base_written_with_a_recorded_value(L, log):
    base = L.zeros(4, dtype=L.float64)
    w = L.tensor(3.0, requires_grad=True)
    v = base[1:3]
    v += w
    (base * L.tensor([0.0, 1.0, 2.0, 3.0])).sum().backward()
    return [base, base.requires_grad, w.grad]


@program
def building_a_tensor_row_by_row(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    out = L.zeros((3, 2), dtype=L.float64)
    for k in range(3):
        out[k] = w * float(k + 1)
    out.sum().backward()
    return [out, w.grad]


@program
def augmented_assignment_through_an_index(L, log):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    h = x * 1
    h[0] += h[1] * 2
    h[:, 1] *= 3
    (h * h).sum().backward()
    return [h, x.grad]


@program
def in_place_zero_and_fill(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.zero_()
    h.add_(x)
    g = x * 3
    g.fill_(7.0)
    (h + g).sum().backward()
    return [h, g, x.grad]


@program
def copy_into_a_tensor(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    t = L.zeros((2, 2), dtype=L.float64)
    t.copy_(x * 3)
    t.sum().backward()
    return [t, x.grad]


@program(raises=RuntimeError, meaning="view.*detach|detach.*view")
def detach_in_place_on_a_view_is_refused(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    a[0:1].detach_()


@program
def detach_in_place_on_a_non_leaf(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    z = y * 3
    y.detach_()
    z.sum().backward()
    return [y.requires_grad, y.is_leaf, x.grad]


@program
def detach_in_place_of_a_leaf_after_use(L, log):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = a.sin()
    a.detach_()
    b.sum().backward()
    return [a.grad, a.requires_grad]


@program
def requires_grad_false_on_a_leaf_after_use(L, log):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = a.exp()
    a.requires_grad_(False)
    b.sum().backward()
    return a.grad


@program(raises=RuntimeError, meaning="no_grad")
def a_view_made_under_no_grad_written_with_grad_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    with L.no_grad():
        v = h[0:2]
    v.mul_(2)


@program
def a_view_made_under_no_grad_written_under_no_grad(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    with L.no_grad():
        v = h[0:2]
        v.mul_(2)
    h.sum().backward()
    return [h, x.grad]


@program
def in_place_under_no_grad_keeps_the_graph(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    with L.no_grad():
        h.add_(100)
    (h * 3).sum().backward()
    return [h, x.grad]


@program
def x_times_a_constant_does_not_save_x(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * 3
    a.add_(1)
    b.sum().backward()
    return x.grad


@program
def x_times_a_constant_tensor_does_not_save_x(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    c = L.tensor([3.0, 4.0])
    a = x * 1
    b = a * c
    a.add_(1)
    b.sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def a_saved_input_changed_in_place_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a.sin()
    a.add_(1)
    b.sum().backward()


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def a_saved_output_changed_in_place_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    y.add_(1)
    y.sum().backward()


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def a_saved_value_changed_under_no_grad_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a * a
    with L.no_grad():
        a.mul_(2)
    b.sum().backward()


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def a_saved_value_changed_through_a_view_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    b = a.sin()
    a[1:].mul_(2)
    b.sum().backward()


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def a_view_saved_then_its_base_changed_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    v = a[:2]
    b = v * v
    a.mul_(2)
    b.sum().backward()


@program
def a_view_read_before_its_base_changed_without_saving(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    a = x * 1
    v = a[:2]
    c = v + 1
    a.mul_(2)
    c.sum().backward()
    return [c, x.grad]


@program
def in_place_with_itself(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h.add_(h)
    h.sum().backward()
    return x.grad


@program(differs="inplace-saves-its-own", torch_side=raised(RuntimeError, INPLACE_SAVED),
         yaad_side=returned([np.array([4.0, 16.0]), np.array([8.0, 16.0])]))
def multiplying_in_place_by_itself(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.mul_(h)
    h.sum().backward()
    return [h, x.grad]


@program(raises=RuntimeError, meaning=INPLACE_SAVED)
def in_place_after_retain_graph_backward_raises_the_second_time(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    y = (a * a).sum()
    y.backward(retain_graph=True)
    a.add_(1)
    y.backward()


@program
def in_place_method_chain(L, log):
    x = L.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    h = x * 1
    h.mul_(2).sub_(0.5)
    h.neg_()
    h.exp_()
    h.sum().backward()
    return [h, x.grad]


def _tanh_then_relu(L, log):
    x = L.tensor([-1.0, 0.5, 2.0], requires_grad=True)
    h = x * 1
    h.tanh_()  # saves its output: h's memory in PyTorch, its own array in yaad
    h.relu_()
    h.sum().backward()
    return x.grad


program(_tanh_then_relu, differs="inplace-saves-its-own",
        torch_side=raised(RuntimeError, INPLACE_SAVED),
        yaad_side=returned((1 - np.tanh([-1.0, 0.5, 2.0]) ** 2) * [0.0, 1.0, 1.0]))


@program
def in_place_operators(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h += 1
    h *= x
    h -= 2
    h /= 4
    h **= 2
    h.sum().backward()
    return [h, x.grad]


@program
def in_place_clamp(L, log):
    x = L.tensor([-2.0, 0.5, 3.0], requires_grad=True)
    h = x * 1
    h.clamp_(-1.0, 1.0)
    (h * L.tensor([1.0, 2.0, 3.0])).sum().backward()
    return [h, x.grad]


@program
def in_place_of_a_zero_d_result(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    s = x.sum()
    s *= 2
    s += x[0]
    s.backward()
    return [s, x.grad]


@program
def element_view_of_a_vector(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    e = h[1]
    e.mul_(10)
    h.sum().backward()
    return [h, e, x.grad]


# ---- version counters -------------------------------------------------------------------
area("version counters")


@program
def version_counts_in_place_changes(L, log):
    x = L.tensor([1.0, 2.0])
    v = [L.version(x)]
    x.add_(1)
    v.append(L.version(x))
    x.mul_(2)
    x[0] = 5.0
    v.append(L.version(x))
    return v


@program
def views_share_the_version_of_their_base(L, log):
    x = L.tensor([1.0, 2.0, 3.0])
    v = x[1:]
    x.add_(1)
    a = L.version(v)
    v.mul_(2)
    return [a, L.version(x), L.version(v)]


@program
def out_of_place_ops_do_not_bump(L, log):
    x = L.tensor([1.0, 2.0])
    y = x * 2
    y = x + 1
    return [L.version(x), L.version(y)]


@program
def version_of_a_recorded_in_place(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    h.add_(1)
    h.mul_(2)
    return L.version(h)


@program
def version_under_no_grad(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    with L.no_grad():
        w.sub_(0.1)
        w.mul_(0.5)
    return L.version(w)


@program
def detach_shares_the_version(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    d = x.detach()
    d.add_(1)
    return [L.version(x), L.version(d), x]


@program
def the_version_check_names_the_version(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a.exp() * 1
    c = a.sin()
    a.add_(1)
    a.add_(1)
    try:
        (b + c).sum().backward()
    except RuntimeError as e:
        return "version 2" in str(e)


@program
def a_value_not_saved_may_change(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    a = x * 1
    b = a + 1  # add saves nothing
    a.mul_(100)
    b.sum().backward()
    return x.grad


@program
def a_leaf_changed_under_no_grad_after_use_raises_if_saved(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    with L.no_grad():
        w.add_(1)
    try:
        y.backward()
    except RuntimeError as e:
        return bool(__import__("re").search(INPLACE_SAVED, str(e)))


@program
def a_leaf_changed_under_no_grad_not_saved_is_fine(L, log):
    w = L.tensor([1.0, 2.0], requires_grad=True)
    y = (w * 3.0).sum()
    with L.no_grad():
        w.add_(1)
    y.backward()
    return w.grad


@program
def optimizer_style_update_loop(L, log):
    w = L.tensor([1.0, -2.0], requires_grad=True)
    for _ in range(3):
        loss = ((w - 0.5) ** 2).sum()
        loss.backward()
        with L.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
    return [w, L.version(w)]


# ---- custom Functions ---------------------------------------------------------------------
area("custom Function")


def _square(L):
    class Square(L.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g

    return Square


def _doubler(L, rule=lambda ctx, g: g * 2, on_forward=None):
    """A Function doubling its input, with ``rule`` as its backward."""
    class Double(L.Function):
        @staticmethod
        def forward(ctx, x):
            if on_forward is not None:
                on_forward(x)
            return x * 2

        backward = staticmethod(rule)

    return Double


def _once_square(L, log):
    """x ** 2 with a backward marked once_differentiable (it logs the grad mode)."""
    class Square(L.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 2

        @staticmethod
        @L.once_differentiable
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            log.append(L.is_grad_enabled())
            return 2 * x * g

    return Square


@program
def function_gradient(L, log):
    x = L.tensor([1.0, -2.0], requires_grad=True)
    y = _square(L).apply(x)
    y.sum().backward()
    return [y, x.grad, y.requires_grad, y.is_leaf]


@program
def function_second_derivative(L, log):
    x = L.tensor([1.0, -2.0], requires_grad=True)
    y = _square(L).apply(x).sum()
    (g,) = L.grad(y, x, create_graph=True)
    (h,) = L.grad((g * g).sum(), x)
    return [g, h]


@program
def function_saving_its_output(L, log):
    class Exp(L.Function):
        @staticmethod
        def forward(ctx, x):
            y = L.exp(x)
            ctx.save_for_backward(y)
            return y

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    x = L.tensor([0.0, 1.0], requires_grad=True)
    Exp.apply(x).sum().backward()
    return x.grad


@program
def function_needs_input_grad(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x, y, k):
            log.append(list(ctx.needs_input_grad))
            return x * y * k

        @staticmethod
        def backward(ctx, g):
            log.append(list(ctx.needs_input_grad))
            return g, None, None

    x = L.tensor([1.0], requires_grad=True)
    F.apply(x, L.tensor([2.0]), 3.0).sum().backward()
    return x.grad


@program
def function_with_a_number_argument(L, log):
    class Scale(L.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.k = k
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    x = L.tensor([1.0, 2.0], requires_grad=True)
    Scale.apply(x, 2.5).sum().backward()
    return x.grad


@program
def function_non_tensor_outputs_stay_as_they_are(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, None, "s", 3, True

        @staticmethod
        def backward(ctx, *gs):
            log.append([g is None for g in gs])
            return gs[0] * 2

    x = L.tensor([1.0, 2.0], requires_grad=True)
    out = F.apply(x)
    log.append([type(o).__name__ if not isinstance(o, L.Tensor) else "Tensor" for o in out])
    out[0].sum().backward()
    return [out[1:], x.grad]


@program
def function_returning_none_beside_a_tensor(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, None

        @staticmethod
        def backward(ctx, g, gnone):
            log.append(gnone is None)
            return g * 2

    x = L.tensor([1.0, 2.0], requires_grad=True)
    a, n = F.apply(x)
    a.sum().backward()
    return [n, x.grad]


@program
def function_mark_non_differentiable(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x):
            y = x * 2
            z = x * 3
            ctx.mark_non_differentiable(z)
            return y, z

        @staticmethod
        def backward(ctx, gy, gz):
            log.append(gz)
            return gy * 2

    x = L.tensor([1.0, 2.0], requires_grad=True)
    y, z = F.apply(x)
    log.append([y.requires_grad, z.requires_grad])
    y.sum().backward()
    return [z, x.grad]


@program
def function_integer_output_is_not_differentiable(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, (x > 1.5).long() if L.name == "torch" else (x > 1.5).astype(np.int64)

        @staticmethod
        def backward(ctx, g, gi):
            log.append(gi)
            return g * 2

    x = L.tensor([1.0, 2.0], requires_grad=True)
    y, i = F.apply(x)
    y.sum().backward()
    return [i, i.requires_grad, x.grad]


@program
def function_unused_output_gets_zeros(L, log):
    class Two(L.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append([g1, g2])
            return g1 * 2 + g2 * 3

    x = L.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    b.sum().backward()
    return x.grad


@program
def function_set_materialize_grads_false(L, log):
    class Two(L.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            log.append([g1 is None, g2 is None])
            out = 0
            if g1 is not None:
                out = out + g1 * 2
            if g2 is not None:
                out = out + g2 * 3
            return out

    x = L.tensor([1.0, 2.0], requires_grad=True)
    a, b = Two.apply(x)
    a.sum().backward()
    return x.grad


@program
def function_extra_trailing_nones_are_accepted(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    _doubler(L, lambda ctx, g: (g * 2, None, None)).apply(x).sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning=r"incorrect number of gradients \(expected 1, got 2\)")
def function_extra_gradients_raise(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    _doubler(L, lambda ctx, g: (g * 2, g)).apply(x).sum().backward()


@program(raises=RuntimeError, meaning=r"incorrect number of gradients \(expected 2, got 1\)")
def function_too_few_gradients_raise(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    x = L.tensor([1.0, 2.0], requires_grad=True)
    F.apply(x, 2.0).sum().backward()


@program(differs="error-types", torch_side=raised(RuntimeError, "shape"),
         yaad_side=raised(ValueError, "shape"))
def function_gradient_of_the_wrong_shape_raises(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    _doubler(L, lambda ctx, g: L.ones(5, dtype=L.float64)).apply(x).sum().backward()


@program(raises=KeyError, meaning="from backward")
def function_backward_error_propagates(L, log):
    def rule(ctx, g):
        raise KeyError("from backward")

    x = L.tensor([1.0], requires_grad=True)
    _doubler(L, rule).apply(x).sum().backward()


@program
def function_once_differentiable_first_order(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    _once_square(L, log).apply(x).sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning="does not require grad")
def function_once_differentiable_gradient_is_a_constant(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (gx,) = L.grad(_once_square(L, log).apply(x).sum(), x, create_graph=True)
    log.append(gx.requires_grad)
    gx.sum().backward()


@program(raises=RuntimeError, meaning="once.?differentiable")
def function_once_differentiable_refuses_a_second_derivative(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = _once_square(L, log).apply(x) * x  # the gradient reaching it depends on x
    (gx,) = L.grad(y.sum(), x, create_graph=True)
    log.append(gx.requires_grad)
    gx.sum().backward()


@program
def function_of_constants_does_not_record(L, log):
    x = L.tensor([1.0, 2.0])
    y = _square(L).apply(x)
    return [y, y.requires_grad]


@program
def function_under_no_grad_does_not_record(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    with L.no_grad():
        y = _square(L).apply(x)
    return [y, y.requires_grad]


@program
def function_used_twice(L, log):
    F = _square(L)
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (F.apply(x) + F.apply(F.apply(x))).sum().backward()
    return x.grad


@program
def function_output_with_a_hook(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = _square(L).apply(x)
    y.register_hook(lambda g: log.append(g) or g * 10)
    y.sum().backward()
    return x.grad


@program
def function_forward_runs_without_recording(L, log):
    x = L.tensor([1.0], requires_grad=True)
    _doubler(L, on_forward=lambda a: log.append(L.is_grad_enabled())).apply(x).sum().backward()
    return x.grad


@program
def function_complex_gradient(L, log):
    class Conj(L.Function):
        @staticmethod
        def forward(ctx, z):
            ctx.save_for_backward(z)
            return z * z

        @staticmethod
        def backward(ctx, g):
            (z,) = ctx.saved_tensors
            return g * (2 * z).conj()

    z = L.tensor([1 + 2j, -0.5j], requires_grad=True)
    y = Conj.apply(z)
    (y.real + y.imag).sum().backward()
    return z.grad


@program
def function_with_two_tensor_inputs(L, log):
    class Mul(L.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b

        @staticmethod
        def backward(ctx, g):
            a, b = ctx.saved_tensors
            return g * b, g * a

    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, 4.0], requires_grad=True)
    y = Mul.apply(a, b)
    (g,) = L.grad(y.sum(), a, create_graph=True)
    (h,) = L.grad(g.sum(), b)
    return [g, h]


# ---- checkpoint ---------------------------------------------------------------------------
area("checkpoint")


def _block(x):
    return (x.sin() * x).exp()


@program
def checkpoint_same_values_and_gradients(L, log):
    x = L.tensor([0.1, -0.4, 0.7], requires_grad=True)
    y = L.checkpoint(_block, x)
    y.sum().backward()
    return [y, x.grad]


@program
def checkpoint_reaches_closed_over_parameters(L, log):
    w = L.tensor([2.0, -1.0], requires_grad=True)
    x = L.tensor([0.5, 1.5], requires_grad=True)
    y = L.checkpoint(lambda t: (t * w).tanh(), x)
    y.sum().backward()
    return [x.grad, w.grad]


@program
def checkpoint_of_an_intermediate(L, log):
    x = L.tensor([0.5, 1.5], requires_grad=True)
    h = x * 3
    y = L.checkpoint(_block, h)
    (y * h).sum().backward()
    return x.grad


@program
def checkpoint_several_outputs_one_used(L, log):
    x = L.tensor([0.5, 1.5], requires_grad=True)
    a, b = L.checkpoint(lambda t: (t.sin(), t.cos()), x)
    b.sum().backward()
    return x.grad


@program
def checkpoint_with_a_constant_argument(L, log):
    x = L.tensor([0.5, 1.5], requires_grad=True)
    c = L.tensor([2.0, 3.0])
    y = L.checkpoint(lambda t, k: t * k * 2.0, x, c)
    y.sum().backward()
    return x.grad


@program
def checkpoint_second_derivative(L, log):
    x = L.tensor([0.3, 0.8], requires_grad=True)
    y = L.checkpoint(_block, x).sum()
    (g,) = L.grad(y, x, create_graph=True)
    (h,) = L.grad(g.sum(), x)
    return [g, h]


@program
def checkpoint_nested_double_backward(L, log):
    def inner(t):
        return t.sin() * t

    def outer(t):
        return L.checkpoint(inner, L.checkpoint(inner, t))

    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = L.checkpoint(outer, x).sum()
    (g,) = L.grad(y, x, create_graph=True)
    g.sum().backward()
    return [g, x.grad]


@program
def checkpoint_autograd_grad_inside(L, log):
    def f(x):
        y = (x ** 3).sum()
        (g,) = L.grad(y, x, create_graph=True)
        return g

    x = L.tensor([1.0, 2.0], requires_grad=True)
    out = L.checkpoint(f, x)
    out.sum().backward()
    return [out, x.grad]


@program
def checkpoint_runs_with_recording_on(L, log):
    def f(x):
        log.append(L.is_grad_enabled())
        return x.exp()

    x = L.tensor([1.0], requires_grad=True)
    L.checkpoint(f, x).sum().backward()
    return x.grad


@program
def checkpoint_recomputes_in_backward(L, log):
    calls = []

    def f(x):
        calls.append(1)
        return x.exp()

    x = L.tensor([1.0], requires_grad=True)
    y = L.checkpoint(f, x)
    log.append(len(calls))
    y.sum().backward()
    return len(calls)


@program
def checkpoint_under_no_grad(L, log):
    x = L.tensor([1.0], requires_grad=True)
    with L.no_grad():
        y = L.checkpoint(_block, x)
    return [y, y.requires_grad]


@program
def checkpoint_of_in_place_inside(L, log):
    def f(t):
        h = t * 2
        h.add_(1)
        h[0] = h[1] * 3
        return h * h

    x = L.tensor([1.0, 2.0], requires_grad=True)
    L.checkpoint(f, x).sum().backward()
    return x.grad


@program
def checkpoint_twice_in_a_row(L, log):
    x = L.tensor([0.2, 0.4], requires_grad=True)
    y = L.checkpoint(_block, L.checkpoint(_block, x))
    y.sum().backward()
    return x.grad


# ---- anomaly mode ---------------------------------------------------------------------------
area("anomaly mode")

ANOMALY_ON = "anomaly detection"


@program(raises=RuntimeError, meaning="nan", warns=ANOMALY_ON)
def anomaly_names_a_nan_gradient(L, log):
    with L.detect_anomaly():
        x = L.tensor([-1.0], requires_grad=True)
        y = (x.log() * 0 + x).sqrt() * 0 + (x * 0 + x.log()).sqrt()
        y.sum().backward()


@program(raises=RuntimeError, meaning="nan", warns=ANOMALY_ON)
def anomaly_checks_a_graph_recorded_before(L, log):
    x = L.tensor([-1.0], requires_grad=True)
    y = (x * 0 + x.log()).sqrt()
    with L.detect_anomaly():
        y.sum().backward()


@program(warns=ANOMALY_ON)
def anomaly_is_not_checked_for_a_backward_outside(L, log):
    with L.detect_anomaly():
        x = L.tensor([-1.0], requires_grad=True)
        y = (x * 0 + x.log()).sqrt()
    y.sum().backward()
    return bool(np.isnan(value(x.grad)).all())


@program(warns=ANOMALY_ON)
def anomaly_finite_gradients_pass(L, log):
    with L.detect_anomaly():
        x = L.tensor([1.0, 4.0], requires_grad=True)
        (x.sqrt() * x).sum().backward()
    return x.grad


@program(warns=ANOMALY_ON)
def anomaly_check_nan_false_does_not_raise(L, log):
    with L.detect_anomaly(check_nan=False):
        x = L.tensor([-1.0], requires_grad=True)
        (x * 0 + x.log()).sqrt().sum().backward()
    return bool(np.isnan(value(x.grad)).all())


@program(warns=ANOMALY_ON)
def anomaly_mode_restores_on_exit(L, log):
    with L.detect_anomaly():
        pass
    x = L.tensor([-1.0], requires_grad=True)
    (x * 0 + x.log()).sqrt().sum().backward()
    return bool(np.isnan(value(x.grad)).all())


@program(differs="anomaly-inf", torch_side=warned(ANOMALY_ON),
         yaad_side=raised(RuntimeError, "inf"))
def anomaly_on_an_infinite_gradient(L, log):
    with L.detect_anomaly():
        x = L.tensor([0.0, 4.0], requires_grad=True)
        x.sqrt().sum().backward()
    return x.grad


@program(raises=RuntimeError, meaning="nan", warns=ANOMALY_ON)
def anomaly_in_a_double_backward(L, log):
    x = L.tensor([-1.0], requires_grad=True)
    (g,) = L.grad((x * x).sum(), x, create_graph=True)
    with L.detect_anomaly():
        (g * 0 + x.log()).sqrt().sum().backward()


@program(raises=RuntimeError, meaning="nan", warns=ANOMALY_ON)
def anomaly_in_autograd_grad(L, log):
    x = L.tensor([-1.0], requires_grad=True)
    y = (x * 0 + x.log()).sqrt().sum()
    with L.detect_anomaly():
        L.grad(y, x)


@program(raises=RuntimeError, meaning="nan", warns=ANOMALY_ON)
def anomaly_in_a_custom_function(L, log):
    with L.detect_anomaly():
        x = L.tensor([1.0], requires_grad=True)
        _doubler(L, lambda ctx, g: g * float("nan")).apply(x).sum().backward()


# ---- complex numbers ------------------------------------------------------------------------
area("complex numbers")


@program
def abs_squared_gradient_is_2z(L, log):
    z = L.tensor([3 + 4j, -1 + 0.5j], requires_grad=True)
    (z * z.conj()).real.sum().backward()
    return z.grad


@program
def abs_gradient(L, log):
    z = L.tensor([3 + 4j, -1 + 0.5j], requires_grad=True)
    z.abs().sum().backward()
    return z.grad


@program
def real_and_imag_gradients(L, log):
    z = L.tensor([1 + 2j, -3 + 0.5j], requires_grad=True)
    (z.real * 2 + z.imag * 3).sum().backward()
    return z.grad


@program
def holomorphic_function_gradient(L, log):
    z = L.tensor([0.5 + 1j, -1 - 0.25j], requires_grad=True)
    w = z * z * z + z.exp()
    (w.real - 2 * w.imag).sum().backward()
    return z.grad


@program(raises=RuntimeError, meaning="real|complex")
def backward_of_a_complex_scalar_raises(L, log):
    z = L.tensor([1 + 1j], requires_grad=True)
    (z * z).sum().backward()


@program
def backward_of_a_complex_output_with_a_gradient(L, log):
    z = L.tensor([1 + 1j, 2 - 1j], requires_grad=True)
    (z * z).backward(L.tensor([1 + 0j, 1j]))
    return z.grad


@program
def real_parameter_in_a_complex_computation_gets_a_real_gradient(L, log):
    a = L.tensor([0.5, 2.0], requires_grad=True)
    z = L.tensor([1 + 1j, -1j])
    ((a * z).abs() ** 2).sum().backward()
    return a.grad


@program
def complex_matmul_gradients(L, log):
    a = L.tensor([[1 + 1j, 2], [0, -1j]], requires_grad=True)
    b = L.tensor([[0.5, 1j], [1 - 1j, 2]], requires_grad=True)
    ((a @ b).abs() ** 2).sum().backward()
    return [a.grad, b.grad]


@program
def complex_autograd_grad(L, log):
    z = L.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    return L.grad((z.conj() * z * 2).real.sum(), z)


@program
def complex64_stays_complex64(L, log):
    z = L.tensor([1 + 2j, 3 - 1j], requires_grad=True, dtype="complex64")
    (z * z.conj()).real.sum().backward()
    return z.grad


@program
def complex_gradient_descends(L, log):
    z = L.tensor([3 + 4j], requires_grad=True)
    for _ in range(5):
        z.grad = None
        ((z - (1 + 1j)).abs() ** 2).sum().backward()
        with L.no_grad():
            z -= 0.25 * z.grad
    return z


@program
def complex_double_backward(L, log):
    z = L.tensor([0.5 + 1j], requires_grad=True)
    y = (z.abs() ** 4).sum()
    (g,) = L.grad(y, z, create_graph=True)
    (h,) = L.grad(g.abs().sum(), z)
    return [g, h]


@program
def complex_hook_sees_the_conjugate_convention(L, log):
    z = L.tensor([1 + 2j], requires_grad=True)
    w = z * 2
    w.register_hook(lambda g: log.append(g))
    (w.real + w.imag).sum().backward()
    return z.grad


@program
def complex_angle_gradient(L, log):
    z = L.tensor([1 + 1j, -2 + 0.5j], requires_grad=True)
    z.angle().sum().backward()
    return z.grad



@program
def writing_into_the_real_part(L, log):
    z = L.tensor([1 + 2j, 3 - 1j], requires_grad=True)
    w = L.tensor([0.5, 2.0], requires_grad=True)
    b = z * 1
    b.real.mul_(w)
    (b * b.conj()).real.sum().backward()
    return [b, z.grad, w.grad]


@program
def writing_into_the_imaginary_part_of_a_row(L, log):
    z = L.tensor([[1 + 2j, 3 - 1j], [2j, 1 + 0j]], requires_grad=True)
    b = z * 1
    b[1].imag.add_(b[0].real * 2)
    (b * b.conj()).real.sum().backward()
    return [b, z.grad]


@program
def the_real_part_is_rebased_when_the_base_changes(L, log):
    z = L.tensor([1 + 2j, 3 - 1j], requires_grad=True, dtype=np.complex64)
    b = z * 1
    r = b.real
    b.mul_(1j)
    (r * r).sum().backward()
    return [r, z.grad]

# ---- reentrant backward -------------------------------------------------------------------
area("reentrant backward")


@program
def backward_inside_a_function_backward(L, log):
    class Inner(L.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            y = L.tensor([3.0], requires_grad=True)
            with L.enable_grad():
                (y * y).sum().backward()
            log.append(y.grad)
            return g * 2

    x = L.tensor([1.0], requires_grad=True)
    Inner.apply(x).sum().backward()
    return x.grad


@program
def autograd_grad_inside_a_function_backward(L, log):
    class F(L.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin() if L.name == "torch" else L.sin(x)

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            with L.enable_grad():
                t = L.tensor(x.tolist(), requires_grad=True)
                (d,) = L.grad(t.sin().sum(), t)
            return g * d

    x = L.tensor([0.5, 1.0], requires_grad=True)
    F.apply(x).sum().backward()
    return x.grad


def _deep_reentrant(L, depth):
    class DeepReentrant(L.Function):
        @staticmethod
        def forward(ctx, x):
            with L.enable_grad():
                ctx.x = L.tensor(x.tolist(), requires_grad=True) - 1
            return ctx.x.detach() * 1 if L.name == "torch" else ctx.x.data.copy()

        @staticmethod
        def backward(ctx, g):
            if ctx.x.item() < 0:
                return g
            with L.enable_grad():
                DeepReentrant.apply(ctx.x).sum().backward()
            return g

    v = L.tensor(float(depth), requires_grad=True)
    DeepReentrant.apply(v).sum().backward()
    return v.grad


@program
def reentrant_backward_100_deep(L, log):
    return _deep_reentrant(L, 100)


@program
def reentrant_backward_2000_deep(L, log):
    return _deep_reentrant(L, 2000)


@program
def backward_inside_a_hook(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    other = L.tensor([5.0], requires_grad=True)

    def hook(g):
        with L.enable_grad():  # (backward runs its hooks without recording)
            (other * other).sum().backward()
        return g

    y = x * 3
    y.register_hook(hook)
    y.sum().backward()
    return [x.grad, other.grad]


@program(raises=ValueError, meaning="inner")
def an_error_in_a_reentrant_backward_propagates(L, log):
    def inner(ctx, h):
        raise ValueError("inner")

    def outer(ctx, g):
        with L.enable_grad():
            _doubler(L, inner).apply(L.tensor([1.0], requires_grad=True)).sum().backward()
        return g

    _doubler(L, outer).apply(L.tensor([1.0], requires_grad=True)).sum().backward()


# ---- more views, and the documented differences -----------------------------------------------
area("views and in-place")


@program(raises=RuntimeError, meaning="no_grad")
def a_view_made_under_no_grad_used_after_its_base_changed_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    with L.no_grad():
        v = h[0:2]
    h.mul_(2)
    (v * 2).sum().backward()


@program
def a_view_made_under_no_grad_of_a_constant_is_fine(L, log):
    h = L.tensor([1.0, 2.0, 3.0])
    with L.no_grad():
        v = h[0:2]
    w = L.tensor(2.0, requires_grad=True)
    (v * w).sum().backward()
    return [v, w.grad]


@program(differs="nograd-view-requires-grad", torch_side=returned([True, True]),
         yaad_side=returned([False, True]))
def a_view_made_under_no_grad_requires_grad(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x * 1
    with L.no_grad():
        v = h[0:2]
    return [v.requires_grad, v.grad_fn is None]


@program(differs="diagonal-read-only", torch_side=returned(np.array([[2.0, 2.0], [3.0, 5.0]])),
         yaad_side=raised(ValueError, "read-only"))
def writing_into_a_diagonal(L, log):
    h = L.tensor([[1.0, 2.0], [3.0, 4.0]])
    h.diagonal().add_(1)
    return h



@program(differs="multi-output-views-writable",
         torch_side=raised(RuntimeError, "multiple views"),
         yaad_side=returned([np.array([2.0, 4.0, 3.0, 4.0]), np.array([8.0, 16.0, 6.0, 8.0])]))
def writing_into_an_output_of_split(L, log):
    x = L.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    b = x * 1
    first, _ = L.split(b, 2)
    first.mul_(2)
    (b * b).sum().backward()
    return [b, x.grad]


@program(differs="overlapping-writes",
         torch_side=raised(RuntimeError, "single memory location"),
         yaad_side=returned([np.array([1.0, 1.0, 2.0]), np.array([4.0, 4.0, 0.0])]))
def assigning_a_tensor_to_an_overlapping_part_of_itself(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = x * 1
    b[1:] = b[:-1]
    (b * b).sum().backward()
    return [b, x.grad]

area("grad mode")


@program(differs="coroutine-grad-mode", torch_side=returned([True, True]),
         yaad_side=returned([False, True]))
def no_grad_on_a_coroutine_function(L, log):
    import asyncio

    @L.no_grad()
    async def f():
        await asyncio.sleep(0)
        return L.is_grad_enabled()

    return [asyncio.run(f()), L.is_grad_enabled()]


area("accumulation")


@program(differs="grad-is-an-array", torch_side=returned("Tensor"),
         yaad_side=returned("ndarray"))
def the_type_of_grad(L, log):
    x = L.tensor([1.0], requires_grad=True)
    (x * 2).sum().backward()
    return type(x.grad).__name__


area("custom Function")


@program(differs="function-forward-arrays", torch_side=returned("Tensor"),
         yaad_side=returned("ndarray"))
def what_function_forward_receives(L, log):
    _doubler(L, on_forward=lambda a: log.append(type(a).__name__)).apply(
        L.tensor([1.0], requires_grad=True))
    return log.pop()


area("checkpoint")


@program(differs="checkpoint-recomputes", torch_side=returned(1), yaad_side=returned(2))
def checkpoint_of_a_function_that_saves_nothing(L, log):
    calls = []

    def f(x):
        calls.append(1)
        return x * 2

    x = L.tensor([1.0], requires_grad=True)
    L.checkpoint(f, x).sum().backward()
    return len(calls)


area("retain_graph")


# PyTorch saves the index of an indexing assignment (and of advanced indexing), so a
# second backward through one raises; basic indexing and a whole-tensor write save none.
@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_an_indexing_assignment_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x + 0
    h[0] = 5.0
    y = h.sum()
    y.backward()
    y.backward()


@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_a_slice_assignment_of_a_tensor_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = L.tensor([7.0], requires_grad=True)
    h = x + 0
    h[1:2] = v
    y = h.sum()
    y.backward()
    y.backward()


@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_an_advanced_index_assignment_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x + 0
    h[[0, 2]] = 5.0
    y = h.sum()
    y.backward()
    y.backward()


@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_an_augmented_slice_assignment_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = x + 0
    h[1:] += 1.0
    y = h.sum()
    y.backward()
    y.backward()


@program(raises=RuntimeError, meaning=FREED)
def second_backward_through_advanced_indexing_raises(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x[[0, 2]].sum()
    y.backward()
    y.backward()


@program
def second_backward_through_basic_indexing_and_whole_writes(L, log):
    x = L.tensor([[1.0, 2.0, 3.0]], requires_grad=True)
    y = x[None, 0, 1:].sum()
    y.backward()
    y.backward()
    h = x + 0
    h[...] = 5.0
    h2 = x + 0
    h2[:] = 4.0
    h3 = x + 0
    h3.fill_(3.0)
    z = (h + h2 + h3 + x).sum()
    z.backward()
    z.backward()
    return x.grad


area("version counters")


@program(raises=RuntimeError, meaning=r"detached in[- ]place")
def detach_in_place_of_a_saved_non_leaf_makes_backward_raise(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 2
    z = y * y  # saves y
    y.detach_()
    z.sum().backward()


area("accumulation")


@program
def del_grad_is_grad_none(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    del x.grad
    first = x.grad
    (x * 3).sum().backward()
    return [first, x.grad]


area("graph building")


@program
def next_functions_of_a_grad_fn(L, log):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 2).sin()
    nf = y.grad_fn.next_functions
    mul = nf[0][0].next_functions
    return [len(nf), nf[0][1], len(mul), type(mul[0][0]).__name__, mul[0][0].variable is x,
            mul[0][1], mul[1]]


area("checkpoint")


@program
def checkpoint_of_a_function_returning_non_tensors(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = L.checkpoint(lambda a: (a.sin(), 3, "s", None, a * 2), x)
    (out[0].sum() + out[4].sum()).backward()
    return [out[1:4], x.grad]


@program(differs="checkpoint-dict-output", torch_side=returned(2),
         yaad_side=raised(TypeError, "tuple"))
def checkpoint_of_a_function_returning_a_dict(L, log):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = L.checkpoint(lambda a: {"y": a.sin(), "n": 2}, x)
    out["y"].sum().backward()
    return out["n"]


@pytest.mark.parametrize("prog", PROGRAMS, ids=lambda p: f"{p.area}: {p.name}")
def test_same_as_pytorch(prog):
    prog.check()


def test_every_difference_is_documented_and_shown():
    import pathlib
    import re

    doc = (pathlib.Path(__file__).parents[2] / "docs" / "pytorch-map.md").read_text()
    section = doc.split("## Deliberate differences", 1)[1]
    documented = set(re.findall(r"^- \*\*`([a-z0-9-]+)`\*\*", section, re.M))
    shown = {p.differs for p in PROGRAMS if p.differs} | {"create-graph-warning"}
    assert documented == shown
    stated = re.search(r"runs (\d+) small programs", doc)
    assert stated and int(stated.group(1)) == len(PROGRAMS) >= 200
    readme = (pathlib.Path(__file__).parents[2] / "README.md").read_text()
    stated = re.search(r"test_torch_mechanics.py` runs (\d+) programs", readme)
    assert stated and int(stated.group(1)) == len(PROGRAMS)

"""The errors that the core (the tensor, the op call, the backward pass) raises, with their
messages in one table: each names what went wrong (the op, the input, the shapes and
dtypes) and what to do, and links its section of docs/errors.md where it has one.

``raise error("freed-graph", name=...)`` raises the entry's exception with its message
filled in from the keywords.
"""

from __future__ import annotations

import re
from typing import Any

_MESSAGES: dict[str, tuple[type[Exception], str]] = {
    # the backward pass (yaad.engine, yaad.gradients)
    "freed-graph": (RuntimeError, (
        "Trying to backward through the graph a second time (or to use saved values after "
        "they were freed): '{name}' has already released what it saved. Pass "
        "retain_graph=True to the first backward() or autograd.grad() to keep it. "
        "(see docs/errors.md#freed-graph)")),
    "reentrant": (RuntimeError, (
        "another backward pass went through '{name}' while this one was running (a "
        "backward call inside a hook or rule, or from another thread, over the same "
        "graph). Run them one after the other.")),
    "output-not-tensor": (TypeError, "backward: output {k} is a {type}, not a Tensor"),
    "no-grad-fn": (RuntimeError, (
        "backward: output {k} does not require grad and has no grad_fn: nothing it "
        "depends on requires grad (or it was computed under no_grad()). "
        "(see docs/errors.md#no-grad-fn)")),
    "empty-inputs": (RuntimeError, (
        "`inputs` argument to {caller}() cannot be empty: pass the tensors to "
        "differentiate with respect to, or leave it out")),
    "input-not-tensor": (TypeError, "input {k} is a {type}, not a Tensor"),
    "input-without-grad": (RuntimeError,
                           "input {k} does not require grad, so it has no gradient"),
    "unused-input": (RuntimeError, (
        "input {k} (shape {shape}) was not used to compute the outputs, so it has no "
        "gradient. Pass allow_unused=True to get None for it.")),
    "non-scalar-backward": (RuntimeError, (
        "backward: output {k} has shape {shape}; a gradient can be created implicitly only "
        "for a scalar. Reduce it (e.g. .sum()) or pass gradient= with shape {shape}. "
        "(see docs/errors.md#non-scalar-backward)")),
    "complex-backward": (RuntimeError, (
        "backward: output {k} is complex ({dtype}); the gradient of a complex output is "
        "not defined without gradient=. Differentiate a real loss, such as .real or "
        "abs(...)**2. (see docs/errors.md#complex-backward)")),
    "root-shape": (RuntimeError, (
        "backward: gradient for output {k} has shape {got}, but the output has shape "
        "{shape}")),
    "rule-sequence": (TypeError, (
        "the gradient rule of '{name}' for input {k} returned a {type} instead of one "
        "array of the input's shape {shape} (a rule computes the gradient of one input; "
        "declare one rule per input)")),
    "rule-axes": (ValueError, (
        "{where} has shape {shape}: more axes than the output and every input ({most} at "
        "most). The rule is wrong.")),
    "rule-shape": (ValueError, (
        "{where}: the gradient has shape {got}, which does not broadcast to the input's "
        "shape {shape} (see docs/errors.md#rule-shape)")),
    "inplace-saved": (RuntimeError, (
        "one of the values needed for gradient computation has been modified by an "
        "in-place operation: {what} of '{name}' (an array of shape {shape} and dtype "
        "{dtype}) is now at version {version}, and was saved before that change. Avoid "
        "the in-place operation, or apply it to a .clone() of the tensor. "
        "(see docs/errors.md#inplace-saved)")),
    "detached-saved": (RuntimeError, (
        "one of the values needed for gradient computation ({what} of '{name}') belongs to "
        "a tensor that was detached in place (.detach_()) after it was saved, so it is no "
        "longer the value that was recorded (PyTorch refuses it too). Use the out-of-place "
        ".detach() instead. (see docs/errors.md#detached-saved)")),
    # the op call (yaad.op)
    "object-operand": (TypeError, (
        "{name}: an operand of type {type} is not an array; NumPy would hold it as one "
        "Python object (dtype object), not as numbers.{hint}")),
    "no-derivative": (TypeError, (
        "{name}: argument '{arg}' requires grad, but {name} has no derivative with respect "
        "to it ({why}), so its gradient would be lost. Pass {arg}.detach() (or a plain "
        "array) if no gradient is wanted there. (see docs/errors.md#no-derivative)")),
    "no-rule": (TypeError, (
        "{name}: argument {i} requires grad, but '{name}' has no gradient rule for it, so "
        "its gradient would be lost. Pass the tensor (shape {shape}, {dtype}).detach() if "
        "no gradient is wanted there, or declare a VJP rule for argument {i}.")),
    "keyword-tensor": (TypeError, (
        "{name}: keyword argument {k}= is a tensor that requires grad; keyword arguments "
        "are not differentiated. Pass it positionally.")),
    # the tensor (yaad.tensor)
    "integer-grad": (TypeError, (
        "only floating point and complex tensors can require gradients; this tensor has "
        "dtype {dtype}. Convert it first, e.g. yaad.tensor(x, dtype=float). "
        "(see docs/errors.md#integer-grad)")),
    "non-leaf-requires-grad": (RuntimeError, (
        "requires_grad_(False) is only allowed on leaf tensors; use .detach() for a "
        "non-leaf.")),
    "detach-view": (RuntimeError, (
        "detach_(): this tensor is a view of another tensor (it shares its memory), and a "
        "view cannot be detached in place. Use .detach() instead.")),
    "vmap-tensor": (TypeError, (
        "Tensor(x) of a tensor inside vmap: use yaad.tensor(x) for a copy, or x.detach()")),
    "object-data": (TypeError, (
        "a tensor holds numbers (or booleans, strings), but this data is an array of dtype "
        "object (shape {shape}: Python objects such as None or tensors mixed with "
        "numbers). Convert it first, e.g. np.asarray(x, dtype=float); to build a tensor "
        "from tensors use yaad.stack.")),
    "non-leaf-grad": (UserWarning, (
        "the .grad of a tensor that is not a leaf is being read: backward() does not fill "
        "it unless .retain_grad() is called on the tensor first (or use autograd.grad to "
        "get the gradient of an intermediate tensor)")),
    "grad-shape": (ValueError,
                   "assigned grad has shape {got}, but the tensor has shape {shape}"),
}


def error(kind: str, **fields: Any) -> Exception:
    """The exception of ``kind`` (a key of the table above), its message filled in."""
    cls, message = _MESSAGES[kind]
    return cls(message.format(**fields))


# PyTorch's keyword names and NumPy's, which yaad uses (design decision 1).
TORCH_KEYWORDS = {"dim": "axis", "keepdim": "keepdims"}
_UNEXPECTED = re.compile(r"^[\w.<>]+\(\) got an unexpected keyword argument '(\w+)'")


def keyword_hint(msg: str, name: str) -> str:
    """A TypeError's message for an unexpected keyword of ``name``, in yaad's words: without
    the private function behind ``name`` and, for a PyTorch keyword (``dim=``), with the
    NumPy name yaad takes instead."""
    match = _UNEXPECTED.match(msg)
    if match is None:
        return msg
    keyword = match.group(1)
    msg = f"unexpected keyword argument '{keyword}'"
    if keyword in TORCH_KEYWORDS:
        msg += (f": yaad takes NumPy's {TORCH_KEYWORDS[keyword]}= where PyTorch has "
                f"{keyword}= (see docs/pytorch-map.md)")
    return msg


def with_op_name(e: Exception, name: str) -> Exception:
    """The exception ``e`` raised inside op ``name``'s forward, with the op's name in front
    of its message (the same exception where it is there already, or cannot be rebuilt)."""
    msg = str(e)
    if isinstance(e, TypeError):
        msg = keyword_hint(msg, name)
    if msg.startswith(name + ":"):
        return e
    try:
        return type(e)(f"{name}: {msg}")
    except Exception:
        return e

"""Recorded paths, their cache, and replaying them.

Recordings of a function for one input signature (shapes, dtypes, requires_grad of the
inputs, the Python values among the arguments, grad mode) form a tree: they share the
op calls up to the first guard (a place where Python looked at a value) and branch on its
outcome. Each stretch between guards becomes one generated function (a "segment"); a
call runs the segments, following the outcomes, to the end of a path (:class:`End`),
which builds the outputs. An outcome never seen before means the function takes a path
not yet recorded: it is recorded (eagerly) and added to the tree.

The outputs that need gradients hang from one node of the ordinary autograd graph whose
VJP runs the path's generated backward program; :class:`CompiledTensor` runs it directly
when ``.backward()`` is called on a compiled function's scalar loss whose inputs are
leaves, the common case, without the engine's bookkeeping.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.backend import backend_name, namespace
from ..core.engine import run_backward
from ..core.grad_mode import state
from ..core.gradients import root_gradient, unit
from ..core.graph import Node, check_saved, new_node
from ..core.graph import clock as _clock
from ..core.hooks import own as own_array
from ..core.lazy import is_lazy
from ..core.op import Op
from ..core.tensor import Tensor, make_tensor
from . import chains, codegen, fused, native
from .codegen import Namespace, item_defs, item_uses, shape_of
from .reverse import reachable, reverse
from .rewrite import simplify
from .tape import Alias, Const, Entry, Guard, Load, Recorder, float_state, outcome_key, same_item

_new = object.__new__


class CompiledTensor(Tensor):
    """The tensor a compiled function returns: a Tensor whose ``backward()`` runs the
    compiled backward program directly when it can (a scalar loss, leaf inputs, no
    hooks, first order), and the ordinary engine otherwise."""

    __slots__ = ()

    def backward(self, gradient: Any = None, retain_graph: bool | None = None,
                 create_graph: bool = False, inputs: Any = None) -> None:
        """Accumulate the gradient of this tensor into the leaves' ``.grad`` (see
        :meth:`Tensor.backward`)."""
        node = self._node
        if inputs is None and not create_graph and type(node) is Node and node.extra is None:
            kw = node.kw
            if kw is not None:
                ctx = kw["_c"]
                end = ctx[0]
                fast = end.fast
                if fast is not None and not state.modes_on:
                    seed = end.one
                    if gradient is not None or seed is None:
                        seed = root_gradient(self, gradient, 0)
                    if fast(node, ctx[1], seed, retain_graph):
                        return
        Tensor.backward(self, gradient, retain_graph, create_graph, inputs)


def _compiled_vjp(i: int, g: Any, ans: Any, *args: Any, _c: list) -> Any:
    """The VJP of a compiled call for its ``i``-th parent (all are computed at once)."""
    if _c[2] is not g:
        end = _c[0]
        slots = _c[1]
        end.check_versions(slots, _c[4])
        if (isinstance(g, Tensor) or any(isinstance(a, Tensor) for a in args)
                or (type(g) is tuple and any(isinstance(x, Tensor) for x in g))
                or end.bwd is None):
            grads = end.eager_vjp(slots, args, g)
        else:
            if end.nout == 1:
                seeds = (g,)
            else:
                xp = np if end.foreign is None else namespace(next(x for x in g if x is not None))
                seeds = tuple(xp.zeros(s, dtype=d) if x is None else x
                              for x, s, d in zip(g, end.out_shapes, end.out_dtypes))
            try:
                grads = end.bwd(slots, *seeds)
            except Exception:
                # A value-dependent failure inside an inlined rule (a singular matrix
                # where the recording had a regular one): eager mode's backward decides.
                grads = end.eager_vjp(slots, args, g)
        _c[2] = g
        _c[3] = grads
    return _c[3][i]


def _compiled_forward(*args: Any, **kw: Any) -> Any:
    raise RuntimeError("a compiled call's node is not called directly")


_OPS: dict[tuple, Op] = {}


def compiled_op(name: str, nout: int) -> Op:
    """The op a compiled function's outputs hang from (one per name and output count)."""
    key = (name, nout)
    spec = _OPS.get(key)
    if spec is None:
        spec = Op(forward=_compiled_forward, name=name, vjps=(_compiled_vjp,), jvps=(),
                  save_args=True, save_ans=True, nout=nout, variadic=True,
                  elementwise=False, selects=False, linear=False)
        _OPS[key] = spec
    return spec


# ---- the end of a path ---------------------------------------------------------------

class End:
    """What a path returns: its outputs, the ``.grad`` accumulations it does, and the
    node (with a generated backward program) its differentiable outputs hang from.

    On another library's arrays (``rec.foreign``) the generated code calls each op as
    eager mode does, in the arrays' namespace, without the NumPy spellings, the implicit
    seed's constants or the fused and native backends."""

    def __init__(self, rec: Recorder, spec: Any, name: str, grad_enabled: bool,
                 fuse: bool | str = False) -> None:
        self.spec = spec
        self.foreign = rec.foreign
        self.native_only = fuse == "native"  # (see kernel)
        fuse = bool(fuse) and self.foreign is None
        # (the NumPy replay may call numba's loops too: see rowwise.py)
        self.numba = fuse and fused.available()
        # What the fused backend needs, until it has been tried (see try_fuse).
        self.to_fuse = (rec.value, len([s for s in rec.src if s[0] == "in"])) if fuse \
            else None
        self.fused_bwd = None  # (kernel, input slots) once fused
        self.fused_call = None  # (kernel, outputs, gradients, inputs) of a fused forward
        self.items = list(rec.items)  # the path, for the create_graph fallback
        self.nslots = len(rec.value)
        self.effects = [(src, s) for src, s in rec.effects]
        self.seen = 1
        self.name = name
        if self.foreign is None:
            codegen.specialize(rec.items, rec.value)
        tensor_slots: list[int] = []
        _tensor_outputs(spec, tensor_slots)
        self.node_outs = [s for s in dict.fromkeys(tensor_slots) if rec.diff[s]]
        if not grad_enabled:
            self.node_outs = []
        self.nout = len(self.node_outs)
        self.out_shapes = [shape_of(rec.value[s]) for s in self.node_outs]
        self.out_dtypes = [rec.value[s].dtype for s in self.node_outs]
        self.parents: list = []
        self.parent_src: list = []
        self.parent_shapes: list = []
        self.bwd = None
        self.bwd_reads: set = set()
        self.copy: tuple = ()
        self.fast = False
        self.one = None
        self.problems: list[str] = []
        if self.nout:
            entries = [it for it in rec.items if type(it) is Entry]
            needed = reachable(entries, set(self.node_outs))
            self.parents = [s for s in sorted(needed)
                            if rec.diff[s] and rec.src[s][0] in ("in", "ext")]
            self.parent_src = [rec.src[s] for s in self.parents]
            self.parent_shapes = [shape_of(rec.value[s]) for s in self.parents]
            self._build_backward(rec)
        self.needs = self._needs()
        self.info = codegen.SlotInfo(rec.value)
        self.info.numba = self.numba
        ns = Namespace()
        self.finish = codegen.build("finish", "slots, inputs", self.finish_lines(ns), ns)
        self.fast = self._generate_fast() if self.fast else None

    def finish_lines(self, ns: Namespace) -> list[str]:
        """Statements building the outputs from the slot values ``slots`` and the call's
        arguments ``inputs``."""
        ns.env.update(_new=_new, _node=new_node, CT=CompiledTensor, T=Tensor, _clock=_clock,
                      _accumulate=_accumulate if self.foreign is None else _accumulate_own,
                      _plain=_plain_tensor, _scalar=_scalar)
        lines = []
        names: dict[int, str] = {}
        if self.nout:
            edges = []
            for j, src in enumerate(self.parent_src):
                p = f"inputs[{src[1]}]" if src[0] == "in" else ns.name(src[1], "x")
                lines.append(f"    p{j} = {p}")
                edges.append(f"p{j}._node or p{j}")
            op = ns.name(compiled_op(self.name, self.nout), "op")
            ans = (f"slots[{self.node_outs[0]}]" if self.nout == 1 else
                   "(" + "".join(f"slots[{o}], " for o in self.node_outs) + ")")
            lines += [
                f"    node = _node({op}, (" + "".join(f"slots[{s}], " for s in self.parents)
                + f"), {{'_c': [{ns.name(self, 'end')}, slots, None, None, _clock[0]]}}, {ans}, ("
                + "".join(e + ", " for e in edges) + "))",
            ]
            for k, o in enumerate(self.node_outs):
                edge = "node" if self.nout == 1 else f"(node, {k})"
                lines += [f"    t{o} = _new(CT)", f"    t{o}._data = slots[{o}]",
                          f"    t{o}._node = {edge}", f"    t{o}.requires_grad = True"]
                names[o] = f"t{o}"
        for src, s in self.effects:
            t = f"inputs[{src[1]}]" if src[0] == "in" else ns.name(src[1], "x")
            lines.append(f"    _accumulate({t}, slots[{s}])")
        lines.append(f"    return {_spec_src(self.spec, ns, names)}")
        return lines

    def _generate_fast(self) -> Any:
        """``fast(node, slots, seed, retain)``: backward straight into the leaves' ``.grad``
        (False: the ordinary engine must do it: a parent is not a leaf, or has hooks)."""
        ns = Namespace()
        ns.env.update(Node=Node, _clock=_clock, end=self, bwd=self.bwd, np=np, _own=own_array)
        n = len(self.parents)
        ps = ", ".join(f"p{j}" for j in range(n)) + ","
        gs = ", ".join(f"g{j}" for j in range(n)) + ","
        lines = [f"    {ps} = node.parents"] if n else []  # (none: leaves made inside)
        for j in range(n):
            # (A tensor's _hooks is unset until a hook is registered; reading an unset slot
            # costs an exception, so it is set to None, which means the same, once.)
            lines += [f"    if p{j}.__class__ is Node or p{j}.__class__ is tuple:",
                      "        return False",
                      "    try:",
                      f"        if p{j}._hooks:",
                      "            return False",
                      "    except AttributeError:",
                      f"        p{j}._hooks = None"]
        lines += ["    if node.epoch < _clock[0]:",
                  "        end.check_versions(slots, node.epoch)",
                  "    try:",
                  f"        {gs if n else '_'} = bwd(slots, seed)",
                  "    except Exception:",
                  "        return False  # the engine's path decides (see _compiled_vjp)"]
        for j, copy in enumerate(self.copy):
            if self.foreign is not None:
                own = f"_own(g{j})"  # (copied by its library)
            elif self.parent_shapes[j] == ():
                own = f"np.array(g{j})"
            elif copy:
                own = f"g{j}.copy()"
            else:
                own = f"g{j}.copy() if g{j}.base is not None else g{j}"
            ind = "    "
            if self.results[j] is None:
                continue  # no gradient reaches this parent
            lines += [f"{ind}q = getattr(p{j}, '_grad', None)",
                      f"{ind}p{j}._grad = ({own}) if q is None else q + g{j}"]
        lines += ["    if not retain:",
                  "        node.args = node.ans = node.kw = None",
                  "    return True"]
        return codegen.build("fast_backward", "node, slots, seed, retain", lines, ns)

    def _needs(self) -> set:
        needs = set(self.bwd_reads) | set(self.parents) | set(self.node_outs)
        _output_slots(self.spec, needs)
        needs.update(s for _, s in self.effects)
        return needs

    def _build_backward(self, rec: Recorder) -> None:
        """Derive the backward program of this path (recorded, then generated)."""
        nfwd = len(rec.value)
        bitems: list = []
        seeds = []
        seed_slots = []
        xp = np if self.foreign is None else namespace(rec.value[self.node_outs[0]])
        for k, o in enumerate(self.node_outs):
            v = xp.ones(self.out_shapes[k], dtype=self.out_dtypes[k])
            s = rec.new_slot(v, None, ("seed", k), False, None)
            seeds.append((o, rec.tensor_of(s)))
            seed_slots.append(s)
        nesc = len(rec.escapes)
        clock = _clock[0]
        rec.target = bitems
        prev_mode = state.enabled
        problems = []
        try:
            with rec.active():
                state.enabled = False
                grads = reverse(rec, seeds, self.parents)
                results = [None if grads.get(s) is None else rec.slot_of(grads[s])
                           for s in self.parents]
        except Exception as e:  # a rule raises for the recorded values: eager decides
            problems.append(f"a gradient rule raised {type(e).__name__}")
        finally:
            state.enabled = prev_mode
            rec.target = rec.items
        problems += rec.escapes[nesc:]
        del rec.escapes[nesc:]
        if _clock[0] != clock:
            problems.append("an in-place operation in a VJP rule")
        if problems:
            self.problems = problems
            return
        self.results = results
        self.seed_slots = seed_slots
        self._generate_backward(rec, bitems, nfwd, seed_slots, results)

    def _generate_backward(self, rec: Recorder, bitems: list, nfwd: int, seeds: list,
                           results: list) -> None:
        info = codegen.SlotInfo(rec.value)
        info.numba = self.numba
        foreign = self.foreign is not None
        if not foreign:
            codegen.specialize(bitems, rec.value)
        wanted = {s for s in results if s is not None}
        kept = simplify(_live_items(bitems, wanted), wanted, info)
        kept = _live_items(kept, wanted)
        defs: set = set()
        live: set = set()
        for it in kept:
            live |= item_uses(it) - defs
            defs.update(item_defs(it))
        live |= wanted - defs
        seed_set = set(seeds)
        reads = sorted(s for s in live if s not in seed_set)
        self.bwd_reads = {s for s in reads if s < nfwd}
        ns = Namespace()
        ns.env["_Stale"] = _Stale
        lines = []
        for s in reads:
            if s < nfwd:
                lines.append(f"    v{s} = slots[{s}]")
            else:  # a constant made while deriving the backward (ones, an identity)
                lines.append(f"    v{s} = {ns.name(rec.value[s])}")
        self.bkept = kept
        recycle = {s for s in wanted if isinstance(rec.value[s], np.ndarray)
                   and rec.value[s].size >= codegen.POOL_MIN}
        # (no parent: the outputs depend on leaves made inside the function alone)
        outs = "".join(("None" if s is None else f"v{s}") + ", " for s in results)
        self._make_one()
        folded: set = set()
        if self.one is not None:
            # The implicit seed 1 of .backward(): what depends on the seed alone (the
            # gradient of a mean, spread over the rows, say) is a constant, recorded.
            folded = set(seeds)
            # Constant arrays a folded item reads (the index arrays of a gathered loss,
            # whose gradient is then a constant one-hot array): read by reference, their
            # contents may change, so the folded branch is taken only while they have the
            # bits they had here (a few hundred bytes each; at most FOLD_BYTES in all).
            arrays: dict = {}
            for it in kept:
                if type(it) is Entry and item_uses(it) <= folded:
                    found = _constant_arrays(it)
                    if found is None or sum(a.nbytes for a in {**arrays, **found}.values()
                                            ) > FOLD_BYTES:
                        continue
                    arrays.update(found)
                    folded.update(item_defs(it))
            # (an item is folded when it reads and writes folded slots only: a shape guard
            # writes nothing, and stays unless what it checks is a folded constant)
            folded_items = [it for it in kept
                            if not (item_uses(it) | set(item_defs(it))) <= folded]
            used = set(wanted)
            for it in folded_items:
                used |= item_uses(it)
            if len(folded_items) < len(kept):
                cond = [f"v{seeds[0]} is {ns.name(self.one, 'one')}"]
                for a in arrays.values():
                    name = ns.name(a, "fa")
                    cond.append(f"{name}.shape == {a.shape!r} and {name}.dtype == "
                                f"{ns.name(a.dtype, 'fd')} and {name}.tobytes() == "
                                f"{ns.name(a.tobytes(), 'fb')}")
                lines.append(f"    if {' and '.join(cond)}:")
                for s in sorted((folded - set(seeds)) & used):
                    lines.append(f"        v{s} = {ns.name(rec.value[s], 'k')}")
                if not foreign:
                    folded_items = chains.replay_items(folded_items, wanted, info)
                lines += codegen.body_lines(folded_items, ns, indent="        ", shapes=info,
                                            recycle=recycle, fail="raise _Stale",
                                            foreign=foreign)
                lines.append(f"        return ({outs})")
            else:
                folded = set()
        lines += codegen.body_lines(chains.replay_items(kept, wanted, info) if not foreign
                                    else kept, ns, shapes=info, recycle=recycle,
                                    fail="raise _Stale", foreign=foreign)
        lines.append(f"    return ({outs})")
        params = "slots, " + ", ".join(f"v{s}" for s in seeds)
        self.bwd = codegen.build("backward", params, lines, ns)
        # A gradient may be handed to .grad as it is only if it is a fresh array: made by
        # an op of the backward program, not a view, not given to two parents.
        made = {}
        for it in kept:
            if type(it) is Entry:
                for o in it.outs:
                    made[o] = it
        copy = []
        seen: set = set()
        for s in results:
            e = made.get(s)
            fresh = (e is not None and s not in seen and s not in folded
                     and getattr(rec.value[s], "base", None) is None
                     and not any(rec.value[r.i] is rec.value[s] for r in e.args
                                 if hasattr(r, "i")))
            copy.append(not fresh)
            if s is not None:
                seen.add(s)
        self.copy = tuple(copy)
        if self.nout == 1:
            self.fast = True

    def _make_one(self) -> None:
        if self.nout == 1 and self.foreign is None:
            shape, dtype = self.out_shapes[0], self.out_dtypes[0]
            if int(np.prod(shape)) == 1 and dtype.kind != "c":
                self.one = unit(dtype, shape)  # the implicit gradient of a real scalar

    def try_fuse_backward(self) -> None:
        """With the fused backend: the backward pass, with the forward recomputed in
        front of it, as one kernel reading only the inputs (see ``fused``)."""
        value, ninputs = self.to_fuse
        if self.bwd is None or not fused.available():
            return
        fwd = _unguarded(self.items, "meta", "shape")
        program = _live_items(fwd + _unguarded(self.bkept, "shape"),
                              {s for s in self.results if s is not None})
        defs: set = set()
        uses: set = set()
        for it in program:
            uses |= item_uses(it) - defs
            defs.update(item_defs(it))
        inputs = sorted(s for s in uses if s < ninputs)
        run = kernel(program, inputs + self.seed_slots, self.results, value, self.nslots)
        if run is None:
            return
        self.fused_bwd = (run, inputs)
        self._set_backward(None)
        self.bwd_reads = set(inputs)
        self.needs = self._needs()
        self.copy = tuple(s is not None and self.results.index(s) != k
                          for k, s in enumerate(self.results))

    def _set_backward(self, ready: int | None) -> None:
        """The backward as the fused kernel recomputing from the inputs; with ``ready``,
        the gradients for the implicit seed 1 are first taken from ``slots[ready]``, where the
        forward kernel left them (once: a second backward recomputes)."""
        run, inputs = self.fused_bwd
        ns = Namespace()
        seeds = ", ".join(f"v{s}" for s in self.seed_slots)
        args = ", ".join([f"slots[{s}]" for s in inputs] + [f"v{s}" for s in self.seed_slots])
        lines = []
        if ready is not None:
            one = ns.name(self.one, "one")
            # (computed in the call's floating-point state: where an error now raises,
            # the kernel runs again, as its NumPy replay)
            ns.env["_float_state"] = float_state
            lines += [f"    if {seeds} is {one} and _float_state() is None:",
                      f"        g = slots[{ready}]",
                      "        if g is not None:",
                      f"            slots[{ready}] = None",
                      "            return g"]
        lines.append(f"    return {ns.name(run, 'fused')}({args})")
        self.bwd = codegen.build("backward", "slots, " + seeds, lines, ns)
        if self.fast is not None:
            self.fast = self._generate_fast()

    def check_versions(self, slots: list, epoch: int) -> None:
        """Raise, as eager mode does, if an array the backward reads (an input, a tensor
        read from outside, an output) was changed in place since the call."""
        if epoch < _clock[0]:
            # (without a backward program, eager_vjp reads any forward value)
            reads = sorted(self.bwd_reads) if self.bwd is not None else range(len(slots))
            saved = _Saved(self.name, tuple(slots[s] for s in reads if slots[s] is not None), epoch)
            check_saved(saved)

    def eager_vjp(self, slots: list, args: tuple, g: Any) -> tuple:
        """The VJP by re-running the path on tensors (create_graph, no backward program,
        or a backward program that failed for these values): the parents' values are
        ``args`` (tensors linked to the graph, or arrays)."""

        if self.effects or any(type(it) is Entry and it.op.fn is None for it in self.items):
            raise NotImplementedError(
                f"{self.name}: differentiating through a compiled function that computes "
                f"gradients inside (backward(), autograd.grad with a rule that reads "
                f"values) is not supported here; compile the outer computation.")
        with _enable_grad():
            return self._eager_vjp(slots, args, g)

    def _eager_vjp(self, slots: list, args: tuple, g: Any) -> tuple:
        vals: dict[int, Any] = {}
        for s, a in zip(self.parents, args):
            if isinstance(a, Tensor):
                vals[s] = a
            else:
                vals[s] = Tensor(a, requires_grad=True)
        for s in range(self.nslots):
            if s not in vals and s < len(slots) and slots[s] is not None and _is_input(self, s):
                vals[s] = slots[s]
        for it in _live_items(self.items, set(self.node_outs)):
            t = type(it)
            if t is Entry:
                if any(o in vals for o in it.outs):
                    continue
                a = [_value(vals, r) for r in it.args]
                kw = {k: _value(vals, v) for k, v in it.kw.items()} if it.kw else {}
                out = it.op.fn(*a, **kw)
                for o, v in zip(it.outs, out if it.op.nout != 1 else (out,)):
                    vals[o] = v
            elif t is Load:
                if it.slot not in vals:
                    vals[it.slot] = it.tensor
            elif t is Const:  # (an array a recorded rule computed with)
                vals[it.slot] = it.value
            elif t is Alias:
                v = vals[it.of]
                vals[it.slot] = v.detach() if isinstance(v, Tensor) else v
        outs = [vals[s] for s in self.node_outs]
        gs = (g,) if self.nout == 1 else tuple(g)
        pairs = [(o, x) for o, x in zip(outs, gs) if x is not None]
        ins = [vals[s] for s in self.parents]
        create = isinstance(g, Tensor) or any(isinstance(a, Tensor) for a in args)
        res = run_backward(tuple(o for o, _ in pairs), tuple(x for _, x in pairs), None,
                           create, tuple(ins), capture=True, allow_unused=True)
        return tuple(res or ())


class _enable_grad:
    def __enter__(self) -> None:
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc: object) -> None:
        state.enabled = self.prev


class _Saved:
    """What ``check_saved`` reads of a node: the arrays a compiled backward reads."""

    __slots__ = ("op", "args", "ans", "extra", "epoch")

    def __init__(self, name: str, arrays: tuple, epoch: int) -> None:
        self.op = compiled_op(name, 1)
        self.args = arrays
        self.ans = None
        self.extra = None
        self.epoch = epoch


def kernel(items: list, params: list, results: list, value: list, consts: int,
           native_only: bool = False) -> Any:
    """One compiled function for a program: the fused backend's (elementwise), else the
    native backend's (small linear algebra, kept only if faster than NumPy), else None.
    Both take ``params`` and return ``results`` (see ``fused.fuse``); a slot from
    ``consts`` on that the program reads but does not make is a constant made while
    deriving the backward (a seed of ones, an identity), any other one rejects it.
    ``native_only``: the native backend's, however short the program and whether or not
    it is faster (for callers that run it in loops of their own, see ``Tree.native``)."""
    if native_only:
        if native.worthwhile(items, value, short=True):
            return native.build(items, params, results, value, consts, force=True)
        return None
    if fused.worthwhile(items, value):
        run = fused.fuse(items, params, results, value, consts)
        if run is not None:
            return run
    if native.worthwhile(items, value):
        return native.build(items, params, results, value, consts)
    return None


def _unguarded(items: list, *kinds: str) -> list:
    """``items`` without their guards of these kinds."""
    return [it for it in items if type(it) is not Guard or it.kind not in kinds]


class _Stale(Exception):
    """A shape guard of a backward program failed (eager mode's backward decides)."""


def _is_input(end: End, s: int) -> bool:
    for it in end.items:
        if type(it) is not Guard and s in item_defs(it):
            return False
    return True


def _value(vals: dict, r: Any) -> Any:
    from .tape import Slot, SlotTuple

    if type(r) is Slot:
        v = vals[r.i]
        if not r.tensor and isinstance(v, Tensor):
            return v._data
        return v
    if type(r) is SlotTuple:
        items = [_value(vals, x) for x in r.items]
        return items if r.is_list else tuple(items)
    return r


_IMMUTABLE = (int, float, complex, bool, str, bytes, type(None), slice, type(Ellipsis),
              np.dtype, np.generic)


FOLD_BYTES = 1 << 12  # constant arrays a folded backward checks by their bits, in all


def _constant_arrays(it: Entry) -> dict | None:
    """The NumPy arrays among the constants ``it`` reads (by id), or None when another
    constant is mutable. Arrays are read by reference: their contents may change from call
    to call, so what is computed from them once holds only while they keep their bits."""
    from .tape import Slot, SlotTuple

    found: dict = {}

    def ok(r: Any) -> bool:
        if type(r) is Slot:
            return True
        if type(r) is SlotTuple or type(r) is tuple or type(r) is list:
            return all(ok(x) for x in (r.items if type(r) is SlotTuple else r))
        if type(r) is np.ndarray and not r.dtype.hasobject:
            found[id(r)] = r
            return True
        return isinstance(r, _IMMUTABLE) or isinstance(r, type)

    if all(ok(r) for r in it.args) and all(ok(v) for v in (it.kw or {}).values()):
        return found
    return None


def _live_items(items: list, wanted: set) -> list:
    """The items needed for the slots ``wanted`` (dead-code removal; a shape guard stays
    with the slot it checks)."""
    live = set(wanted)
    kept = []
    for it in reversed(items):
        defs = item_defs(it)
        if type(it) is Guard:
            if it.slot in live:
                kept.append(it)
        elif any(d in live for d in defs):
            kept.append(it)
            live.difference_update(defs)
            live |= item_uses(it)
    kept.reverse()
    return kept


def _accumulate(t: Tensor, g: Any) -> None:
    """Add ``g`` to ``t.grad`` (a copy when it is the first gradient)."""
    prev = getattr(t, "_grad", None)
    t._grad = np.array(g) if prev is None else prev + g


def _accumulate_own(t: Tensor, g: Any) -> None:
    """:func:`_accumulate` for another library's arrays (copied by their library)."""
    prev = getattr(t, "_grad", None)
    t._grad = own_array(g) if prev is None else prev + g


def _scalar(a: Any) -> Any:
    return a[()] if isinstance(a, np.ndarray) else a


def _plain_tensor(a: Any) -> Tensor:
    return make_tensor(a)


def _spec_src(spec: Any, ns: Namespace, names: dict) -> str:
    kind = spec[0]
    if kind == "T":
        s = spec[1]
        return names.get(s) or f"_plain(slots[{s}])"
    if kind == "A":
        return f"_scalar(slots[{spec[1]}])" if spec[2] else f"slots[{spec[1]}]"
    if kind == "IN":
        return f"inputs[{spec[1]}]"
    if kind == "OBJ":
        return ns.name(spec[1], "x")
    if kind == "C":
        return ns.literal(spec[1])
    items = [_spec_src(c, ns, names) for c in spec[-1]]
    if kind == "dict":
        keys = [ns.literal(k) for k in spec[1]]
        return "{" + ", ".join(f"{k}: {v}" for k, v in zip(keys, items)) + "}"
    t = spec[1]
    if t is list:
        return "[" + ", ".join(items) + "]"
    if t is tuple:
        return "(" + "".join(i + ", " for i in items) + ")"
    return f"{ns.name(t, 'type')}(" + ", ".join(items) + ")"  # a namedtuple


def _tensor_outputs(spec: Any, out: list) -> None:
    kind = spec[0]
    if kind == "T":
        out.append(spec[1])
    elif kind in ("tuple", "list", "dict"):
        for c in spec[-1]:
            _tensor_outputs(c, out)


def _output_slots(spec: Any, out: set) -> None:
    kind = spec[0]
    if kind in ("T", "A"):
        out.add(spec[1])
    elif kind in ("tuple", "list", "dict"):
        for c in spec[-1]:
            _output_slots(c, out)


# ---- the tree of paths for one signature -------------------------------------------------

class Segment:
    """Items up to a guard (or to the end of a path), then the branches."""

    __slots__ = ("items", "guard", "children", "end", "fn", "table")

    def __init__(self, items: list) -> None:
        self.items = items
        self.guard = None
        self.children: dict = {}
        self.end: End | None = None
        self.fn = None
        self.table: dict = {}  # outcome -> the child's generated function


def _chain(items: list, end: End) -> Segment:
    """Segments for a path's items, split at its branching guards."""
    cut = [k for k, it in enumerate(items) if type(it) is Guard and it.kind not in ASSERTS]
    start = 0
    first = seg = None
    for k in [*cut, len(items)]:
        new = Segment(items[start:k])
        if seg is None:
            first = new
        else:
            seg.children[_outcome(seg.guard)] = new
        seg = new
        if k < len(items):
            seg.guard = items[k]
        start = k + 1
    seg.end = end
    return first


ASSERTS = ("meta", "shape")  # guards that are assertions, not branch points


def _split(seg: Segment, k: int) -> None:
    """Make the assertion ``seg.items[k]`` the branch point of ``seg``: what followed it
    becomes the child for its recorded outcome."""
    rest = Segment(seg.items[k + 1:])
    rest.guard, rest.children, rest.end = seg.guard, seg.children, seg.end
    seg.guard = seg.items[k]
    seg.items = seg.items[:k]
    seg.children = {_outcome(seg.guard): rest}
    seg.end = None


def _outcome(g: Guard) -> Any:
    return outcome_key(g.value)


class Tree:
    """The recorded paths of one input signature, and their generated code."""

    def __init__(self, tensors: list[bool], verify: int, foreign: Any = None) -> None:
        self.tensors = tensors  # which inputs are tensors (the others are arrays)
        self.use_library(foreign)
        self.verify = verify  # recordings of a path needed before it is replayed
        self.root: Segment | None = None
        self.nslots = len(tensors)
        self.call = None  # call(inputs) -> outputs, or MISS: generated by generate()
        self.records = 0
        self.state = None  # the check of what the function reads besides its arguments

    def outside(self) -> list[Tensor]:
        """The tensors its recorded paths read from outside the arguments (closures)."""
        found, todo = [], [self.root] if self.root is not None else []
        while todo:
            seg = todo.pop()
            found += [it.tensor for it in seg.items if type(it) is Load]
            todo += seg.children.values()
        return found

    def use_library(self, array: Any) -> None:
        """Record and replay on the library of ``array`` (None: NumPy's): when it is
        another one, the replay calls each op as eager mode does on its arrays (see
        End); ``foreign`` names it, ``lazy`` says whether it is Dask's."""
        self.foreign = None if array is None else backend_name(array)
        self.lazy = is_lazy(array)

    def insert(self, items: list, end: End) -> str:
        """Add a recording: ``new`` path, ``same`` as a recorded one, ``changed`` (an
        outside tensor changed shape, dtype or requires_grad: the tree is reset) or
        ``conflict`` (the function did something else for the same guard outcomes)."""
        self.nslots = max(self.nslots, end.nslots)
        if self.root is None:
            self.root = _chain(items, end)
            return "new"
        seg = self.root
        pos = 0
        while True:
            n = len(seg.items)
            for k in range(n):
                if pos + k >= len(items) or not same_item(seg.items[k], items[pos + k]):
                    other = items[pos + k] if pos + k < len(items) else None
                    mine = seg.items[k]
                    if (type(other) is Guard and type(mine) is Guard
                            and other.kind == mine.kind and other.slot == mine.slot):
                        if mine.kind == "shape":
                            # A shape decided by values (a mask's length) that differs:
                            # from now on a branch point, so both shapes stay recorded.
                            _split(seg, k)
                            seg.children[_outcome(other)] = _chain(items[pos + k + 1:], end)
                            return "new"
                        if mine.kind == "meta":
                            self.root = _chain(items, end)
                            return "changed"
                    return "conflict"
            pos += n
            if seg.guard is None:
                if pos == len(items):
                    seg.end.seen += 1
                    return "same"
                return "conflict"
            nxt = items[pos] if pos < len(items) else None
            if (type(nxt) is not Guard or nxt.slot != seg.guard.slot
                    or nxt.kind != seg.guard.kind):
                return "conflict"
            pos += 1
            child = seg.children.get(_outcome(nxt))
            if child is None:
                seg.children[_outcome(nxt)] = _chain(items[pos:], end)
                return "new"
            seg = child

    def paths(self) -> list[list[Segment]]:
        out = []
        stack = [[self.root]]
        while stack:
            path = stack.pop()
            seg = path[-1]
            if seg.guard is None:
                out.append(path)
            else:
                for child in seg.children.values():
                    stack.append([*path, child])
        return out

    def generate(self) -> None:
        """(Re)generate the code of every segment."""
        root = self.root
        single_end = root.end if root.guard is None else None
        if (single_end is not None and single_end.to_fuse is not None
                and single_end.seen >= self.verify):
            single_end.try_fuse_backward()
        paths = self.paths()
        if single_end is None:  # the fused backend takes one-path functions only
            for path in paths:
                path[-1].end.to_fuse = None
        # Dead-code removal: an item is kept if some path needs what it makes.
        keep: set = set()
        for path in paths:
            live = set(path[-1].end.needs)
            for seg in reversed(path):
                if seg.guard is not None:
                    live.add(seg.guard.slot)
                for k in range(len(seg.items) - 1, -1, -1):
                    it = seg.items[k]
                    defs = item_defs(it)
                    if type(it) is Guard:
                        # An assertion on a slot's shape (an op's output, an outside
                        # tensor): kept even where nothing reads the slot, since Python may
                        # have read the shape (``if len(nonzero(x)[0]):``).
                        keep.add((id(seg), k))
                        live.add(it.slot)
                    elif any(d in live for d in defs):
                        keep.add((id(seg), k))
                        live.difference_update(defs)
                        live |= item_uses(it)
        segs: dict[int, Segment] = {}
        for path in paths:
            for seg in path:
                segs[id(seg)] = seg
        kept = {i: [it for k, it in enumerate(seg.items) if (i, k) in keep]
                for i, seg in segs.items()}
        across: set = set()
        info = {}
        slot_info = {}
        for path in paths:
            for seg in path:
                slot_info[id(seg)] = path[-1].end.info
        outside: set = set()
        for i, seg in segs.items():
            defs = set()
            for it in kept[i]:
                outside |= item_uses(it) - defs
                defs.update(item_defs(it))
            if seg.guard is not None:
                outside.add(seg.guard.slot)
            if seg.end is not None:
                outside |= seg.end.needs
        for i in segs:
            kept[i] = simplify(kept[i], outside, slot_info[i])
        for i, seg in segs.items():
            defs: set = set()
            uses: set = set()
            for it in kept[i]:
                uses |= item_uses(it) - defs
                defs.update(item_defs(it))
            if seg.guard is not None:
                uses |= {seg.guard.slot} - defs
            info[i] = (defs, uses, slot_info[i])
            across |= uses
            if seg.end is not None:
                across |= seg.end.needs
        ns = Namespace()
        loads = {it.slot: it.tensor for it in _all_items(segs) if type(it) is Load}
        for seg in segs.values():
            seg.table = {}
        ns.env["MISS"] = MISS
        root = self.root
        for i, seg in segs.items():
            defs, uses, _ = info[i]
            single = seg is root and seg.guard is None
            if single:  # one path: the whole call in one function, reading ``inputs``
                if seg.end.seen < self.verify:
                    self.call = None
                    return
                # (one more slot: where a fused forward leaves the gradients)
                lines = self._state_lines(ns)
                lines.append(f"    slots = [None] * {self.nslots + 1}")
                lines += [f"    v{s} = inputs[{s}]" + ("._data" if self.tensors[s] else "")
                          for s in sorted(uses)]
                # (every input used: eager_vjp, the fallback, may recompute from them;
                # it has the parents' values from the node)
                inputs = set(range(len(self.tensors))) - set(seg.end.parents)
                lines += [f"    slots[{s}] = v{s}" for s in sorted(uses & (across | inputs))]
            else:
                lines = [f"    v{s} = slots[{s}]" for s in sorted(uses)]
            miss = "MISS" if single else "None"
            if single and (seg.end.to_fuse is not None or seg.end.fused_call is not None):
                lines += self._fused_forward(seg, kept[i], uses, defs & across, ns)
            replay = kept[i] if not (single and seg.end.fused_call) else ()
            if self.foreign is None:
                replay = chains.replay_items(replay, across, info[i][2])
            for it in replay:
                if type(it) is Guard and it.kind == "meta":
                    # an outside tensor's shape, dtype, requires_grad
                    want = ns.name(it.value)
                    lines.append(f"    if {codegen.guard_src(it, ns, loads[it.slot])} != "
                                 f"{want}:")
                    lines.append(f"        return {miss}")
                else:
                    lines += codegen.body_lines([it], ns, shapes=info[i][2],
                                                fail=f"return {miss}",
                                                foreign=self.foreign is not None)
            lines += [f"    slots[{s}] = v{s}" for s in sorted(defs & across)]
            if single:
                lines += seg.end.finish_lines(ns)
                self.call = codegen.build("call", "inputs", lines, ns)
                return
            if seg.guard is None:
                lines.append(f"    return {ns.name(seg.end, 'end')}")
            else:
                src = codegen.guard_src(seg.guard, ns, None, self.foreign is not None)
                lines.append(f"    return {ns.name(seg.table, 'branch')}.get({src})")
            seg.fn = codegen.build(f"segment{i}", "slots", lines, ns)
        for seg in segs.values():
            seg.table.update({k: c.fn for k, c in seg.children.items()})
        self.call = self._driver(ns)

    def _state_lines(self, ns: Namespace) -> list[str]:
        """The state check, first thing in ``call`` (a changed state: ``MISS``)."""
        if self.state is None:
            return []
        ns.env.update(self.state.env)
        return self.state.lines("return MISS")

    def _fused_forward(self, seg: Segment, items: list, uses: set, outs: set,
                       ns: Namespace) -> list[str]:
        """The statements of a one-path forward as a fused kernel's call (or, where it
        cannot be fused, nothing: the caller writes them as usual)."""
        end = seg.end
        if end.to_fuse is not None:
            value = end.to_fuse[0]
            end.to_fuse = None  # tried once
            end.fused_call = self._fuse_forward(end, items, uses, outs, value) or False
        if not end.fused_call:
            return []
        run, outs, grads, uses = end.fused_call
        lhs = "".join(f"v{s}, " for s in outs)
        got = "".join(f"g{k}, " for k in range(len(grads)))
        args = ", ".join(f"v{s}" for s in uses)
        lines = [f"    {lhs}{got}= {ns.name(run, 'fused')}({args})"]
        if grads:
            gmap = {s: f"g{k}" for k, s in enumerate(grads)}
            tup = "".join(("None" if s is None else gmap[s]) + ", " for s in end.results)
            lines.append(f"    slots[{self.nslots}] = ({tup})")
        return lines

    def _fuse_forward(self, end: End, items: list, uses: set, outs: set, value: list
                      ) -> tuple | None:
        # (A fused program is elementwise ops and sums, whose shapes follow from the
        # inputs': its shape guards hold.)
        items = _unguarded(items, "shape")
        if not fused.available() or any(type(it) is Guard for it in items):
            return None
        outs = sorted(outs - uses)
        uses = sorted(uses)
        grads = [s for s in end.results if s is not None] if end.fused_bwd else []
        if grads and end.one is not None:
            # One pass computes the loss and its gradients for the seed 1 (what
            # .backward() asks for): the forward and backward share their work.
            # (the forward as recorded: the simplified one may have merged away a value
            # that the backward reads)
            fwd = _unguarded(end.items, "shape")
            program = _live_items(fwd + end.bkept, set(outs) | set(grads))
            run = kernel(program, uses, outs + grads, value, end.nslots, end.native_only)
            if run is not None:
                end._set_backward(self.nslots)
                return run, outs, grads, uses
        run = kernel(items, uses, outs, value, len(value), end.native_only)
        return None if run is None else (run, outs, [], uses)

    def native(self) -> tuple | None:
        """``(program, params, outputs)`` where this signature's replay is one native
        program without guards (a one-path function, recorded without gradients, its
        outputs tensors it made): ``program`` (``native._Program``), the arguments
        its parameters are (``params[j]``: an argument's position), and where each output
        of the function (one, or a tuple's items) is among the program's results. None
        otherwise. For a caller that runs the program in a numba loop of its own."""
        root = self.root
        if root is None or root.guard is not None or self.call is None:
            return None
        end = root.end
        if not end.fused_call or end.effects or end.nout or self.foreign is not None:
            return None
        run, outs, grads, uses = end.fused_call
        if not isinstance(run, native._Program) or grads:
            return None
        spec = end.spec
        leaves = [spec] if spec[0] == "T" else spec[-1] if spec[0] == "tuple" else [None]
        if any(leaf is None or leaf[0] != "T" or leaf[1] not in outs for leaf in leaves):
            return None
        if any(s >= len(self.tensors) for s in uses):
            return None
        return run, list(uses), [outs.index(leaf[1]) for leaf in leaves]

    def _driver(self, ns: Namespace) -> Any:
        """``call(inputs)``: put the inputs in the slot list, run the segments along the
        outcomes to the end of a path, build the outputs (or return ``MISS``)."""
        ns.env["End"] = End
        lines = self._state_lines(ns)
        lines.append(f"    slots = [None] * {self.nslots}")
        lines += [f"    slots[{k}] = inputs[{k}]" + ("._data" if t else "")
                  for k, t in enumerate(self.tensors)]
        lines += [f"    r = {ns.name(self.root.fn, 'seg')}(slots)",
                  "    while r.__class__ is not End:",
                  "        if r is None:",
                  "            return MISS",
                  "        r = r(slots)",
                  f"    if r.seen < {self.verify}:",
                  "        return MISS",
                  "    return r.finish(slots, inputs)"]
        return codegen.build("call", "inputs", lines, ns)


class _Miss:
    def __repr__(self) -> str:
        return "MISS"


MISS = _Miss()  # a call that the recorded paths do not cover


def _all_items(segs: dict) -> list:
    out = []
    for seg in segs.values():
        out.extend(seg.items)
    return out

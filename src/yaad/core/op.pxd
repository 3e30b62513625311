# Cython declarations for op.py in the compiled build (see graph.pxd): the Op's slots as C
# fields (the backward loop reads several per node), and the op call's phases (the fast
# paths, what a node saves) as C functions. op.py stays the one implementation; every slot
# of op.Op is declared here, with the same meaning.
import cython

from yaad.core.graph cimport Node, new_node, shape_dtype


cdef class Op:
    cdef public object name, forward, vjps, jvps, save_args, save_ans, nout, variadic
    cdef public object elementwise, selects, linear, fn, single_output, numpy_derivatives
    cdef public object reads, frees, batch, adds_into
    cdef object __weakref__

cdef _call_any(Op spec, tuple args, dict kw)
cdef _call2(Op spec, tuple args)
cdef _call1(Op spec, tuple args)

@cython.locals(i=cython.Py_ssize_t, n=cython.Py_ssize_t, array=cython.bint)
cdef _call_first(Op spec, tuple args)
@cython.locals(i=cython.Py_ssize_t, n=cython.Py_ssize_t, array=cython.bint, tensors=cython.bint)
cdef _call_variadic(Op spec, tuple args, dict kw)
cdef _forward(Op spec, tuple arrays, dict kw)
cdef _output(Op spec, tuple args, ans, Node node, bint rec, bint views)
cdef Node _record(Op spec, tuple arrays, kw, ans, tuple parents)
cdef bint _some_none(tuple parents)

@cython.locals(i=cython.Py_ssize_t)
cdef _kept(Op spec, tuple arrays, Py_ssize_t j, tuple parents, ans)

"""Grad mode as context manager and decorator: functions, generators, coroutines, threads."""

import asyncio
import inspect

import pytest

import yaad


def test_a_decorated_generator_records_nothing_and_leaves_the_caller_alone():
    x = yaad.tensor([1.0], requires_grad=True)

    @yaad.no_grad
    def gen():
        received = yield (x * 2).requires_grad
        while True:
            try:
                received = yield (received, yaad.is_grad_enabled())
            except KeyError:
                received = "caught"

    g = gen()
    assert next(g) is False and yaad.is_grad_enabled()
    assert g.send(5) == (5, False) and yaad.is_grad_enabled()
    assert g.throw(KeyError()) == ("caught", False)
    g.close()
    assert yaad.is_grad_enabled()


def test_an_exception_leaving_a_decorated_generator_restores_the_mode():
    @yaad.no_grad()
    def gen():
        yield 1
        raise ValueError("boom")

    g = gen()
    next(g)
    with pytest.raises(ValueError, match="boom"):
        next(g)
    assert yaad.is_grad_enabled()


def test_a_decorated_coroutine_does_not_change_the_mode_of_other_tasks():
    @yaad.no_grad()
    async def quiet(steps):
        seen = []
        for _ in range(steps):
            seen.append(yaad.is_grad_enabled())
            await asyncio.sleep(0)
        return seen

    async def loud(steps):
        seen = []
        for _ in range(steps):
            seen.append(yaad.is_grad_enabled())
            await asyncio.sleep(0)
        return seen

    async def main():
        return await asyncio.gather(quiet(4), loud(4))

    q, lo = asyncio.run(main())
    assert q == [False] * 4 and lo == [True] * 4
    assert inspect.iscoroutinefunction(quiet)


def test_enable_grad_inside_no_grad_on_a_coroutine():
    x = yaad.tensor([1.0], requires_grad=True)

    @yaad.enable_grad
    async def f():
        await asyncio.sleep(0)
        return (x * 2).requires_grad

    with yaad.no_grad():
        assert asyncio.run(f()) is True
        assert not yaad.is_grad_enabled()


def test_decorating_a_class_or_a_non_callable_is_refused():
    with pytest.raises(TypeError, match="class"):
        @yaad.no_grad()
        class C:
            pass
    with pytest.raises(TypeError, match="function"):
        yaad.no_grad()(3)


def test_set_grad_enabled_as_a_decorator_does_not_change_the_mode_now():
    @yaad.set_grad_enabled(False)
    def f():
        return yaad.is_grad_enabled()

    assert yaad.is_grad_enabled() and f() is False and yaad.is_grad_enabled()


def test_the_op_call_follows_the_grad_mode_of_its_thread():
    # (grad mode is per thread: another thread starts recording, whatever this one does)
    import threading

    import numpy as np

    x = yaad.tensor(np.ones(2), requires_grad=True)
    seen = {}

    def work():
        with yaad.no_grad():
            seen["off"] = (x * 2.0).requires_grad, yaad.sin(x).requires_grad
        seen["on"] = (x * 2.0).requires_grad, yaad.sin(x).requires_grad
        with yaad.no_grad(), yaad.enable_grad():
            seen["again"] = (x * 2.0).requires_grad, yaad.sin(x).requires_grad

    with yaad.no_grad():
        worker = threading.Thread(target=work)
        worker.start()
        worker.join()
        assert not (x * 2.0).requires_grad and not yaad.sin(x).requires_grad
    assert seen == {"off": (False, False), "on": (True, True), "again": (True, True)}
    assert (x * 2.0).requires_grad and yaad.sin(x).requires_grad

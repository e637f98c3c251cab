# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for ray.serve, from Ray Serve's documentation: the deployment and batch
decorators.

deployment(**options) keeps the options and gives the class a bind(); batch(
max_batch_size=..., batch_wait_timeout_s=...) wraps an async method that takes a
list and returns a list of the same length: single calls wait on the event loop
until max_batch_size have come or batch_wait_timeout_s has passed since the
first, run as one call, and each gets its own item, or the exception when the
method raised (every call of that batch) or answered a list of another length.
"""

import asyncio
import functools
import inspect

# What the deployment decorators saw, for the tests: (class name, options).
deployments = []


class Application:
    def __init__(self, cls, args, kwargs):
        self.cls = cls
        self.args = args
        self.kwargs = kwargs

    def instantiate(self):
        """The replica: the class constructed with the bound arguments."""
        return self.cls(*self.args, **self.kwargs)


class Deployment:
    def __init__(self, cls, options):
        self.cls = cls
        self.options = options

    def bind(self, *args, **kwargs):
        return Application(self.cls, args, kwargs)


_KNOWN = {"name", "num_replicas", "ray_actor_options", "max_ongoing_requests",
          "max_queued_requests", "user_config", "autoscaling_config"}


def deployment(_cls=None, **options):
    unknown = set(options) - _KNOWN
    if unknown:
        raise TypeError("serve.deployment got unexpected options %s" % sorted(unknown))

    def wrap(cls):
        deployments.append((cls.__name__, dict(options)))
        return Deployment(cls, options)

    return wrap(_cls) if _cls is not None else wrap


class _Queue:
    def __init__(self, method, owner, max_batch_size, timeout_s):
        self.method = method
        self.owner = owner
        self.max_batch_size = max_batch_size
        self.timeout_s = timeout_s
        self.waiting = []  # (item, future)
        self.full = asyncio.Event()
        self.task = None
        self.sizes = []  # the batch sizes run, for the tests

    async def run(self):
        while self.waiting:
            if len(self.waiting) < self.max_batch_size:
                try:
                    await asyncio.wait_for(self.full.wait(), self.timeout_s)
                except asyncio.TimeoutError:
                    pass
            batch, self.waiting = (self.waiting[:self.max_batch_size],
                                   self.waiting[self.max_batch_size:])
            self.full.clear()
            self.sizes.append(len(batch))
            try:
                results = await self.method(self.owner, [item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError("Batched function doesn't preserve batch size: %d in,"
                                       " %d out" % (len(batch), len(results)))
                for (_, future), result in zip(batch, results):
                    future.set_result(result)
            except Exception as e:
                for _, future in batch:
                    future.set_exception(e)
        self.task = None

    def put(self, item):
        future = asyncio.get_running_loop().create_future()
        self.waiting.append((item, future))
        if len(self.waiting) >= self.max_batch_size:
            self.full.set()
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self.run())
        return future


def batch(_func=None, max_batch_size=10, batch_wait_timeout_s=0.01):
    if not isinstance(max_batch_size, int) or max_batch_size < 1:
        raise ValueError("max_batch_size must be an integer >= 1")
    if not isinstance(batch_wait_timeout_s, (int, float)) or batch_wait_timeout_s < 0:
        raise ValueError("batch_wait_timeout_s must be a float >= 0")

    def wrap(method):
        if not inspect.iscoroutinefunction(method):
            raise TypeError("Functions decorated with @serve.batch must be 'async def'")
        attribute = "_serve_batch_queue_" + method.__name__

        @functools.wraps(method)
        async def call(owner, item):
            queue = getattr(owner, attribute, None)
            if queue is None:
                queue = _Queue(method, owner, max_batch_size, batch_wait_timeout_s)
                setattr(owner, attribute, queue)
            return await queue.put(item)

        return call

    return wrap(_func) if _func is not None else wrap

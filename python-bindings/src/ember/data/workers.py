"""DataLoader's worker processes (num_workers > 0), as PyTorch's: each worker fetches and collates
whole batches whose indices the main process sends it, round robin, with prefetch_factor batches
per worker in flight; the main process yields them in order. Worker i is seeded with
base_seed + i (ember, Python's random, and NumPy's global generator from both), where base_seed
is drawn from the loader's generator for each set of workers. An exception in a worker is
raised again in the main process, of the same type, naming the worker and carrying its
traceback. Workers end when the iterator is dropped or exhausted (with persistent_workers, when
the loader is dropped).

Batches travel between processes as NumPy arrays (Tensors are converted on the way and back), so
a worker runs ember ops on one thread: the CPU kernels' OpenMP pool does not survive fork."""

import multiprocessing
import os
import queue
import random
import traceback

import numpy as np

from ember import _core

_POLL_S = 1.0  # how often a waiting worker checks that its parent is alive


class WorkerInfo:
    """What get_worker_info() returns inside a worker: id, num_workers, seed and dataset."""

    def __init__(self, id, num_workers, seed, dataset):
        self.id, self.num_workers, self.seed, self.dataset = id, num_workers, seed, dataset

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


_worker_info = None


def get_worker_info():
    """In a DataLoader worker process, its WorkerInfo (id, num_workers, seed, dataset); in the
    main process, None. A dataset can split its work by id, and worker_init_fn can seed other
    generators from seed."""
    return _worker_info


class _Shipped:
    """A Tensor on its way between processes: its values as a NumPy array, and its dtype."""

    def __init__(self, tensor):
        self.dtype = str(tensor.dtype).replace("ember.", "")
        t = tensor.detach().cpu()
        self.array = (t.float() if self.dtype == "bfloat16" else t).numpy()

    def tensor(self):
        return _core.tensor(self.array, dtype=self.dtype)


def _map(batch, fn, kind):
    """fn applied to every object of `kind` in a batch (inside tuples, lists and dicts)."""
    if isinstance(batch, kind):
        return fn(batch)
    if isinstance(batch, dict):
        return {k: _map(v, fn, kind) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)):
        return type(batch)(_map(v, fn, kind) for v in batch)
    return batch


class _Failure:
    """An exception raised in a worker, with its traceback as text (exceptions need not pickle)."""

    def __init__(self, worker_id, error):
        self.worker_id, self.type = worker_id, type(error)
        self.text = "".join(traceback.format_exception(type(error), error, error.__traceback__))

    def reraise(self):
        message = (f"Caught {self.type.__name__} in DataLoader worker {self.worker_id}.\n"
                   f"Original traceback (worker {self.worker_id}):\n{self.text}")
        try:
            error = self.type(message)
        except Exception:
            error = RuntimeError(message)
        raise error


def _one_thread():
    """Keeps a forked worker off the OpenMP pool it inherited without its threads."""
    os.environ["OMP_NUM_THREADS"] = "1"
    try:
        import ctypes

        ctypes.CDLL("libgomp.so.1").omp_set_num_threads(1)
    except (OSError, AttributeError):
        pass


def _seed(seed, worker_id):
    _core.manual_seed(seed)
    random.seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, seed]).generate_state(4))


def _loop(fetch, dataset, index_queue, result_queue, worker_id, num_workers, seed, init_fn,
          parent):
    global _worker_info
    _one_thread()
    _seed(seed, worker_id)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    try:
        if init_fn is not None:
            init_fn(worker_id)
    except Exception as error:
        result_queue.put((None, _Failure(worker_id, error)))
        return
    while True:
        try:
            task = index_queue.get(timeout=_POLL_S)
        except queue.Empty:
            if os.getppid() != parent:
                return
            continue
        if task is None:
            return
        number, indices = task
        try:
            batch = _map(fetch(indices), _Shipped, _core.Tensor)
        except Exception as error:
            batch = _Failure(worker_id, error)
        result_queue.put((number, batch))


class WorkerPool:
    """num_workers processes over one dataset, and the queues to them."""

    def __init__(self, loader, base_seed):
        context = loader.multiprocessing_context or multiprocessing.get_context()
        if isinstance(context, str):
            context = multiprocessing.get_context(context)
        n = loader.num_workers
        self.results = context.Queue()
        self.tasks = [context.Queue() for _ in range(n)]
        self.processes = []
        for i in range(n):
            p = context.Process(
                target=_loop,
                args=(loader._fetch, loader.dataset, self.tasks[i], self.results, i, n,
                      base_seed + i, loader.worker_init_fn, os.getpid()),
                daemon=True,
            )
            p.start()
            self.processes.append(p)
        self.timeout = loader.timeout
        self.user = None  # the WorkerIterator fetching with these workers now

    def busy(self):
        """Whether an iterator still has batches in flight here (a new epoch needs new workers)."""
        user = self.user
        return user is not None and user.pool is self and user.received < user.sent

    def get(self):
        """The next (number, batch) any worker finished; a worker that died is an error."""
        waited = 0.0
        while True:
            try:
                return self.results.get(timeout=_POLL_S)
            except queue.Empty:
                waited += _POLL_S
                dead = [i for i, p in enumerate(self.processes) if not p.is_alive()]
                if dead:
                    codes = [self.processes[i].exitcode for i in dead]
                    self.shutdown()
                    raise RuntimeError(
                        f"DataLoader worker {dead[0]} exited unexpectedly (exit code "
                        f"{codes[0]}); run with num_workers=0 to see the error in this process"
                    ) from None
                if self.timeout and waited >= self.timeout:
                    self.shutdown()
                    raise RuntimeError(
                        f"DataLoader timed out after {self.timeout} s waiting for a batch from "
                        "its workers"
                    ) from None

    def shutdown(self):
        """Asks every worker to stop and waits for it (terminating one that does not)."""
        if not self.processes:
            return
        for q in self.tasks:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.processes:
            p.join(timeout=5)
            if p.is_alive():
                p.terminate()
                p.join()
        for q in [*self.tasks, self.results]:
            q.cancel_join_thread()
            q.close()
        self.processes = []

    def __del__(self):
        self.shutdown()


class WorkerIterator:
    """One epoch over a loader's batches, fetched by its workers and yielded in order."""

    def __init__(self, loader, batches, pool, owns_pool):
        self.loader, self.pool, self.owns_pool = loader, pool, owns_pool
        self._processes = list(pool.processes)  # for tests: the workers this epoch uses
        pool.user = self
        self.batches = iter(enumerate(batches))
        self.sent = self.received = 0
        self.ready = {}
        self.total = len(batches)
        for _ in range(loader.prefetch_factor * loader.num_workers):
            self._send()

    def _send(self):
        item = next(self.batches, None)
        if item is not None:
            number, indices = item
            self.pool.tasks[number % len(self.pool.tasks)].put((number, indices))
            self.sent += 1

    def __iter__(self):
        return self

    def __next__(self):
        if self.received == self.total:
            self._close()
            raise StopIteration
        while self.received not in self.ready:
            number, batch = self.pool.get()
            if number is None:  # worker_init_fn failed: no batch will come from that worker
                self._close(force=True)
                batch.reraise()
            self.ready[number] = batch
        batch = self.ready.pop(self.received)
        if isinstance(batch, _Failure):  # raised in its turn, after the batches before it
            self._close(force=True)
            batch.reraise()
        self.received += 1
        self._send()
        return self.loader._finish(_map(batch, _Shipped.tensor, _Shipped))

    def _close(self, force=False):
        pool, self.pool = self.pool, None
        if pool is not None and (self.owns_pool or force):
            pool.shutdown()
            if self.loader._pool is pool:
                self.loader._pool = None

    def __del__(self):
        # a persistent pool may still have this epoch's batches in flight: it cannot be reused
        if self.pool is not None and self.received < self.sent:
            self._close(force=True)
        elif self.pool is not None:
            self._close()

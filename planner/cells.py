"""Independent pieces of work ("cells") run in parallel: on a Dask cluster when the
``dask[distributed]`` extra is installed (a local cluster of processes, or an existing one by its
scheduler's address), else one after another in this process.  Dask's own retries rerun a cell
whose worker died; a cell that raises is reported with its inputs and error, and the others go
on.  Results can be kept per cell, named by a hash of the cell's inputs, so that a rerun computes
only the cells that changed.

Used by ``moe-planner landscape``, ``validate --runs --leave-out`` (one refit per held-out group)
and ``compare --assumptions`` (one comparison per assumption)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import SpecError

INSTALL_HINT = "pip install 'moe-planner[dask]' to run the cells in parallel"
#: how often Dask reruns a cell that raised (a cell whose worker died is rerun by the scheduler
#: on another worker, up to distributed's ``allowed-failures``)
RETRIES = 2


@dataclass(frozen=True)
class Executor:
    """Where cells run: ``workers`` processes of a local Dask cluster (default: the cores; 1: in
    this process, no Dask), or the cluster at ``scheduler`` (``tcp://host:8786``); ``cache``: a
    directory each cell's result is kept in, named by its inputs' hash."""

    workers: int | None = None
    scheduler: str | None = None
    cache: str | Path | None = None

    def __post_init__(self) -> None:
        w = self.workers
        if w is not None and (isinstance(w, bool) or not isinstance(w, int) or w < 1):
            raise SpecError("<input>", "workers", f"a whole number of worker processes >= 1, got {w!r}")


@dataclass
class Cell:
    """One cell: its ``key`` (inputs that name it, hashed for its cache file) and its result, or
    the error it raised."""

    key: Any
    result: Any = None
    error: str | None = None
    cached: bool = False


@dataclass
class Run:
    """The cells of one run, in the order given, and how they ran."""

    cells: list[Cell]
    backend: str                         #: dask (local or at an address) or one process
    computed: int = 0                    #: cells computed by this run (the others from the cache)
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Cell]:
        return [c for c in self.cells if c.error is not None]


def have_dask() -> bool:
    try:
        import dask  # noqa: F401
        import distributed  # noqa: F401
    except ImportError:
        return False
    return True


def cell_hash(key: Any) -> str:
    """A stable name for a cell's inputs (their pickled form; what a result was computed from)."""
    return hashlib.sha256(pickle.dumps(key, protocol=4)).hexdigest()[:24]


def _cached(cache: Path | None, digest: str) -> tuple[bool, Any]:
    if cache is None:
        return False, None
    path = cache / f"{digest}.pkl"
    if not path.is_file():
        return False, None
    try:
        with open(path, "rb") as fh:
            return True, pickle.load(fh)
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return False, None  # a file from another version or cut short: computed again


def _keep(cache: Path | None, digest: str, result: Any) -> None:
    if cache is None:
        return
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=f".{digest}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            pickle.dump(result, fh, protocol=4)
        os.replace(tmp, cache / f"{digest}.pkl")
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _safe(fn: Callable[[Any], Any], arg: Any) -> tuple[bool, Any]:
    """``fn(arg)``, or the one line of the SpecError it raised (a bad input or an infeasible cell:
    the same on every try, so reported, not retried); any other error is raised, for Dask to
    retry the cell."""
    try:
        return True, fn(arg)
    except SpecError as exc:
        return False, str(exc)


def _error(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def run_cells(fn: Callable[[Any], Any], keys: Sequence[Any], executor: Executor | None = None,
              label: str = "cells") -> Run:
    """``fn(key)`` for every key: results in the order of ``keys`` (see the module docstring).
    ``fn`` and the keys must pickle (a module-level function) to run on Dask.  No ``executor``:
    one after another in this process (a caller asks for workers)."""
    ex = executor or Executor(workers=1)
    if ex.scheduler is not None and not have_dask():  # (before anything is written)
        raise SpecError("<input>", "--scheduler", f"the dask extra ({INSTALL_HINT})")
    cache = Path(ex.cache) if ex.cache is not None else None
    made = []  # the folders this run makes, removed again if it fails before keeping a cell
    if cache is not None:
        made = [d for d in (cache, *cache.parents) if not d.exists()]
        try:
            cache.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SpecError(str(cache), "cache", f"a directory the cells can be kept in "
                            f"({exc.strerror or exc})") from None
    cells = [Cell(k) for k in keys]
    digests = [cell_hash(k) for k in keys]
    todo = []
    for i, (c, d) in enumerate(zip(cells, digests, strict=True)):
        hit, value = _cached(cache, d)
        if hit:
            c.result, c.cached = value, True
        else:
            todo.append(i)
    parallel = ex.scheduler is not None or (ex.workers or os.cpu_count() or 1) > 1
    notes = []
    if parallel and not have_dask():
        notes.append(f"one process ({INSTALL_HINT})")
        parallel = False
    if parallel and todo:
        try:
            backend = _run_dask(fn, cells, todo, digests, cache, ex, label)
        except SpecError:
            for d in made:  # (innermost first; a folder a kept cell is in stays)
                with contextlib.suppress(OSError):
                    d.rmdir()
            raise
    else:
        from planner.outputs import progress

        for i in progress(todo, label):
            try:
                ok, value = _safe(fn, cells[i].key)
            except Exception as exc:  # noqa: BLE001  (a cell's defect is reported with its inputs)
                ok, value = False, _error(exc)
            _settle(cells[i], ok, value, cache, digests[i])
        backend = "one process" if not parallel else "dask (nothing to compute)"
    return Run(cells, backend, len(todo), notes)


def _settle(cell: Cell, ok: bool, value: Any, cache: Path | None, digest: str) -> None:
    if ok:
        cell.result = value
        _keep(cache, digest, value)
    else:
        cell.error = value


def _run_dask(fn: Callable[[Any], Any], cells: list[Cell], todo: list[int], digests: list[str],
              cache: Path | None, ex: Executor, label: str) -> str:
    import logging

    from distributed import Client, LocalCluster, as_completed

    from planner.outputs import progress

    if ex.scheduler is not None:
        try:
            client, cluster = Client(ex.scheduler, timeout="30s"), None
        except (OSError, TimeoutError, ValueError) as exc:
            raise SpecError("<input>", "--scheduler", f"a Dask scheduler that answers at {ex.scheduler!r} "
                            f"({_error(exc)})") from None
        backend = f"dask at {ex.scheduler}"
    else:
        import dask

        n = ex.workers or os.cpu_count() or 1
        # one single-threaded process per core (the sweeps are numpy: threads would share the GIL),
        # forked from this one where the platform forks: a worker then starts with the package
        # imported and its compiled equations and specs loaded (a spawned one spends 2-3 s on them)
        fork = {"distributed.worker.multiprocessing-method": "fork"} if sys.platform == "linux" else {}
        with dask.config.set(fork):
            cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                                   silence_logs=logging.ERROR)
        client = Client(cluster)
        backend = f"dask, {n} local worker processes"
    try:
        futures = client.map(_safe, [fn] * len(todo), [cells[i].key for i in todo], retries=RETRIES,
                             pure=False)
        where = {f.key: i for f, i in zip(futures, todo, strict=True)}
        for fut in progress(as_completed(futures), label, total=len(futures)):
            i = where[fut.key]
            try:
                ok, value = fut.result()
            except Exception as exc:  # noqa: BLE001  (failed on every retry, or its workers all lost)
                ok, value = False, _error(exc)
            _settle(cells[i], ok, value, cache, digests[i])
    finally:
        client.close()
        if cluster is not None:
            cluster.close()
    return backend


def describe(run: Run) -> str:
    """One line: where the cells ran, how many were computed and kept, how many failed."""
    n = len(run.cells)
    parts = [f"{n} cell{'s' if n != 1 else ''}: {run.computed} computed ({run.backend})",
             f"{n - run.computed} from the cache"]
    if run.failed:
        parts.append(f"{len(run.failed)} failed")
    return "; ".join(parts) + "".join(f"; {t}" for t in run.notes)

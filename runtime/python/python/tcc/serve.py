"""Serving a tcc artifact with Ray Serve (docs/serving.md).

Each replica of the ``TccModel`` deployment loads the artifact on its own
device (``device``, else ``TCC_DEVICE``, else the first GPU, else the first
CPU device; a replica given ``ray_actor_options={"num_gpus": 1}`` sees the
GPU Ray assigns it through ``CUDA_VISIBLE_DEVICES``) and answers requests
through a dynamic batcher (``@serve.batch``):

* **Batched by rows.** When every input and output of the function has the
  same first dimension B > 1 (the compiled batch size), a request may carry
  any number of rows n, 1 <= n <= B (the other dimensions exactly the
  artifact's). Waiting requests are concatenated along the first dimension
  up to B rows, padded with zeros to B, run as one call, and each request
  gets its own rows of every output. The artifact's shapes are static, so
  the padding rows are computed and dropped; rows must not depend on each
  other, which holds for a batch dimension of inference models.
* **One by one.** Otherwise (B = 1, or the dimensions do not line up) each
  request carries exactly the artifact's shapes, and the batcher's requests
  run one after another in one worker thread (the batching then saves only
  the scheduling, not the per-call work).

A request is validated before it is queued: a wrong input count, name,
dtype or shape raises ``ValueError`` naming the input, what it expects and
what it got, at once (never a hang). A replica whose artifact does not
load keeps the loader's message and fails its health check with it, so
Serve marks it unhealthy (a new deployment fails with that message), and a
request that reaches it gets the same message.

Requests come through a ``DeploymentHandle`` (``handle.remote(x)``,
``handle.remote({"x": x})``, ``handle.remote(x=x)``; the answer is a list of
numpy arrays, as ``tcc.Model.run`` returns) or over HTTP (``POST`` a JSON
object ``{"inputs": {"x": [[...]]}}``; unnamed inputs are ``input0``,
``input1``, ...; the answer is ``{"outputs": {"name": [[...]], ...}}``, 400
with ``{"error": ...}`` for bad input, 503 when the artifact did not load).

``tcc.serve:app`` builds the application from arguments, for ``serve run
tcc.serve:app artifact=/models/m.so num_replicas=2`` and for the
``import_path``/``args`` of a ``serve deploy`` config file.
"""

import asyncio
import os
import time
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
from ray import serve

import tcc

__all__ = ["TccModel", "application", "app"]

# How long the batcher waits for more rows after a batch's first request,
# by default: this fraction of one call's time (a padded call costs as much
# as a full one), within these bounds (seconds). One request per call: the
# lower bound.
BATCH_WAIT_FRACTION = 0.25
BATCH_WAIT_BOUNDS_S = (0.001, 0.05)
# Requests gathered per batch when the artifact runs one request per call.
DEFAULT_UNBATCHED_QUEUE = 16


class _Request:
    """One validated request: its arrays in input order and its rows."""

    __slots__ = ("arrays", "rows")

    def __init__(self, arrays: List[np.ndarray], rows: int) -> None:
        self.arrays = arrays
        self.rows = rows


def _rows(requests: Sequence[Any]) -> int:
    """The batcher's size of a list of requests: their rows (1 each when the
    artifact is not batched by rows)."""
    return sum(getattr(r, "rows", 1) for r in requests)


def _input_key(index: int, name: str, kind: str = "input") -> str:
    """An input's (or output's) key by name: its name, or ``input0``,
    ``output1``, ... for an unnamed one."""
    return name if name else f"{kind}{index}"


def _label(index: int, name: str, function: str) -> str:
    if name:
        return f"input '{name}' of @{function}"
    return f"input {index} of @{function}"


def _type_string(shape: Sequence[int], dtype: np.dtype) -> str:
    return "x".join(str(d) for d in shape) + "x" + np.dtype(dtype).name


@serve.deployment(max_ongoing_requests=64, health_check_period_s=10)
class TccModel:
    """A Ray Serve deployment answering calls of one function of a tcc
    artifact (see the module's documentation for the batching).

    ``artifact``: the path of a ``tcc compile`` output, readable on every
    node a replica may run on. ``function``: which function (default: the
    only one). ``device``: a device selector as ``TCC_DEVICE`` takes (an
    index, ``gpu``, ``cpu`` or part of a name). ``max_batch_size``: the rows
    of one call when batched by rows (default and most: the compiled batch
    size B), else the requests gathered per batch. ``batch_wait_timeout_s``:
    how long a batch waits to fill after its first request (default: a
    quarter of one call's time, measured at start, within 1-50 ms, when
    batched by rows; else 1 ms).
    """

    def __init__(
        self,
        artifact: str,
        function: Optional[str] = None,
        device: Optional[str] = None,
        max_batch_size: Optional[int] = None,
        batch_wait_timeout_s: Optional[float] = None,
    ) -> None:
        self.artifact = str(artifact)
        self.error: Optional[str] = None
        self.model = None
        self.function = ""
        self.inputs: List[Any] = []
        self.outputs: List[Any] = []
        self.batch = 0
        # Calls of the artifact and requests answered (describe()).
        self.calls = 0
        self.answered = 0
        self.call_seconds = 0.0
        try:
            self._load(function, device)
        except Exception as e:  # the loader's message, kept for check_health
            self.error = f"tcc.serve: cannot load {self.artifact}: {e}"
            return
        if self.batch:
            limit = self.batch if max_batch_size is None else int(max_batch_size)
            if not 1 <= limit <= self.batch:
                self.error = (
                    f"tcc.serve: max_batch_size={limit} for {self.artifact}: "
                    f"between 1 and the compiled batch size {self.batch}"
                )
                return
        else:
            limit = DEFAULT_UNBATCHED_QUEUE if max_batch_size is None else int(max_batch_size)
            if limit < 1:
                self.error = f"tcc.serve: max_batch_size={limit}: at least 1"
                return
        if batch_wait_timeout_s is None:
            low, high = BATCH_WAIT_BOUNDS_S
            wait = BATCH_WAIT_FRACTION * self.call_seconds if self.batch else low
            batch_wait_timeout_s = min(max(wait, low), high)
        self.max_rows = limit
        self.batch_wait_timeout_s = float(batch_wait_timeout_s)
        self._run_batch.set_max_batch_size(limit)
        self._run_batch.set_batch_wait_timeout_s(self.batch_wait_timeout_s)

    def _load(self, function: Optional[str], device: Optional[str]) -> None:
        model = tcc.load(self.artifact, device)
        functions = model.functions
        if function is None:
            if len(functions) != 1:
                names = ", ".join("@" + f.name for f in functions)
                raise ValueError(f"it has {len(functions)} functions ({names}): give function=")
            chosen = functions[0]
        else:
            found = [f for f in functions if f.name == function]
            if not found:
                names = ", ".join("@" + f.name for f in functions)
                raise ValueError(f"no function @{function} (it has {names})")
            chosen = found[0]
        self.function = chosen.name
        self.inputs = [(t.name, np.dtype(t.dtype), tuple(t.shape)) for t in chosen.inputs]
        self.outputs = [(t.name, np.dtype(t.dtype), tuple(t.shape)) for t in chosen.outputs]
        # Calls on zeros before the first request: the first takes the first
        # call's work off the request path, shows that the artifact runs on
        # this device (else the health check fails with the error), and
        # writes the program cache entry, whose lock the other replicas of
        # this machine wait for until then; the second measures a call
        # (the batcher's default wait).
        zeros = [np.zeros(s, d) for _, d, s in self.inputs]
        model.run(*zeros, function=self.function)
        start = time.perf_counter()
        model.run(*zeros, function=self.function)
        self.call_seconds = time.perf_counter() - start
        self.model = model
        shapes = [s for _, _, s in self.inputs + self.outputs]
        first = shapes[0][0] if shapes and shapes[0] else 0
        if first > 1 and self.inputs and all(s and s[0] == first for s in shapes):
            self.batch = first

    def check_health(self) -> None:
        """Ray Serve's health check: fails with the loader's message when the
        artifact did not load."""
        if self.error is not None:
            raise RuntimeError(self.error)

    def describe(self) -> Dict[str, Any]:
        """What this replica serves: artifact, function, device, inputs and
        outputs, the compiled batch size (0: one request per call) and the
        most rows or requests of one batch."""
        self.check_health()
        return {
            "artifact": self.artifact,
            "function": self.function,
            "device": self.model.device,
            "inputs": {_input_key(i, n): (s, d.str) for i, (n, d, s) in enumerate(self.inputs)},
            "outputs": {_input_key(i, n, "output"): (s, d.str) for i, (n, d, s) in enumerate(self.outputs)},
            "batch": self.batch,
            "max_batch_size": self.max_rows,
            "batch_wait_timeout_s": self.batch_wait_timeout_s,
            "call_seconds": self.call_seconds,
            "calls": self.calls,
            "answered": self.answered,
            "pid": os.getpid(),
        }

    async def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """Runs one request: arrays by position, a dict by name, keyword
        arguments by name, or an HTTP request (JSON)."""
        if len(args) == 1 and not kwargs and _is_http_request(args[0]):
            return await self._http(args[0])
        self.check_health()
        request = self._validate(args, kwargs, from_json=False)
        return await self._run_batch(request)

    async def _http(self, http_request: Any) -> Any:
        from starlette.responses import JSONResponse

        if self.error is not None:
            return JSONResponse({"error": self.error}, status_code=503)
        try:
            body = await http_request.json()
        except Exception as e:
            return JSONResponse({"error": f"the body is not JSON: {e}"}, status_code=400)
        if not isinstance(body, dict) or not isinstance(body.get("inputs"), (dict, list)):
            return JSONResponse(
                {"error": 'expected a JSON object {"inputs": {"name": [...], ...}}'},
                status_code=400,
            )
        inputs = body["inputs"]
        try:
            if isinstance(inputs, dict):
                request = self._validate((inputs,), {}, from_json=True)
            else:
                request = self._validate(tuple(inputs), {}, from_json=True)
        except ValueError as e:
            return JSONResponse({"error": str(e)}, status_code=400)
        outputs = await self._run_batch(request)
        return JSONResponse(
            {
                "outputs": {
                    _input_key(i, name, "output"): array.tolist()
                    for i, ((name, _, _), array) in enumerate(zip(self.outputs, outputs))
                }
            }
        )

    def _validate(self, args: tuple, kwargs: dict, from_json: bool) -> _Request:
        """The request's arrays in input order, checked against the artifact
        (ValueError naming the input, expected and got)."""
        f = self.function
        expected = ", ".join(
            f"{_input_key(i, n)}: {_type_string(s, d)}" for i, (n, d, s) in enumerate(self.inputs)
        )
        if len(args) == 1 and not kwargs and isinstance(args[0], dict):
            named: Optional[dict] = args[0]
        elif kwargs and not args:
            named = kwargs
        elif kwargs:
            raise ValueError(f"@{f}: give the inputs by position or by name, not both")
        else:
            named = None
        if named is not None:
            keys = [_input_key(i, n) for i, (n, _, _) in enumerate(self.inputs)]
            for key in named:
                if key not in keys:
                    raise ValueError(f"@{f} has no input named '{key}' (its inputs: {expected})")
            values = []
            for i, key in enumerate(keys):
                if key not in named:
                    label = _label(i, self.inputs[i][0], f)
                    got = ", ".join(map(str, named)) or "no inputs"
                    raise ValueError(f"{label} is missing: expected {expected} (got {got})")
                values.append(named[key])
        else:
            if len(args) != len(self.inputs):
                raise ValueError(
                    f"@{f} takes {len(self.inputs)} input(s) ({expected}), got {len(args)}"
                )
            values = list(args)
        arrays = []
        rows = None
        for i, (value, (name, dtype, shape)) in enumerate(zip(values, self.inputs)):
            label = _label(i, name, f)
            array = _to_array(value, dtype if from_json else None, label)
            if array.dtype != dtype:
                raise ValueError(
                    f"{label}: expected {_type_string(shape, dtype)} (numpy {dtype.name}), got "
                    f"{array.dtype.name} with shape {array.shape}: convert it with "
                    f".astype(np.{dtype.name})"
                )
            if self.batch:
                n = array.shape[0] if array.ndim == len(shape) else -1
                # At most the rows of one call (max_batch_size <= B).
                if n < 1 or n > self.max_rows or array.shape[1:] != shape[1:]:
                    want = ("n",) + shape[1:]
                    raise ValueError(
                        f"{label}: expected shape ({', '.join(map(str, want))}) with "
                        f"1 <= n <= {self.max_rows} (the artifact's "
                        f"{_type_string(shape, dtype)}, batched by rows), got {array.shape}"
                    )
                if rows is not None and n != rows:
                    raise ValueError(
                        f"{label}: {n} rows, but the inputs before it have {rows}: "
                        "every input of a request has the same rows"
                    )
                rows = n
            elif array.shape != shape:
                raise ValueError(
                    f"{label}: expected shape {shape} ({_type_string(shape, dtype)}), "
                    f"got {array.shape}"
                )
            arrays.append(array)
        return _Request(arrays, rows if self.batch else 1)

    @serve.batch(
        max_batch_size=DEFAULT_UNBATCHED_QUEUE,
        batch_wait_timeout_s=BATCH_WAIT_BOUNDS_S[0],
        batch_size_fn=_rows,
    )
    async def _run_batch(self, requests: List[_Request]) -> List[List[np.ndarray]]:
        """The batcher's handler: one call for the batch's rows (padded to
        the compiled batch size), or one call per request, in a worker
        thread (the call releases the GIL)."""
        loop = asyncio.get_running_loop()
        if self.batch:
            return await loop.run_in_executor(None, self._run_rows, requests)
        return await loop.run_in_executor(None, self._run_each, requests)

    def _run_rows(self, requests: List[_Request]) -> List[List[np.ndarray]]:
        total = sum(r.rows for r in requests)
        inputs = []
        for i, (_, dtype, shape) in enumerate(self.inputs):
            parts = [r.arrays[i] for r in requests]
            if total < self.batch:
                parts.append(np.zeros((self.batch - total,) + shape[1:], dtype))
            inputs.append(np.concatenate(parts, axis=0))
        outputs = self.model.run(*inputs, function=self.function)
        self.calls += 1
        self.answered += len(requests)
        answers = []
        start = 0
        for r in requests:
            answers.append([np.array(o[start : start + r.rows]) for o in outputs])
            start += r.rows
        return answers

    def _run_each(self, requests: List[_Request]) -> List[List[np.ndarray]]:
        answers = [self.model.run(*r.arrays, function=self.function) for r in requests]
        self.calls += len(requests)
        self.answered += len(requests)
        return answers


def _is_http_request(value: Any) -> bool:
    try:
        from starlette.requests import Request
    except ImportError:  # pragma: no cover - ray[serve] brings starlette
        return False
    return isinstance(value, Request)


def _to_array(value: Any, dtype: Optional[np.dtype], label: str) -> np.ndarray:
    """A request's value as a numpy array: a numpy array as it is, a DLPack
    producer (a CPU torch tensor) through ``np.from_dlpack``, JSON lists
    converted to the input's dtype."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return np.from_dlpack(value)
    if dtype is not None:
        try:
            return np.asarray(value, dtype=dtype)
        except (TypeError, ValueError) as e:
            raise ValueError(f"{label}: not an array of {dtype.name}: {e}") from None
    raise ValueError(f"{label}: expected a numpy array, got {type(value).__name__}")


def application(
    artifact: str,
    *,
    function: Optional[str] = None,
    device: Optional[str] = None,
    num_replicas: int = 1,
    num_gpus: float = 0,
    num_cpus: Optional[float] = None,
    max_batch_size: Optional[int] = None,
    batch_wait_timeout_s: Optional[float] = None,
    name: str = "TccModel",
    **options: Any,
) -> "serve.Application":
    """The ``TccModel`` deployment of ``artifact`` with ``num_replicas``
    replicas, each with ``num_gpus`` GPUs (``ray_actor_options``) and
    ``num_cpus`` CPUs; any other keyword is a ``Deployment.options``
    argument. Run it with ``serve.run(application("m.so"))``."""
    actor_options: Dict[str, Any] = dict(options.pop("ray_actor_options", None) or {})
    if num_gpus:
        actor_options["num_gpus"] = num_gpus
    if num_cpus is not None:
        actor_options["num_cpus"] = num_cpus
    deployment = TccModel.options(
        name=name,
        num_replicas=num_replicas,
        ray_actor_options=actor_options,
        **options,
    )
    return deployment.bind(
        artifact,
        function=function,
        device=device,
        max_batch_size=max_batch_size,
        batch_wait_timeout_s=batch_wait_timeout_s,
    )


def app(args: Dict[str, Any]) -> "serve.Application":
    """The application builder of ``serve run tcc.serve:app artifact=m.so
    [num_replicas=N] [num_gpus=G] [num_cpus=C] [device=D] [function=F]
    [max_batch_size=B] [batch_wait_timeout_s=S]`` and of a config file's
    ``import_path: tcc.serve:app`` with ``args``."""
    args = dict(args)
    if "artifact" not in args:
        raise ValueError("tcc.serve:app needs artifact=/path/to/model.so")
    known = {
        "artifact": str,
        "function": str,
        "device": str,
        "num_replicas": int,
        "num_gpus": float,
        "num_cpus": float,
        "max_batch_size": int,
        "batch_wait_timeout_s": float,
    }
    unknown = sorted(set(args) - set(known))
    if unknown:
        raise ValueError(
            f"tcc.serve:app: unknown argument(s) {', '.join(unknown)} "
            f"(it takes {', '.join(known)})"
        )
    typed = {key: known[key](value) for key, value in args.items()}
    artifact = typed.pop("artifact")
    return application(artifact, **typed)

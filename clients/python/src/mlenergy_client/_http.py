"""One pooled HTTP connection set per server, Arrow IPC answers, and problem+json answers raised as
exceptions that carry the problem's slug, detail and parameter."""

from __future__ import annotations

import io
import json
import os
import threading
from typing import Any, Iterable
from urllib.parse import urlencode

import pyarrow as pa
import pyarrow.ipc as ipc
import urllib3

DEFAULT_URL = "http://127.0.0.1:8080"

ARROW = "application/vnd.apache.arrow.stream"


class ServerError(Exception):
    """An answer of the server that is not a success: `status`, and from its problem+json body the
    `slug` (the last part of the problem type, e.g. ``invalid_parameter``), `title`, `detail`
    and the `parameter` it names (None when it names none)."""

    def __init__(self, status: int, slug: str, title: str, detail: str, parameter: str | None, body: dict):
        self.status = status
        self.slug = slug
        self.title = title
        self.detail = detail
        self.parameter = parameter
        self.body = body
        where = f" (parameter {parameter!r})" if parameter else ""
        super().__init__(f"{status} {slug}: {detail}{where}")


class InvalidRequestError(ServerError, ValueError):
    """A 4xx answer about the request's values: a ValueError, as the toolkit raises for bad input."""


class RawDataError(ServerError, ValueError):
    """A raw file the server read but cannot derive from (the toolkit raises ValueError)."""


class RawFileNotFoundError(ServerError, FileNotFoundError):
    """A run whose raw file the dataset does not have (the toolkit raises FileNotFoundError)."""


def _error(status: int, raw: bytes) -> ServerError:
    try:
        body = json.loads(raw)
        if not isinstance(body, dict):
            raise ValueError
    except ValueError:
        body = {"detail": raw[:500].decode("utf-8", "replace")}
    slug = str(body.get("type", "")).rsplit("/", 1)[-1] or f"http_{status}"
    args = (status, slug, str(body.get("title", "")), str(body.get("detail", "")), body.get("parameter"), body)
    if slug == "raw_unavailable":
        return RawFileNotFoundError(*args)
    if status == 422:
        return RawDataError(*args)
    if 400 <= status < 500:
        return InvalidRequestError(*args)
    return ServerError(*args)


class Client:
    """The server at `url` (default: ``MLENERGY_SERVER``, else http://127.0.0.1:8080), with a bearer
    `token` sent on every request when given, and the dataset `revision` (a hub commit, branch or
    tag, or the name of one of the server's snapshots) sent as the ``revision`` parameter of every
    request about the data when given (None: the revision the server serves). Thread-safe: the
    pool is urllib3's."""

    def __init__(self, url: str | None = None, token: str | None = None, timeout: float = 300.0,
                 revision: str | None = None):
        self.url = (url or os.environ.get("MLENERGY_SERVER") or DEFAULT_URL).rstrip("/")
        self.revision = revision
        headers = {"user-agent": "mlenergy-client/0.1"}
        if token:
            headers["authorization"] = f"Bearer {token}"
        self._pool = urllib3.PoolManager(
            num_pools=4,
            maxsize=8,
            headers=headers,
            retries=False,
            timeout=urllib3.Timeout(connect=10.0, read=timeout),
        )

        self._float_fields: dict[str, frozenset[str]] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        if self.revision is not None:
            return f"Client({self.url!r}, revision={self.revision!r})"
        return f"Client({self.url!r})"

    def float_fields(self, domain: str, nullable_ints: tuple[str, ...]) -> frozenset[str]:
        """The `nullable_ints` fields whose values the toolkit would hold as floats: those with a
        null anywhere in the dataset, unless the server reads raw results (the toolkit's raw load
        keeps ints). Asked once per domain."""
        with self._lock:
            if domain in self._float_fields:
                return self._float_fields[domain]
        sources = {d["domain"]: d.get("source", "") for d in self.json("/v1/datasets")["datasets"]}
        if str(sources.get(domain, "")).startswith("raw:"):
            found: frozenset[str] = frozenset()
        else:
            params = [("fields", ",".join(nullable_ints))]
            if domain == "llm":
                params.append(("stability", "all"))
            t = self.arrow(f"/v1/{domain}/runs", params)
            found = frozenset(f for f in nullable_ints if t.column(f).null_count > 0)
        with self._lock:
            self._float_fields[domain] = found
        return found

    def request(self, method: str, path: str, params: Iterable[tuple[str, Any]] = (), *,
                body: bytes | None = None, headers: dict | None = None,
                revision: bool = True) -> urllib3.BaseHTTPResponse:
        """`method` on `path` with query `params`; the client's revision is added to them unless
        `revision` is False (requests that read no snapshot: model fits of posted data, jobs)."""
        params = list(params)
        if revision and self.revision is not None and not any(k == "revision" for k, _ in params):
            params.append(("revision", self.revision))
        query = urlencode([(k, _param(v)) for k, v in params])
        url = self.url + path + (f"?{query}" if query else "")
        r = self._pool.request(method, url, body=body, headers=headers, preload_content=True)
        if r.status >= 300:
            raise _error(r.status, r.data)
        return r

    def json(self, path: str, params: Iterable[tuple[str, Any]] = (), *, method: str = "GET",
             body: Any = None, revision: bool = True) -> Any:
        data = None if body is None else json.dumps(body).encode()
        headers = {"accept": "application/json"}
        if data is not None:
            headers["content-type"] = "application/json"
        return json.loads(self.request(method, path, params, body=data, headers=headers, revision=revision).data)

    def arrow(self, path: str, params: Iterable[tuple[str, Any]] = (), *, method: str = "GET",
              body: Any = None, revision: bool = True) -> pa.Table:
        params = [*params, ("format", "arrow")]
        data = None if body is None else json.dumps(body).encode()
        headers = {"accept": ARROW}
        if data is not None:
            headers["content-type"] = "application/json"
        raw = self.request(method, path, params, body=data, headers=headers, revision=revision).data
        table = ipc.open_stream(io.BytesIO(raw)).read_all()
        return table.unify_dictionaries().combine_chunks() if table.num_columns else table

    def bytes(self, path: str, params: Iterable[tuple[str, Any]] = ()) -> bytes:
        return self.request("GET", path, params).data


def _param(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


_default_lock = threading.Lock()
_default: Client | None = None


def default_client() -> Client:
    """The client of the last `from_server` call, else one for ``MLENERGY_SERVER``: what the
    modeling classes (whose signatures name no server) send their fits to."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        return _default


def set_default_client(client: Client) -> None:
    global _default
    with _default_lock:
        _default = client

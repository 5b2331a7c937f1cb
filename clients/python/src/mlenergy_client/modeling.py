"""The toolkit's models (mlenergy-data 0.4.0, `mlenergy.data.modeling`) with its signatures and
`to_dict` shapes: the fits are answered by the server's model endpoints (POST
/v1/models/logistic/fit, /v1/models/itl-mixture/fit); evaluating a fitted model and drawing from it
with the caller's numpy generator happen here, from the models' formulas, so that a seeded
`rng` gives the draws the toolkit gives.

The server is the one of the last `from_server` call, else ``MLENERGY_SERVER`` (the signatures name
no server)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _http


def _floats(values: Any) -> list[float]:
    return [float(v) for v in np.asarray(values, dtype=float).ravel()]


def _sigmoid(a: float) -> float:
    if a >= 0:
        return 1.0 / (1.0 + math.exp(-a))
    e = math.exp(a)
    return e / (1.0 + e)


@dataclass(frozen=True)
class LogisticModel:
    """y = b0 + L * sigmoid(k * (x - x0)), x typically log2(batch size)."""

    L: float
    x0: float
    k: float
    b0: float

    @classmethod
    def fit(cls, x: np.ndarray, y: np.ndarray) -> "LogisticModel":
        """The toolkit's grid least-squares fit, computed by the server."""
        xs, ys = _floats(x), _floats(y)
        if not xs or not ys:
            return cls(L=0.0, x0=0.0, k=1.0, b0=0.0)
        if len(xs) != len(ys):
            raise ValueError(f"x and y differ in length ({len(xs)} and {len(ys)})")
        a = _http.default_client().json("/v1/models/logistic/fit", method="POST", body={"x": xs, "y": ys}, revision=False)
        if a.get("L") is None:
            # No finite fit: the toolkit's starting point (L=0, x0=mean(x), k=1, b0=mean(y)).
            return cls(L=0.0, x0=float(np.mean(xs)), k=1.0, b0=float(np.mean(ys)))
        return cls(L=float(a["L"]), x0=float(a["x0"]), k=float(a["k"]), b0=float(a["b0"]))

    def eval_x(self, x: float) -> float:
        return self.b0 + self.L * _sigmoid(self.k * (x - self.x0))

    def deriv_wrt_x(self, x: float) -> float:
        s = _sigmoid(self.k * (x - self.x0))
        return self.L * (self.k * s * (1.0 - s))

    def eval(self, batch: int) -> float:
        return self.eval_x(math.log2(max(int(batch), 1)))

    def to_dict(self) -> dict[str, float]:
        return {"L": self.L, "x0": self.x0, "k": self.k, "b0": self.b0}

    @classmethod
    def from_dict(cls, d: Any) -> "LogisticModel":
        return cls(L=float(d["L"]), x0=float(d["x0"]), k=float(d["k"]), b0=float(d["b0"]))


_MIXTURE_KEYS = ("loc", "pi_steady", "sigma_steady", "scale_steady", "pi_stall", "sigma_stall", "scale_stall")


@dataclass(frozen=True)
class ITLMixtureModel:
    """ITL = loc + Y, Y from a two-component log-normal mixture ("steady" and "stall")."""

    loc: float
    pi_steady: float
    sigma_steady: float
    scale_steady: float
    pi_stall: float
    sigma_stall: float
    scale_stall: float

    @classmethod
    def fit(cls, samples_s: np.ndarray, *, max_samples: int | None = None, seed: int = 0) -> "ITLMixtureModel":
        """The toolkit's EM fit (80 iterations on log-latencies), computed by the server (within
        1e-6 of the toolkit's parameters: EM carries the last bits of its sums along)."""
        x = np.asarray(samples_s, dtype=float).ravel()
        x = x[np.isfinite(x) & (x > 0)]
        if max_samples is not None and len(x) > int(max_samples):
            # The toolkit's subset (numpy's generator, drawn here): the server's own subsampling
            # draws from another random stream.
            x = x[np.random.default_rng(seed).choice(len(x), size=int(max_samples), replace=False)]
        body: dict[str, Any] = {"samples": [float(v) for v in x]}
        a = _http.default_client().json("/v1/models/itl-mixture/fit", method="POST", body=body, revision=False)
        return cls(**{k: float(a[k]) for k in _MIXTURE_KEYS})

    def _weights(self) -> tuple[float, float]:
        total = max(self.pi_steady + self.pi_stall, 1e-12)
        return self.pi_steady / total, self.pi_stall / total

    def mean_var(self) -> tuple[float, float]:
        """The mixture's mean and variance in seconds (analytic)."""
        p1, p2 = self._weights()
        mean = 0.0
        second = 0.0
        for p, sigma, scale in ((p1, self.sigma_steady, self.scale_steady), (p2, self.sigma_stall, self.scale_stall)):
            m = scale * math.exp(sigma * sigma / 2.0)
            v = scale * scale * (math.exp(sigma * sigma) - 1.0) * math.exp(sigma * sigma)
            mean += p * (self.loc + m)
            second += p * (v + (self.loc + m) ** 2)
        return mean, max(second - mean * mean, 0.0)

    def sample_one(self, rng: np.random.Generator) -> float:
        """One draw: a uniform picks the component, then its log-normal."""
        p1, _ = self._weights()
        if rng.random() < p1:
            y = rng.lognormal(mean=math.log(max(self.scale_steady, 1e-15)), sigma=max(self.sigma_steady, 0.0))
        else:
            y = rng.lognormal(mean=math.log(max(self.scale_stall, 1e-15)), sigma=max(self.sigma_stall, 0.0))
        return float(self.loc + y)

    def sample_avg(self, *, n_replicas: int, rng: np.random.Generator, exact_threshold: int = 30) -> float:
        """The mean of `n_replicas` draws: drawn one by one up to `exact_threshold`, else from the
        central limit's normal."""
        n = int(n_replicas)
        if n <= 0:
            return float("nan")
        if n <= exact_threshold:
            return float(np.mean([self.sample_one(rng) for _ in range(n)]))
        mu, var = self.mean_var()
        sd = math.sqrt(max(var / n, 0.0))
        return float(max(rng.normal(mu, sd), 0.0))

    def to_dict(self) -> dict[str, float]:
        return {k: getattr(self, k) for k in _MIXTURE_KEYS}

    @classmethod
    def from_dict(cls, d: Any) -> "ITLMixtureModel":
        def get(k: str) -> float:
            try:
                return float(d[k])
            except (KeyError, IndexError):
                return float(d[f"itl_mix_{k}"])

        return cls(**{k: get(k) for k in _MIXTURE_KEYS})

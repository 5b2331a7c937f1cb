"""Writes tests/it/data/t_quantiles.json: Student's t reference values from scipy, for the Rust
tests of the repeat statistics' exact t quantile (issue 18).

    python3 tests/conformance/t_table.py

{"p": 0.975, "df_to_t": {"1": t.ppf(0.975, 1), ..., "199": ...},
 "fractional": {"2.5": t.ppf(0.975, 2.5), ...},
 "sf2": [{"x": x, "df": df, "p": 2 * t.sf(|x|, df)}, ...]}   (two-sided p-values)
Floats are written with Python's shortest round-tripping repr.
"""

import json
import sys
from pathlib import Path

import scipy
from scipy import stats

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "it" / "data" / "t_quantiles.json"
P = 0.975
FRACTIONAL = [0.5, 1.5, 2.5, 7.3, 15.75, 48.2, 1000.5]
SF2 = [(0.0, 5), (0.5, 1), (1.0, 2), (-1.7, 3), (2.0, 10), (2.5, 7.3), (-3.1, 20), (1.96, 1000),
       (4.0, 29), (6.5, 4), (12.706, 1), (0.25, 48.2), (-2.2009851600916384, 11)]


def table() -> dict:
    return {
        "p": P,
        "source": f"scipy {scipy.__version__} scipy.stats.t.ppf / 2 * scipy.stats.t.sf",
        "df_to_t": {str(df): float(stats.t.ppf(P, df)) for df in range(1, 200)},
        "fractional": {str(df): float(stats.t.ppf(P, df)) for df in FRACTIONAL},
        "sf2": [{"x": x, "df": df, "p": float(2 * stats.t.sf(abs(x), df))} for x, df in SF2],
    }


def main():
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(table(), indent=1) + "\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    sys.exit(main())

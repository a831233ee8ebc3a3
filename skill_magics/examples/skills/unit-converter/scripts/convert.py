#!/usr/bin/env python3
"""Convert a value between units of length, mass, volume or temperature.

Flags: --value 3 --from km --to mi [--precision 6] | --list
Without flags, reads JSON {"value": 3, "from": "km", "to": "mi"} on stdin.
"""

from __future__ import annotations

import argparse
import json
import sys

# Factors to the base unit of each category (metre, kilogram, litre).
FACTORS = {
    "length": {
        "mm": 0.001,
        "cm": 0.01,
        "m": 1.0,
        "km": 1000.0,
        "in": 0.0254,
        "ft": 0.3048,
        "yd": 0.9144,
        "mi": 1609.344,
        "nmi": 1852.0,
    },
    "mass": {
        "mg": 1e-6,
        "g": 0.001,
        "kg": 1.0,
        "t": 1000.0,
        "oz": 0.028349523125,
        "lb": 0.45359237,
    },
    "volume": {
        "ml": 0.001,
        "l": 1.0,
        "m3": 1000.0,
        "tsp": 0.00492892159375,
        "tbsp": 0.01478676478125,
        "cup": 0.2365882365,
        "pt": 0.473176473,
        "qt": 0.946352946,
        "gal": 3.785411784,
    },
}
TEMPERATURES = {"c", "f", "k"}


def category(unit: str) -> str:
    if unit.lower() in TEMPERATURES:
        return "temperature"
    for name, units in FACTORS.items():
        if unit in units:
            return name
    known = sorted({u for units in FACTORS.values() for u in units} | {"C", "F", "K"})
    raise SystemExit(f"unknown unit {unit!r}; known units: {', '.join(known)}")


def to_kelvin(value: float, unit: str) -> float:
    unit = unit.lower()
    if unit == "c":
        return value + 273.15
    if unit == "f":
        return (value - 32) * 5 / 9 + 273.15
    return value


def from_kelvin(value: float, unit: str) -> float:
    unit = unit.lower()
    if unit == "c":
        return value - 273.15
    if unit == "f":
        return (value - 273.15) * 9 / 5 + 32
    return value


def convert(value: float, src: str, dst: str) -> tuple[float, str]:
    kind, target = category(src), category(dst)
    if kind != target:
        print(f"cannot convert {kind} ({src}) to {target} ({dst})", file=sys.stderr)
        raise SystemExit(2)
    if kind == "temperature":
        return from_kelvin(to_kelvin(value, src), dst), kind
    return value * FACTORS[kind][src] / FACTORS[kind][dst], kind


def main() -> None:
    parser = argparse.ArgumentParser(description="Convert a value between units.")
    parser.add_argument("--value", type=float)
    parser.add_argument("--from", dest="src")
    parser.add_argument("--to", dest="dst")
    parser.add_argument("--precision", type=int, default=6)
    parser.add_argument("--list", action="store_true", help="print the known units")
    args = parser.parse_args()
    if args.list:
        units = {k: sorted(v) for k, v in FACTORS.items()} | {"temperature": ["C", "F", "K"]}
        print(json.dumps(units))
        return
    if args.value is None and args.src is None and args.dst is None:
        data = json.loads(sys.stdin.read() or "{}")
        args.value, args.src, args.dst = data.get("value"), data.get("from"), data.get("to")
        args.precision = int(data.get("precision", args.precision))
    if args.value is None or not args.src or not args.dst:
        parser.error("give --value, --from and --to (or JSON with value, from, to on stdin)")
    result, kind = convert(float(args.value), args.src, args.dst)
    out = {
        "value": float(args.value),
        "from": args.src,
        "to": args.dst,
        "result": round(result, args.precision),
        "category": kind,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()

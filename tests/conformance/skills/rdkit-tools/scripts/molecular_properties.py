#!/usr/bin/env python3
"""Atom counts of SMILES strings (stdlib only in this shape).

Usage:
    python molecular_properties.py molecules.smi
"""
import sys


def heavy_atoms(smiles):
    return sum(ch.isupper() for ch in smiles)


def main():
    with open(sys.argv[1], encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                print(f"{line.strip()}\t{heavy_atoms(line.strip())}")


if __name__ == "__main__":
    main()

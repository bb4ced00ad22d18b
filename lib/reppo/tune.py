"""Regenerate data/reppo/tuning_scan.json: ``python -m lib.reppo.tune [--out PATH]`` (about 10-15 min on 2 cores)."""
from __future__ import annotations

import argparse

from lib.common import data_dir

from .tuning import SCAN_FILE, best, run_scan, write_scan


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", default=str(data_dir("reppo") / SCAN_FILE), help="output JSON")
    args = ap.parse_args(argv)
    scan = run_scan()
    path = write_scan(scan, args.out)
    print(f"wrote {path}; best cells: {best(scan)}")


if __name__ == "__main__":
    main()

"""``python -m conveyor.doctor MODULE_OR_SCRIPT:FACTORY``: the pipeline doctor
(conveyor/data/doctor.py) on the Dataset a factory function builds.

    python -m conveyor.doctor train.py:make_dataset --steps 200 --step-time 0.05
    python -m conveyor.doctor mypackage.data:make_dataset --json

Prints the verdict table (or JSON); exits 1 when a check fails.
"""
import sys

from conveyor.data.doctor import main

if __name__ == "__main__":
    sys.exit(main())

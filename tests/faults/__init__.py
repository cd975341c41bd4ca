"""Faults: kill -9 at every point, full disks, live writers, stores another program wrote, bad input."""

"""Shared pytest configuration."""

from __future__ import annotations

import os

import matplotlib

# Plots in tests never need a display.
matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

"""Corpus theme ``python_state``."""
from __future__ import annotations

import torch

from . import Inputs, case  # noqa: F401

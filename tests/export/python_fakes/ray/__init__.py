# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the part of Ray that a Ray Serve deployment file imports."""

from . import serve  # noqa: F401

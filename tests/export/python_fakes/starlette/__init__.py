# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for the parts of Starlette a Ray Serve deployment uses."""

# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for starlette.responses.JSONResponse: content and status code."""

import json


class JSONResponse:
    def __init__(self, content, status_code=200):
        self.body = json.dumps(content).encode()
        self.status_code = status_code

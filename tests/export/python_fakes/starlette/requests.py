# SPDX-License-Identifier: GPL-3.0-or-later
"""A stand-in for starlette.requests.Request: a body, read whole by await json()."""

import json


class Request:
    def __init__(self, body):
        self._body = body if isinstance(body, bytes) else json.dumps(body).encode()

    async def body(self):
        return self._body

    async def json(self):
        return json.loads(self._body)

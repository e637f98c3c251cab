# SPDX-License-Identifier: GPL-3.0-or-later
# Fails as it is imported.
import no_such_module_anywhere  # noqa: F401


class Model:
    def predict(self, inputs):
        return inputs

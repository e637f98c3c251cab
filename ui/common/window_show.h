// SPDX-License-Identifier: GPL-3.0-or-later
// Showing a top-level window as `batchscope gui` does: placed at the top
// left at a size fitted to the screen (the offscreen and minimal platforms
// report a small screen, so there the size is kept as asked), and, for
// --screenshot, saved as a PNG a while after it is ready, then closed.
// Thread-safety: GUI thread only.

#pragma once

#include <QSize>
#include <QWidget>
#include <functional>
#include <string>

namespace batchscope {

// Resizes `window` to `size` (bounded by the screen's available area) and
// moves it to the top left.
void fit_to_screen(QWidget& window, QSize size);

// Once the event loop runs: waits for `ready` (false: the window could not
// become ready, said on stderr as "batchscope gui: ..."), then `after_ms`
// later calls `refresh`, saves the window to `path` and quits the
// application. `rc` becomes 1 on any failure.
void screenshot_when_ready(QWidget& window, const std::string& path, int after_ms,
                           std::function<bool()> ready, std::function<void()> refresh, int& rc);

}  // namespace batchscope

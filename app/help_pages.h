// SPDX-License-Identifier: GPL-3.0-or-later
// The manual page and the bash completion script, both generated from the
// same --help texts the executable prints, so neither can drift from them.
// `batchscope --man` and `batchscope --bash-completion` print them; the build
// writes them into the tree that `cmake --install` copies.

#pragma once

#include <string>
#include <vector>

namespace batchscope {

struct CommandHelp {
  std::string name;  // "serve"
  std::string help;  // what `batchscope serve --help` prints
};

// roff for man(1): NAME, SYNOPSIS, DESCRIPTION (`usage`, the top-level
// --help), a COMMANDS section with each command's help verbatim, FILES and
// ENVIRONMENT.
std::string man_page(const std::string& version, const std::string& usage,
                     const std::vector<CommandHelp>& commands);

// A flag named in a command's help, with what its value completes to.
struct FlagHelp {
  std::string flag;                 // "--strategy"
  bool takes_value = false;         // "--rate R": a word follows it
  bool takes_file = false;          // its value is PATH, FILE, DIR, ...
  std::vector<std::string> values;  // "fifo|adaptive" gives {fifo, adaptive}
};
// Every --flag a help text names, in order of first mention.
std::vector<FlagHelp> flags_in_help(const std::string& help);

// A bash script defining and registering completion for batchscope: the
// commands, each command's flags, file names after a flag that takes a file
// (after --model also the names of the models batchscope finds by name), and
// the listed values of a flag that has them.
std::string bash_completion(const std::vector<CommandHelp>& commands,
                            const std::vector<std::string>& top_flags);

}  // namespace batchscope

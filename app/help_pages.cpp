// SPDX-License-Identifier: GPL-3.0-or-later
#include "app/help_pages.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace batchscope {
namespace {

// Text for roff: backslashes and minus signs escaped, and a line that would
// start with a control character ('.' or ''') made plain text.
std::string roff(const std::string& text) {
  std::string out;
  bool line_start = true;
  for (const char c : text) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    line_start = c == '\n';
    if (c == '\\') {
      out += "\\e";
    } else if (c == '-') {
      out += "\\-";
    } else {
      out += c;
    }
  }
  if (!out.empty() && out.back() != '\n') out += '\n';
  return out;
}

bool is_flag_char(char c) {
  return std::islower(static_cast<unsigned char>(c)) ||
         std::isdigit(static_cast<unsigned char>(c)) || c == '-';
}

bool is_literal(const std::string& word) {
  if (word.empty() || !(std::islower(static_cast<unsigned char>(word[0])) ||
                        std::isdigit(static_cast<unsigned char>(word[0]))))
    return false;
  return std::all_of(word.begin(), word.end(), [](char c) {
    return std::islower(static_cast<unsigned char>(c)) ||
           std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
           c == ':';
  });
}

// "PATH", "N", "A_US,C_US", "FILE.png" (an extension may follow).
bool is_metavar(const std::string& word) {
  const std::string stem = word.substr(0, word.find('.'));
  return !stem.empty() && std::isupper(static_cast<unsigned char>(stem[0])) &&
         std::none_of(stem.begin(), stem.end(),
                      [](char c) { return std::islower(static_cast<unsigned char>(c)); });
}

std::string join(const std::vector<std::string>& words) {
  std::string out;
  for (const std::string& w : words) out += (out.empty() ? "" : " ") + w;
  return out;
}

}  // namespace

std::vector<FlagHelp> flags_in_help(const std::string& help) {
  std::vector<FlagHelp> flags;
  for (size_t i = help.find("--"); i != std::string::npos; i = help.find("--", i + 2)) {
    if (i > 0 && !std::isspace(static_cast<unsigned char>(help[i - 1])) &&
        std::string("[(|,'\"").find(help[i - 1]) == std::string::npos)
      continue;
    size_t end = i + 2;
    if (end >= help.size() || !std::islower(static_cast<unsigned char>(help[end]))) continue;
    while (end < help.size() && is_flag_char(help[end])) ++end;
    const std::string name = help.substr(i, end - i);
    // Its value: "--strategy fifo|adaptive", "--model PATH", "--json=FILE".
    std::string value;
    if (end < help.size() && (help[end] == ' ' || help[end] == '=') && end + 1 < help.size()) {
      size_t v = end + 1;
      while (v < help.size() && !std::isspace(static_cast<unsigned char>(help[v])) &&
             std::string("])\"'").find(help[v]) == std::string::npos)
        ++v;
      value = help.substr(end + 1, v - end - 1);
      while (!value.empty() && (value.back() == ',' || value.back() == ';' || value.back() == ':'))
        value.pop_back();
    }
    auto it =
        std::find_if(flags.begin(), flags.end(), [&](const FlagHelp& f) { return f.flag == name; });
    if (it == flags.end()) {
      flags.push_back({name, false, false, {}});
      it = flags.end() - 1;
    }
    if (value.find('|') != std::string::npos && it->values.empty()) {
      std::stringstream parts(value);
      for (std::string part; std::getline(parts, part, '|');)
        if (is_literal(part)) it->values.push_back(part);
      it->takes_value = true;
    } else if (is_metavar(value)) {
      it->takes_value = true;
      for (const char* word : {"PATH", "FILE", "DIR", "PREFIX"})
        if (value.find(word) != std::string::npos) it->takes_file = true;
    }
  }
  return flags;
}

std::string man_page(const std::string& version, const std::string& usage,
                     const std::vector<CommandHelp>& commands) {
  std::ostringstream out;
  out << ".TH BATCHSCOPE 1 \"\" \"batchscope " << version << "\" \"User Commands\"\n"
      << ".SH NAME\n"
      << "batchscope \\- a workbench for dynamic batching of model inference\n"
      << ".SH SYNOPSIS\n"
      << ".B batchscope\n"
      << "[\\fB\\-\\-help\\fR] [\\fB\\-\\-version\\fR] [\\fICOMMAND\\fR [\\fIARGS\\fR]]\n"
      << ".SH DESCRIPTION\n"
      << ".nf\n"
      << roff(usage) << ".fi\n"
      << ".SH COMMANDS\n"
      << "Each command's options, as \\fBbatchscope\\fR \\fICOMMAND\\fR \\fB\\-\\-help\\fR "
         "prints them.\n";
  for (const CommandHelp& c : commands) {
    out << ".SS \"batchscope " << c.name << "\"\n.nf\n" << roff(c.help) << ".fi\n";
  }
  out << ".SH FILES\n"
      << ".TP\n"
      << ".I <prefix>/share/batchscope/models\n"
      << "The models Batchscope ships: TorchScript files (.pt), each with a JSON sidecar of "
         "its inputs, outputs and batch limit. \\fB\\-\\-model mlp\\fR or "
         "\\fB\\-\\-model models/mlp.pt\\fR finds mlp.pt there when no such file is in the "
         "current folder. \\fBbatchscope \\-\\-version\\fR prints the folder in use.\n"
      << ".TP\n"
      << ".I $XDG_CONFIG_HOME/batchscope/sidecars\n"
      << "Sidecars that \\fBbatchscope describe\\fR wrote for models in folders it could "
         "not write, under each model's absolute path (\\fI~/.config\\fR when "
         "XDG_CONFIG_HOME is unset); read when no sidecar is beside the model.\n"
      << ".TP\n"
      << ".I <prefix>/share/doc/batchscope\n"
      << "The README, and docs/ with one page a subject.\n"
      << ".SH ENVIRONMENT\n"
      << ".TP\n"
      << ".B BATCHSCOPE_MODELS\n"
      << "A folder of models to use in place of the shipped ones.\n"
      << ".TP\n"
      << ".B BATCHSCOPE_TOKEN\n"
      << "The bearer token the HTTP listener requires and bench sends to a URL target, "
         "unless \\fB\\-\\-token\\fR is given.\n";
  return out.str();
}

std::string bash_completion(const std::vector<CommandHelp>& commands,
                            const std::vector<std::string>& top_flags) {
  std::vector<std::string> names;
  for (const CommandHelp& c : commands) names.push_back(c.name);
  std::ostringstream out;
  out << "# bash completion for batchscope, generated from its --help texts\n"
      << "# (batchscope --bash-completion).\n"
      << "\n"
      << "# The names of the models batchscope finds by name: in $BATCHSCOPE_MODELS, or\n"
      << "# under the prefix the batchscope on the PATH is installed in.\n"
      << "_batchscope_models() {\n"
      << "  local dir=$BATCHSCOPE_MODELS exe f\n"
      << "  if [[ -z $dir ]]; then\n"
      << "    exe=$(type -P batchscope) || return\n"
      << "    exe=$(readlink -f \"$exe\")\n"
      << "    dir=${exe%/bin/*}/share/batchscope/models\n"
      << "  fi\n"
      << "  for f in \"$dir\"/*.pt; do\n"
      << "    [[ -e $f ]] || continue\n"
      << "    f=${f##*/}\n"
      << "    echo \"${f%.pt}\"\n"
      << "  done\n"
      << "}\n"
      << "\n"
      << "_batchscope() {\n"
      << "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} flags=\n"
      << "  COMPREPLY=()\n"
      << "  if [[ $COMP_CWORD -eq 1 ]]; then\n"
      << "    COMPREPLY=($(compgen -W \"" << join(names) << " " << join(top_flags)
      << "\" -- \"$cur\"))\n"
      << "    return\n"
      << "  fi\n"
      << "  case ${COMP_WORDS[1]} in\n";
  for (const CommandHelp& c : commands) {
    const bool runs = c.name == "runs";  // subcommands, then ids from the history itself
    out << "    " << c.name << ")\n";
    if (runs) {
      out << "      if [[ $COMP_CWORD -eq 2 ]]; then\n"
             "        COMPREPLY=($(compgen -W \"list show compare export rm import\" -- "
             "\"$cur\"))\n"
             "        return\n"
             "      fi\n";
    }
    const std::vector<FlagHelp> flags = flags_in_help(c.help);
    std::vector<std::string> file_flags, value_flags, all;
    out << "      case $prev in\n";
    for (const FlagHelp& f : flags) {
      all.push_back(f.flag);
      if (f.flag == "--model") {  // a file, or a model's name
        out << "        --model) compopt -o filenames 2>/dev/null\n"
               "          COMPREPLY=($(compgen -f -- \"$cur\") "
               "$(compgen -W \"$(_batchscope_models)\" -- \"$cur\")); return ;;\n";
      } else if (f.takes_file) {
        file_flags.push_back(f.flag);
      }
      if (f.takes_value && !f.takes_file && f.values.empty()) value_flags.push_back(f.flag);
      if (!f.values.empty()) {
        out << "        " << f.flag << ") COMPREPLY=($(compgen -W \"" << join(f.values)
            << "\" -- \"$cur\")); return ;;\n";
      }
    }
    const auto alternatives = [](const std::vector<std::string>& words) {
      std::string pattern;
      for (const std::string& w : words) pattern += (pattern.empty() ? "" : "|") + w;
      return pattern;
    };
    if (!file_flags.empty()) {
      out << "        " << alternatives(file_flags)
          << ") compopt -o filenames 2>/dev/null; COMPREPLY=($(compgen -f -- \"$cur\")); return "
             ";;\n";
    }
    if (!value_flags.empty()) out << "        " << alternatives(value_flags) << ") return ;;\n";
    out << "      esac\n";
    if (runs) {
      out << "      if [[ $cur != -* ]]; then\n"
             "        case ${COMP_WORDS[2]} in\n"
             "          show|compare|export|rm) COMPREPLY=($(compgen -W "
             "\"$(\"${COMP_WORDS[0]}\" runs ids 2>/dev/null)\" -- \"$cur\")); return ;;\n"
             "          import) compopt -o filenames 2>/dev/null; "
             "COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n"
             "        esac\n"
             "      fi\n";
    }
    out << "      flags=\"" << join(all) << "\" ;;\n";
  }
  out << "    *) return ;;\n"
      << "  esac\n"
      << "  [[ -z $cur || $cur == -* ]] && COMPREPLY=($(compgen -W \"$flags\" -- \"$cur\"))\n"
      << "}\n"
      << "complete -F _batchscope batchscope\n";
  return out.str();
}

}  // namespace batchscope

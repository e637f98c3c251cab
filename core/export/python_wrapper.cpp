// SPDX-License-Identifier: GPL-3.0-or-later
#include "export/python_wrapper.h"

#include <cmath>
#include <filesystem>

#include "common/file_text.h"

namespace batchscope {

Expected<PythonHandlerFile> read_python_handler(
    const std::string& path, const std::string& class_name,
    const std::vector<std::pair<std::string, std::string>>& options) {
  auto text = read_file_text(path);
  if (!text) return invalid_argument("the Python handler: " + text.error().message);
  PythonHandlerFile h;
  h.file_name = std::filesystem::path(path).filename().string();
  h.source = std::move(*text);
  h.class_name = class_name;
  h.options = options;
  return h;
}

Status add_python_handler(ExportInput& in, const std::string& path, const ModelMetadata& lanes,
                          const std::string& class_name,
                          const std::vector<std::pair<std::string, std::string>>& options) {
  if (!in.model || in.model->platform != "python") return {};
  auto h = read_python_handler(path, class_name, options);
  if (!h) return h.error();
  if (!lanes.inputs.empty()) h->lanes = lanes;  // else unknown: the model's own
  in.python = std::move(*h);
  return {};
}

}  // namespace batchscope

namespace batchscope::export_detail {

namespace {

const char* numpy_dtype(DType t) {
  switch (t) {
    case DType::kFloat32: return "float32";
    case DType::kFloat16: return "float16";
    case DType::kFloat64: return "float64";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kBool: return "bool";
    case DType::kBytes: return "object";  // numpy's dtype for BYTES: bytes objects
  }
  return "float32";
}

// A Python number literal for a pad value; non-finite ones as float("...").
std::string py_number(double v) {
  if (std::isnan(v)) return "float(\"nan\")";
  if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "-float(\"inf\")";
  return shortest(v);
}

std::string py_shape(const Shape& item) {
  std::string s = "[";
  for (size_t d = 0; d < item.size(); ++d) s += (d ? ", " : "") + whole(item[d]);
  return s + "]";
}

bool is_identifier(std::string_view s) {
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) return false;
  for (char ch : s) {
    const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                    (ch >= '0' && ch <= '9') || ch == '_';
    if (!ok) return false;
  }
  return true;
}

// The constants block: what was exported, for the functions below it.
std::string constants(const Checked& c) {
  const PythonHandlerFile& h = *c.in.python;
  std::string py;
  py += comment(
      "What was exported: the handler file beside this one, the class to construct (\"\": "
      "the file's one class with a predict method) and its constructor's keyword arguments, "
      "strings as --model-option gave them.");
  py += "HANDLER_FILE = " + py_literal(h.file_name) + "\n";
  py += "HANDLER_CLASS = " + py_literal(h.class_name) + "\n";
  if (h.options.empty()) {
    py += "HANDLER_OPTIONS = {}\n";
  } else {
    py += "HANDLER_OPTIONS = {\n";
    for (const auto& [key, value] : h.options) {
      py += "    " + py_literal(key) + ": " + py_literal(value) + ",\n";
    }
    py += "}\n";
  }
  const ModelMetadata& served = *c.in.model;
  const ModelMetadata& lanes = h.lanes ? *h.lanes : served;
  py += comment(
      "What a request sends: name, numpy dtype (object: BYTES, one byte string a request, "
      "which preprocess gets as bytes) and shape without the batch dimension (-1 varies).");
  py += "REQUEST_INPUTS = [\n";
  for (const TensorSpec& t : served.inputs) {
    py += "    (" + py_literal(t.name) + ", \"" + numpy_dtype(t.dtype) + "\", " +
          py_shape(t.item_shape()) + "),\n";
  }
  py += "]\n";
  py += comment(
      "What the class's predict takes, with the value a shorter request is padded with, and "
      "what it gives; then what a request gets back (postprocess's answer, or predict's "
      "rows).");
  py += "INPUTS = [\n";
  for (const TensorSpec& t : lanes.inputs) {
    py += "    (" + py_literal(t.name) + ", \"" + numpy_dtype(t.dtype) + "\", " +
          py_shape(t.item_shape()) + ", " + py_number(t.pad_value) + "),\n";
  }
  py += "]\nOUTPUTS = [\n";
  for (const TensorSpec& t : lanes.outputs) {
    py += "    (" + py_literal(t.name) + ", \"" + numpy_dtype(t.dtype) + "\", " +
          py_shape(t.item_shape()) + "),\n";
  }
  py += "]\nRESPONSE_OUTPUTS = [\n";
  for (const TensorSpec& t : served.outputs) {
    py += "    (" + py_literal(t.name) + ", \"" + numpy_dtype(t.dtype) + "\", " +
          py_shape(t.item_shape()) + "),\n";
  }
  py += "]\n";
  return py;
}

// The functions every wrapper shares. Written for Python 3.8 and later with
// numpy; a torch tensor the class returns is taken as numpy.
constexpr const char* kFunctions = R"PY(

class HandlerError(Exception):
    """A request or the handler's class failed; the message says which and how."""


def message_of(error):
    """The text an error answer carries."""
    if isinstance(error, HandlerError):
        return str(error)
    return "%s: %s" % (type(error).__name__, error)


def call(model, method, *args):
    """model.method(*args), an exception turned into a HandlerError naming the method."""
    try:
        return getattr(model, method)(*args)
    except Exception as e:
        raise HandlerError("%s.%s raised %s: %s" % (
            type(model).__name__, method, type(e).__name__, e)) from e


def load_handler(folder):
    """Imports HANDLER_FILE from `folder` and constructs its class with HANDLER_OPTIONS."""
    path = os.path.join(folder, HANDLER_FILE)
    name = os.path.splitext(HANDLER_FILE)[0]
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the handler may import files kept beside it
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("%s is not a Python file Python can import" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    if HANDLER_CLASS:
        cls = getattr(module, HANDLER_CLASS, None)
        if not inspect.isclass(cls):
            raise ImportError("%s has no class %s" % (HANDLER_FILE, HANDLER_CLASS))
    else:
        found = [c for _, c in inspect.getmembers(module, inspect.isclass)
                 if c.__module__ == module.__name__ and callable(getattr(c, "predict", None))]
        if len(found) != 1:
            raise ImportError("%s has %d classes with a predict method; export it again with"
                              " --class NAME" % (HANDLER_FILE, len(found)))
        cls = found[0]
    return cls(**HANDLER_OPTIONS)


def to_array(value, dtype=None):
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value, dtype=dtype)


def fits(value, shape):
    """`value` (an array) has `shape`'s rank and its sizes where they are fixed."""
    return value.ndim == len(shape) and all(d < 0 or n == d for n, d in zip(value.shape, shape))


def one_string(name, value):
    """A BYTES input's value as the bytes preprocess gets: text as UTF-8, and a list or
    array holding one string (Triton's row of an input of dims [ 1 ], a JSON list of one)
    as that string."""
    while isinstance(value, (list, tuple, np.ndarray)):
        flat = value.reshape(-1) if isinstance(value, np.ndarray) else value
        if len(flat) != 1:
            raise HandlerError("input %r is BYTES, one string a request; got %d values" % (
                name, len(flat)))
        value = flat[0]
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise HandlerError("input %r is BYTES, one string a request; got %s" % (
        name, type(value).__name__))


def request_item(values):
    """One request's values (name -> value without the batch dimension) as preprocess
    takes them: each of REQUEST_INPUTS, bytes for BYTES, else an array of its dtype and
    shape."""
    item = {}
    for name, dtype, shape in REQUEST_INPUTS:
        if name not in values:
            raise HandlerError("input %r is missing; a request sends %s" % (
                name, ", ".join(n for n, _, _ in REQUEST_INPUTS)))
        if dtype == "object":
            item[name] = one_string(name, values[name])
            continue
        try:
            value = to_array(values[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("input %r: %s" % (name, e)) from e
        if not fits(value, shape):
            raise HandlerError("input %r has shape %s; expected %s (-1 varies)" % (
                name, list(value.shape), shape))
        item[name] = value
    return item


def prepare(model, item):
    """A request's item as the row predict stacks: through the class's preprocess when it
    has one, each of INPUTS checked against its declared shape."""
    where = "a request"
    if callable(getattr(model, "preprocess", None)):
        item = call(model, "preprocess", item)
        where = "%s.preprocess's result" % type(model).__name__
        if not isinstance(item, dict):
            raise HandlerError("%s.preprocess returned %s; expected a dict of input name ->"
                               " array" % (type(model).__name__, type(item).__name__))
    row = {}
    for name, dtype, shape, _ in INPUTS:
        if name not in item:
            raise HandlerError("%s has no input %r; predict takes %s" % (
                where, name, ", ".join(n for n, _, _, _ in INPUTS)))
        try:
            value = to_array(item[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("%s's input %r: %s" % (where, name, e)) from e
        if not fits(value, shape):
            raise HandlerError("%s's input %r has shape %s; expected %s (-1 varies)" % (
                where, name, list(value.shape), shape))
        row[name] = value
    return row


def stack(arrays, fill, dtype):
    """`arrays` stacked along a new first dimension, each padded with `fill` up to the
    largest size of every dimension."""
    shape = [max(a.shape[d] for a in arrays) for d in range(arrays[0].ndim)]
    out = np.full([len(arrays)] + shape, fill, dtype=dtype)
    for i, a in enumerate(arrays):
        out[(i,) + tuple(slice(0, n) for n in a.shape)] = a
    return out


def length_of(row):
    """A row's length: the size of the first varying dimension of the first input that
    has one; 0 for a model without one."""
    for name, _, shape, _ in INPUTS:
        for d, size in enumerate(shape):
            if size < 0:
                return row[name].shape[d]
    return 0


def predict_rows(model, rows):
    """One predict for all `rows`, stacked; each row's outputs (name -> array without the
    batch dimension), a varying dimension padded to the longest row cut back to its own."""
    batch = {name: stack([row[name] for row in rows], fill, dtype)
             for name, dtype, _, fill in INPUTS}
    result = call(model, "predict", batch)
    where = "%s.predict" % type(model).__name__
    if not isinstance(result, dict):
        raise HandlerError("%s returned %s; expected a dict of output name -> array" % (
            where, type(result).__name__))
    lengths = [length_of(row) for row in rows]
    longest = max(lengths)
    answers = [{} for _ in rows]
    for name, dtype, shape in OUTPUTS:
        if name not in result:
            raise HandlerError("%s's result has no output %r" % (where, name))
        try:
            value = to_array(result[name], dtype)
        except (TypeError, ValueError) as e:
            raise HandlerError("%s's output %r: %s" % (where, name, e)) from e
        fits = value.ndim == len(shape) + 1 and value.shape[0] == len(rows) and all(
            d < 0 or n == d for n, d in zip(value.shape[1:], shape))
        if not fits:
            raise HandlerError("%s's output %r has shape %s for a batch of %d; expected %s" % (
                where, name, list(value.shape), len(rows), [len(rows)] + shape))
        for i, answer in enumerate(answers):
            own = value[i]
            if longest:
                own = own[tuple(slice(0, lengths[i]) if d < 0 and n == longest else slice(None)
                                for n, d in zip(own.shape, shape))]
            answer[name] = own
    return answers


def finish(model, answer):
    """A row's outputs through the class's postprocess when it has one."""
    if callable(getattr(model, "postprocess", None)):
        return call(model, "postprocess", answer)
    return answer


def body_values(body):
    """A JSON request body (text, bytes or parsed) as input name -> value: an object of
    REQUEST_INPUTS, or {"data": value} where a request sends one input."""
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            body = json.loads(body)
        except ValueError as e:
            raise HandlerError("the body is not JSON: %s" % e) from e
    if not isinstance(body, dict):
        raise HandlerError("the body must be a JSON object of input name -> value, not %s"
                           % type(body).__name__)
    names = [name for name, _, _ in REQUEST_INPUTS]
    if len(names) == 1 and names[0] not in body and "data" in body:
        return {names[0]: body["data"]}
    return body


def jsonable(value):
    """`value` for a JSON answer: arrays as lists, numpy numbers as Python's, bytes as text."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        return jsonable(value.tolist()) if value.dtype == object else value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return value
)PY";

}  // namespace

std::string py_literal(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (char ch : s) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20 || u == 0x7f) {
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

Status check_python_input(const Checked& c, std::string_view format,
                          std::initializer_list<std::string_view> taken) {
  if (!c.in.model || !c.in.python) {
    return invalid_argument(
        "model '" + model_name(c.in, "") + "' is a Python model: the " + std::string(format) +
        " export runs its class and needs the handler file (batchscope export --model FILE.py)");
  }
  const PythonHandlerFile& h = *c.in.python;
  const std::string& f = h.file_name;
  const std::string stem = f.size() > 3 ? f.substr(0, f.size() - 3) : f;
  if (f.size() < 4 || !f.ends_with(".py") || f.find_first_of("/\\") != std::string::npos ||
      stem.find_first_of("\"\n") != std::string::npos) {
    return invalid_argument("the Python handler's file name '" + f +
                            "' is not a plain NAME.py file name");
  }
  for (std::string_view t : taken) {
    if (f == t) {
      return invalid_argument("the Python handler is named " + f + ", the name of the " +
                              std::string(format) +
                              " export's own file: rename it (for instance to " + stem +
                              "_handler.py) and export again");
    }
  }
  if (!h.class_name.empty() && !is_identifier(h.class_name)) {
    return invalid_argument("--class '" + h.class_name + "' is not a Python class name");
  }
  return {};
}

std::string handler_words(const Checked& c) {
  const PythonHandlerFile& h = *c.in.python;
  std::string s = h.class_name.empty() ? "the class with a predict method in " + h.file_name
                                       : "class " + h.class_name + " of " + h.file_name;
  if (h.options.empty()) return s + ", constructed without options";
  s += ", constructed with";
  for (size_t i = 0; i < h.options.size(); ++i) {
    s += (i ? ", " : " ") + h.options[i].first + "=" + py_literal(h.options[i].second);
  }
  return s;
}

std::string python_module_head(const Checked& c, std::string_view imports) {
  std::string py;
  py += "import importlib.util\n";
  py += "import inspect\n";
  py += "import json\n";
  py += "import os\n";
  py += "import sys\n";
  py += "\n";
  py += "import numpy as np\n";
  py += imports;
  py += "\n";
  py += constants(c);
  py += kFunctions;
  return py;
}

}  // namespace batchscope::export_detail

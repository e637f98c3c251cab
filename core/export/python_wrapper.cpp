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


# KServe's names of the numpy dtypes, for messages.
DATATYPES = {"float32": "FP32", "float16": "FP16", "float64": "FP64", "int64": "INT64",
             "int32": "INT32", "uint8": "UINT8", "bool": "BOOL", "object": "BYTES"}


def as_declared(value, dtype, shape, what):
    """`value` (a list, a number, an array of any dtype, a torch tensor; for BYTES, str or
    bytes or a list or array of them) as an array of numpy dtype `dtype` (object: BYTES,
    each element bytes, text as UTF-8) and of `shape` (-1 varies). A value that does not
    convert exactly (1.5 for INT64, 2 for BOOL, text for FP32) or has another shape raises
    a HandlerError naming `what`, what was expected and what came."""
    expected = "%s (%s)" % (DATATYPES.get(dtype, dtype), dtype)
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    try:
        if dtype == "object":
            if isinstance(value, (str, bytes, bytearray)):  # one string, for shape [] or [1]
                got = np.empty([1] if list(shape) == [1] else [], dtype=object)
                got.flat[0] = value
            else:
                got = np.asarray(value, dtype=object)
            out = np.empty(got.shape, dtype=object)
            for i, v in enumerate(got.reshape(-1)):
                if isinstance(v, str):
                    v = v.encode("utf-8")
                if not isinstance(v, (bytes, bytearray)):
                    raise HandlerError("%s: expected %s, got %s" % (
                        what, expected, type(v).__name__))
                out.flat[i] = bytes(v)
        else:
            got = np.asarray(value)
            if got.dtype.kind not in "biuf":
                raise HandlerError("%s: expected %s, got %s" % (
                    what, expected, got.dtype if got.ndim else type(value).__name__))
            with np.errstate(all="ignore"):
                out = got.astype(dtype)
            if out.dtype.kind != "f" and not np.array_equal(out, got):
                raise HandlerError("%s: expected %s, got %s values that %s cannot hold" % (
                    what, expected, got.dtype, DATATYPES.get(dtype, dtype)))
    except (TypeError, ValueError) as e:
        raise HandlerError("%s: expected %s; it cannot be read as an array: %s" % (
            what, expected, e)) from e
    if not fits(out, shape):
        raise HandlerError("%s: expected shape %s (-1 varies), got %s" % (
            what, list(shape), list(out.shape)))
    return out


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
        item[name] = as_declared(values[name], dtype, shape, "input %r" % name)
    return item


def prepare(model, item):
    """A request's item as the row predict stacks: through the class's preprocess when it
    has one, each of INPUTS converted to its declared dtype and checked against its
    declared shape."""
    where, result = "a request", "a request"
    if callable(getattr(model, "preprocess", None)):
        item = call(model, "preprocess", item)
        where = "%s.preprocess" % type(model).__name__
        result = where + "'s result"
        if not isinstance(item, dict):
            raise HandlerError("%s returned %s; expected a dict of input name -> array" % (
                where, type(item).__name__))
    row = {}
    for name, dtype, shape, _ in INPUTS:
        if name not in item:
            raise HandlerError("%s has no input %r; predict takes %s" % (
                result, name, ", ".join(n for n, _, _, _ in INPUTS)))
        row[name] = as_declared(item[name], dtype, shape, "%s's input %r" % (where, name))
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


def answered_by(model):
    """Who gives a request's answer, for messages: "Toy.postprocess" or "Toy.predict"."""
    method = "postprocess" if callable(getattr(model, "postprocess", None)) else "predict"
    return "%s.%s" % (type(model).__name__, method)


def finish(model, answer):
    """A row's outputs through the class's postprocess when it has one, which must answer
    a dict."""
    if not callable(getattr(model, "postprocess", None)):
        return answer
    answer = call(model, "postprocess", answer)
    if not isinstance(answer, dict):
        raise HandlerError("%s returned %s; expected a dict of output name -> value" % (
            answered_by(model), type(answer).__name__))
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


def plain(value, what):
    """`value` as JSON carries it: arrays as lists, numpy numbers as Python's, bytes as
    UTF-8 text, tuples as lists; anything else JSON cannot carry raises a HandlerError
    naming `what`."""
    if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, (np.ndarray, np.generic)):
        value = value.tolist()  # an object array's objects are checked below
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as e:
            raise HandlerError("%s: bytes that are not UTF-8 text (%s)" % (what, e)) from e
    if isinstance(value, (list, tuple)):
        return [plain(v, what) for v in value]
    if isinstance(value, dict):
        for key in value:
            if not (key is None or isinstance(key, (str, bool, int, float))):
                raise HandlerError("%s: a key of type %s, which JSON cannot carry" % (
                    what, type(key).__name__))
        return {key: plain(v, what) for key, v in value.items()}
    raise HandlerError("%s: %s, which JSON cannot carry" % (what, type(value).__name__))


def json_answer(model, answer):
    """A row's outputs as a JSON object: through postprocess where the class has one, each
    value made plain; a HandlerError names the class, the method and the output."""
    answer = finish(model, answer)
    return {name: plain(value, "%s's output %r" % (answered_by(model), name))
            for name, value in answer.items()}
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

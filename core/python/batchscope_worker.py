# SPDX-License-Identifier: GPL-3.0-or-later
"""Batchscope's Python worker: runs a user's model class in its own process.

Batchscope starts one of these per lane (core/python/worker_process.h). It
imports the handler file, constructs the class, warms it, and then answers
batches that arrive through a shared-memory region: the inputs are numpy
views on the region (no pickling, no copy), and the outputs are written
into the region after them. Wake-ups go by two eventfds, one each way.

  python3 batchscope_worker.py describe FILE [--class NAME]
      prints what the class takes and gives, as JSON, on standard output
  python3 batchscope_worker.py serve FILE --region FD --to FD --from FD
          [--class NAME] [--option KEY=VALUE ...] [--warm-batch N] [--parent PID]
      serves batches until told to quit or the region's writer goes away

The region's layout is core/python/worker_protocol.h's; both sides check
the magic number and the protocol version. What a class declares is read by
batchscope_handler.py, which lies beside this file.
"""

import mmap
import os
import platform
import select
import signal
import struct
import sys
import time
import traceback

from batchscope_handler import (BYTES, DTYPES, INT64, MAX_DIMS, MAX_TENSORS, NUMPY, PROTOCOL,
                                UINT8, HandlerError, describe, find_class, load_module)

MAGIC = 0x57505342
HEADER_BYTES = 16384
TABLE_OFFSET = 128
ENTRY_BYTES = 96
MESSAGE_OFFSET = 8192
MESSAGE_BYTES = HEADER_BYTES - MESSAGE_OFFSET
ALIGN = 64

# Header fields: (offset, struct format).
F_MAGIC = (0, "<I")
F_VERSION = (4, "<I")
F_REGION_BYTES = (8, "<Q")
F_SEQ = (16, "<Q")
F_COMMAND = (24, "<I")
F_STATUS = (28, "<I")
F_BATCH = (32, "<I")
F_INPUTS = (36, "<I")
F_OUTPUTS = (40, "<I")
F_MESSAGE_BYTES = (44, "<I")
F_NEED_BYTES = (48, "<Q")
F_DONE_SEQ = (56, "<Q")
F_PREDICT_NS = (64, "<Q")
F_PID = (72, "<Q")
F_OUTPUTS_AT = (80, "<Q")
F_FLAGS = (88, "<I")
F_POST_NS = (96, "<Q")
F_LENGTH = (104, "<Q")

CMD_PREDICT, CMD_GROWN, CMD_QUIT, CMD_DROP, CMD_PREPROCESS = 1, 2, 3, 4, 5
(ST_OK, ST_READY, ST_RAISED, ST_BAD_OUTPUT, ST_NEED_SPACE, ST_START_FAILED, ST_DROPPED,
 ST_PARTIAL) = range(8)
# F_FLAGS' bits. preprocess: KEEP the result here for a predict FROM_KEPT (else
# write it to the region), PASS a request already prepared (no preprocess).
# predict: FROM_KEPT takes the kept requests as the batch, POST runs
# postprocess on each row and answers the served outputs.
FLAG_KEEP, FLAG_PASS, FLAG_FROM_KEPT, FLAG_POST = 1, 2, 4, 8

ENTRY = struct.Struct("<II8qQQ")  # dtype, ndim, dims[8], offset, nbytes (88 bytes of 96)
# The header from F_REGION_BYTES to F_OUTPUTS_AT, read at once per batch.
HEADER = struct.Struct("<QQIIIIIIQQQQQ")
SEQ = struct.Struct("<Q")
# How long a worker watches for the next batch before it sleeps on the eventfd:
# on x86 alone, whose stores the other side sees in the order they were made.
SPIN_NS = (int(os.environ.get("BATCHSCOPE_WORKER_SPIN_US", "50") or 0) * 1000
           if platform.machine() in ("x86_64", "AMD64") else 0)



def fail(message):
    sys.stderr.write("batchscope worker: " + message.rstrip() + "\n")
    sys.stderr.flush()
    sys.exit(2)


# --- the region ---------------------------------------------------------------


class Region:
    def __init__(self, fd):
        self.fd = fd
        self.map = mmap.mmap(fd, os.fstat(fd).st_size)

    def get(self, field):
        return struct.unpack_from(field[1], self.map, field[0])[0]

    def put(self, field, value):
        struct.pack_into(field[1], self.map, field[0], value)

    def follow_growth(self):
        # The writer grows the region before a batch that needs it; a new map
        # is taken, and the old one lives on while a view of it does.
        size = self.get(F_REGION_BYTES)
        if size > len(self.map):
            self.map = mmap.mmap(self.fd, size)

    def metadata(self):
        """The model's inputs and outputs, as the writer put them in the message area."""
        import json
        size = self.get(F_MESSAGE_BYTES)
        return json.loads(bytes(self.map[MESSAGE_OFFSET:MESSAGE_OFFSET + size]).decode())

    def message(self, text):
        data = text.encode("utf-8", "replace")
        if len(data) > MESSAGE_BYTES:
            keep = MESSAGE_BYTES // 2 - 8
            head = data[:keep].decode("utf-8", "ignore").encode()  # whole characters only
            tail = data[-keep:].decode("utf-8", "ignore").encode()
            data = head + b"\n[...]\n" + tail
        self.map[MESSAGE_OFFSET:MESSAGE_OFFSET + len(data)] = data
        self.put(F_MESSAGE_BYTES, len(data))


def align(n):
    return (n + ALIGN - 1) // ALIGN * ALIGN


class Worker:
    def __init__(self, np, region, to_fd, from_fd, cls, meta, handler):
        self.np = np
        self.region = region
        self.to_fd = to_fd
        self.from_fd = from_fd
        self.cls = cls
        # The region's metadata: what predict takes and gives ("model") and
        # what requests send and get ("served"; the same without preprocess
        # and postprocess).
        model = meta.get("model", meta)
        served = meta.get("served", model)
        self.meta = model
        self.handler = handler
        self.outputs = model["outputs"]
        self.np_types = [np.dtype(t) for t in NUMPY]
        self.input_names = [s["name"] for s in model["inputs"]]
        self.request_specs = served["inputs"]
        self.model_inputs = model["inputs"]
        self.served_outputs = served["outputs"]
        self.kept = []  # requests prepared here for a predict FROM_KEPT
        # Per output: its name, numpy type, datatype code and sizes after the batch.
        self.output_specs = [(s["name"], np.dtype(NUMPY[DTYPES.index(s["datatype"])]),
                              DTYPES.index(s["datatype"]), s["shape"][1:])
                             for s in self.outputs]
        self.seq = 0

    def reply(self, status):
        # The answer's sequence goes last: the writer may be watching it.
        self.region.put(F_STATUS, status)
        self.region.put(F_DONE_SEQ, self.seq)
        os.eventfd_write(self.from_fd, 1)

    def inputs(self):
        ndarray, types, buffer = self.np.ndarray, self.np_types, self.region.map
        out = {}
        for i, name in enumerate(self.input_names):
            dtype, ndim, *rest = ENTRY.unpack_from(buffer, TABLE_OFFSET + i * ENTRY_BYTES)
            out[name] = ndarray(tuple(rest[:ndim]), dtype=types[dtype], buffer=buffer,
                                offset=rest[MAX_DIMS])
        return out

    def check_outputs(self, result, batch):
        """The predict's result as arrays in the declared order, or an error text."""
        np = self.np
        where = "%s.predict" % self.cls.__name__
        if not isinstance(result, dict):
            return None, "%s returned %s; expected a dict of output name -> array" % (
                where, type(result).__name__)
        arrays = []
        for name, want, code, tail in self.output_specs:
            if name not in result:
                return None, "%s's result has no output %r; expected outputs: %s" % (
                    where, name, ", ".join(s["name"] for s in self.outputs))
            value = result[name]
            if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
                value = value.detach().cpu().numpy()
            if not isinstance(value, np.ndarray):
                return None, "%s's output %r is %s; expected a numpy array of %s" % (
                    where, name, type(value).__name__, DTYPES[code])
            if value.dtype != want:
                return None, "%s's output %r has datatype %s; expected %s (%s)" % (
                    where, name, value.dtype, DTYPES[code], want)
            shape = value.shape
            fits = len(shape) == len(tail) + 1 and shape[0] == batch and all(
                d < 0 or shape[i + 1] == d for i, d in enumerate(tail))
            if not fits:
                expected = [batch] + tail
                return None, "%s's output %r has shape %s for a batch of %d; expected %s" % (
                    where, name, list(value.shape), batch, expected)
            if value.ndim > MAX_DIMS:
                return None, "%s's output %r has %d dimensions; at most %d" % (
                    where, name, value.ndim, MAX_DIMS)
            arrays.append(value)
        return arrays, None

    def write_outputs(self, arrays, start, codes):
        """Writes the outputs from `start` with datatypes `codes`; False when the writer refused to grow."""
        np, region = self.np, self.region
        offsets, at = [], align(start)
        for a in arrays:
            offsets.append(at)
            at = align(at + a.nbytes)
        if at > len(region.map):
            region.follow_growth()
        if at > len(region.map):
            region.put(F_NEED_BYTES, at)
            self.reply(ST_NEED_SPACE)
            if self.next_command() == CMD_GROWN:
                region.follow_growth()
            if at > len(region.map):
                self.reply(ST_DROPPED)  # the writer refused: the batch is answered there
                return False
        buffer = region.map
        for k, a in enumerate(arrays):
            dims = a.shape + (0,) * (MAX_DIMS - a.ndim)
            ENTRY.pack_into(buffer, TABLE_OFFSET + (MAX_TENSORS + k) * ENTRY_BYTES,
                            codes[k], a.ndim, *dims, offsets[k], a.nbytes)
            if a.nbytes:
                np.copyto(np.ndarray(a.shape, dtype=a.dtype, buffer=buffer, offset=offsets[k]), a)
        region.put(F_OUTPUTS, len(arrays))
        return True

    def predict(self):
        region = self.region
        size, _, _, _, batch, _, _, _, _, _, _, _, outputs_at = HEADER.unpack_from(
            region.map, F_REGION_BYTES[0])
        if size > len(region.map):
            region.follow_growth()
        flags = region.get(F_FLAGS)
        region.put(F_POST_NS, 0)
        start = time.perf_counter_ns()
        try:
            if flags & FLAG_FROM_KEPT:
                inputs, batch = self.stack_kept(), len(self.kept)
                self.kept = []
            else:
                inputs = self.inputs()
            start = time.perf_counter_ns()
            result = self.handler.predict(inputs)
        except BaseException as e:  # the worker stays; only this batch fails
            region.put(F_PREDICT_NS, time.perf_counter_ns() - start)
            traceback.print_exc()
            region.message("%s.predict raised %s: %s%s" % (
                self.cls.__name__, type(e).__name__, text_of(e), raised_at(e)))
            self.reply(ST_RAISED)
            return
        region.put(F_PREDICT_NS, time.perf_counter_ns() - start)
        del inputs
        try:
            arrays, error = self.check_outputs(result, batch)
        except BaseException as e:  # a result that cannot even be looked at
            arrays, error = None, "%s.predict's result cannot be read: %s: %s" % (
                self.cls.__name__, type(e).__name__, text_of(e))
        if error:
            region.message(error)
            self.reply(ST_BAD_OUTPUT)
            return
        if flags & FLAG_POST:
            start = time.perf_counter_ns()
            self.postprocess(arrays, batch, outputs_at, start)
        elif self.write_outputs(arrays, outputs_at, [s[2] for s in self.output_specs]):
            self.reply(ST_OK)

    # --- a request's own work: preprocess and postprocess ---------------------

    def preprocess(self):
        """One request's inputs (table slots from 0, a batch dimension of 1)
        through the class's preprocess, checked against predict's inputs; the
        result is kept here (FLAG_KEEP) or written to the region."""
        np, region = self.np, self.region
        region.follow_growth()
        flags, outputs_at = region.get(F_FLAGS), region.get(F_OUTPUTS_AT)
        specs = self.model_inputs if flags & FLAG_PASS else self.request_specs
        buffer, types = region.map, self.np_types
        request = {}
        for i, spec in enumerate(specs):
            dtype, ndim, *rest = ENTRY.unpack_from(buffer, TABLE_OFFSET + i * ENTRY_BYTES)
            offset, nbytes = rest[MAX_DIMS], rest[MAX_DIMS + 1]
            if dtype == BYTES:
                request[spec["name"]] = bytes(buffer[offset:offset + nbytes])
            else:
                view = np.ndarray(tuple(rest[:ndim]), dtype=types[dtype], buffer=buffer,
                                  offset=offset)[0]
                # A kept request outlives the region's next use.
                request[spec["name"]] = view.copy() if flags & FLAG_KEEP else view
        if flags & FLAG_PASS:
            result = request
        else:
            try:
                result = self.handler.preprocess(request)
            except BaseException as e:  # this request fails; the worker stays
                traceback.print_exc()
                region.message("%s.preprocess raised %s: %s%s" % (
                    self.cls.__name__, type(e).__name__, text_of(e), raised_at(e)))
                self.reply(ST_RAISED)
                return
        arrays, error = self.check_prepared(result)
        if error:
            region.message(error)
            self.reply(ST_BAD_OUTPUT)
            return
        if flags & FLAG_KEEP:
            self.kept.append([a if a.flags.owndata else a.copy() for a in arrays])
            region.put(F_OUTPUTS, 0)
            region.put(F_LENGTH, self.length_of(arrays))
            self.reply(ST_OK)
            return
        codes = [DTYPES.index(s["datatype"]) for s in self.model_inputs]
        if self.write_outputs([a[None] for a in arrays], outputs_at, codes):
            self.reply(ST_OK)

    def length_of(self, arrays):
        """A prepared request's length, as Batchscope's request_length() reads
        it: along the first varying dimension of the first non-BYTES input
        that has one; 0 where none varies."""
        for spec, a in zip(self.model_inputs, arrays):
            if spec["datatype"] == "BYTES":
                continue
            for d, n in enumerate(spec["shape"][1:]):
                if n < 0 and d < a.ndim:
                    return a.shape[d]
        return 0

    def check_prepared(self, result):
        """preprocess's result as arrays in predict's input order, or an error text."""
        np = self.np
        where = "%s.preprocess" % self.cls.__name__
        if not isinstance(result, dict):
            return None, "%s returned %s; expected a dict of input name -> array" % (
                where, type(result).__name__)
        arrays = []
        for spec in self.model_inputs:
            name, tail = spec["name"], spec["shape"][1:]
            want = NUMPY[DTYPES.index(spec["datatype"])]
            if name not in result:
                return None, "%s's result has no input %r; expected inputs: %s" % (
                    where, name, ", ".join(s["name"] for s in self.model_inputs))
            value = result[name]
            if hasattr(value, "detach") and hasattr(value, "numpy"):  # a torch tensor
                value = value.detach().cpu().numpy()
            if not isinstance(value, np.ndarray):
                return None, "%s's input %r is %s; expected a numpy array of %s" % (
                    where, name, type(value).__name__, spec["datatype"])
            if value.dtype != np.dtype(want):
                return None, "%s's input %r has datatype %s; expected %s (%s)" % (
                    where, name, value.dtype, spec["datatype"], want)
            if len(value.shape) != len(tail) or any(
                    d > 0 and value.shape[i] != d for i, d in enumerate(tail)):
                return None, "%s's input %r has shape %s; expected %s for one request" % (
                    where, name, list(value.shape), tail)
            arrays.append(np.ascontiguousarray(value))
        return arrays, None

    def stack_kept(self):
        """The kept requests as one batch per input, padded to the longest."""
        np, inputs = self.np, {}
        for k, spec in enumerate(self.model_inputs):
            rows = [r[k] for r in self.kept]
            shape = [len(rows)] + [max(r.shape[d] for r in rows) for d in range(rows[0].ndim)]
            if all(list(r.shape) == shape[1:] for r in rows):
                inputs[spec["name"]] = np.stack(rows)
                continue
            batch = np.full(shape, spec.get("pad_value", 0), dtype=rows[0].dtype)
            for i, r in enumerate(rows):
                batch[(i,) + tuple(slice(0, d) for d in r.shape)] = r
            inputs[spec["name"]] = batch
        return inputs

    def postprocess(self, arrays, batch, outputs_at, start):
        """Each row of predict's outputs through the class's postprocess; the
        served outputs stacked (a BYTES output as UINT8 rows padded to the
        longest, with every row's lengths in a last INT64 table entry), and
        the rows that failed named in the message (ST_PARTIAL)."""
        np = self.np
        names = [s[0] for s in self.output_specs]
        specs = self.served_outputs
        rows, faults = [], []
        for r in range(batch):
            try:
                got = self.handler.postprocess({n: a[r] for n, a in zip(names, arrays)})
                rows.append(self.check_answer(got))
            except BaseException as e:
                traceback.print_exc()
                text = e.args[0] if isinstance(e, AnswerError) else "%s.postprocess raised %s: %s%s" % (
                    self.cls.__name__, type(e).__name__, text_of(e), raised_at(e))
                faults.append([r, text])
                rows.append(None)
        region = self.region
        region.put(F_POST_NS, time.perf_counter_ns() - start)
        good = next((row for row in rows if row is not None), None)
        out, codes, lengths = [], [], []
        for k, spec in enumerate(specs):
            if spec["datatype"] == "BYTES":
                values = [row[k] if row is not None else b"" for row in rows]
                longest = max(len(v) for v in values)
                stacked = np.zeros((batch, longest), dtype=np.uint8)
                for r, v in enumerate(values):
                    stacked[r, :len(v)] = np.frombuffer(v, dtype=np.uint8)
                out.append(stacked)
                codes.append(UINT8)
                lengths.append([len(v) for v in values])
                continue
            blank = good[k] if good is not None else np.zeros(
                [max(d, 1) for d in spec["shape"][1:]], dtype=NUMPY[DTYPES.index(spec["datatype"])])
            values = [row[k] if row is not None else np.zeros_like(blank) for row in rows]
            shape = [max(v.shape[d] for v in values) for d in range(blank.ndim)]
            stacked = np.zeros([batch] + shape, dtype=blank.dtype)
            for r, v in enumerate(values):
                stacked[(r,) + tuple(slice(0, d) for d in v.shape)] = v
            out.append(stacked)
            codes.append(DTYPES.index(spec["datatype"]))
        if lengths:
            out.append(np.array(lengths, dtype=np.int64).T.copy())
            codes.append(INT64)
        if not self.write_outputs(out, outputs_at, codes):
            return
        if faults:
            import json
            self.region.message(json.dumps(faults))
            self.reply(ST_PARTIAL)
        else:
            self.reply(ST_OK)

    def check_answer(self, got):
        """postprocess's answer for one request as values in the served
        outputs' order (bytes for a BYTES output); raises AnswerError."""
        np = self.np
        where = "%s.postprocess" % self.cls.__name__
        if not isinstance(got, dict):
            raise AnswerError("%s returned %s; expected a dict of output name -> value" % (
                where, type(got).__name__))
        values = []
        for spec in self.served_outputs:
            name, tail = spec["name"], spec["shape"][1:]
            if name not in got:
                raise AnswerError("%s's answer has no output %r; expected outputs: %s" % (
                    where, name, ", ".join(s["name"] for s in self.served_outputs)))
            value = got[name]
            if spec["datatype"] == "BYTES":
                if isinstance(value, str):
                    value = value.encode("utf-8")
                elif isinstance(value, (bytes, bytearray, memoryview)):
                    value = bytes(value)
                else:
                    import json
                    try:
                        value = json.dumps(value, default=plain).encode("utf-8")
                    except (TypeError, ValueError) as e:
                        raise AnswerError("%s's output %r cannot be written as JSON: %s" % (
                            where, name, text_of(e)))
                values.append(value)
                continue
            if hasattr(value, "detach") and hasattr(value, "numpy"):
                value = value.detach().cpu().numpy()
            want = np.dtype(NUMPY[DTYPES.index(spec["datatype"])])
            if isinstance(value, np.ndarray):
                if value.dtype != want:
                    raise AnswerError("%s's output %r has datatype %s; expected %s (%s)" % (
                        where, name, value.dtype, spec["datatype"], want))
            else:
                try:
                    value = np.asarray(value, dtype=want)
                except (TypeError, ValueError) as e:
                    raise AnswerError("%s's output %r (%r) is not %s: %s" % (
                        where, name, value, spec["datatype"], text_of(e)))
            if value.ndim != len(tail) or any(
                    d > 0 and value.shape[i] != d for i, d in enumerate(tail)):
                raise AnswerError("%s's output %r has shape %s; expected %s for one request" % (
                    where, name, list(value.shape), tail))
            values.append(value)
        return values

    def next_command(self):
        """Waits until the writer's sequence number moves on, and returns its command.

        The writer sets the command, then the sequence, then rings. A batch
        that follows the last one closely is seen by watching the sequence for
        SPIN_NS, sooner than a wake-up from the eventfd comes; after that the
        worker sleeps until a ring. A ring whose command was already seen
        wakes it once more, to find the sequence unchanged.
        """
        region, seq_at = self.region, F_SEQ[0]
        unpack, clock = SEQ.unpack_from, time.perf_counter_ns
        deadline = clock() + SPIN_NS
        while True:
            seq = unpack(region.map, seq_at)[0]
            if seq != self.seq:
                self.seq = seq
                return region.get(F_COMMAND)
            if deadline and clock() < deadline:
                continue
            deadline = 0
            select.select([self.to_fd], [], [])
            try:
                os.eventfd_read(self.to_fd)
            except BlockingIOError:
                pass

    def serve(self):
        while True:
            command = self.next_command()
            if command == CMD_QUIT:
                return
            if command == CMD_PREDICT:
                self.predict()
            elif command == CMD_PREPROCESS:
                self.preprocess()


class AnswerError(Exception):
    """postprocess's answer does not fit the served outputs; the text says how."""


def plain(value):
    """numpy values as the plain ones json writes."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError("%s is not a JSON value" % type(value).__name__)


def text_of(e):
    """An exception's message, even where its __str__ raises."""
    try:
        return str(e)
    except BaseException:
        return "(its message cannot be shown)"


def raised_at(e):
    frames = traceback.extract_tb(e.__traceback__)
    if not frames:
        return ""
    last = frames[-1]
    return " (at %s:%d in %s)" % (os.path.basename(last.filename), last.lineno, last.name)


def warm(np, handler, cls, meta, sizes, worker):
    """Runs predict on zeros at each batch size; raises HandlerError naming the fault."""
    for b in sizes:
        inputs = {}
        for spec in meta.get("model", meta)["inputs"]:
            shape = [b] + [d if d > 0 else 1 for d in spec["shape"][1:]]
            inputs[spec["name"]] = np.zeros(shape, dtype=NUMPY[DTYPES.index(spec["datatype"])])
        try:
            result = handler.predict(inputs)
        except BaseException:
            raise HandlerError("%s.predict failed warming up at a batch of %d (on zeros):\n%s"
                               % (cls.__name__, b, traceback.format_exc()))
        _, error = worker.check_outputs(result, b)
        if error:
            raise HandlerError("warming up at a batch of %d (on zeros): %s" % (b, error))


def die_with_parent(parent):
    """The kernel kills this worker when the thread that started it ends."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if parent and os.getppid() != parent:
        sys.exit(1)  # it ended before the line above took effect


def parse_args(argv):
    if len(argv) < 2 or argv[0] not in ("describe", "serve"):
        fail("usage: batchscope_worker.py describe|serve FILE [options] (see its docstring)")
    args = {"mode": argv[0], "file": argv[1], "class": "", "options": {}, "warm": [1]}
    i = 2
    while i < len(argv):
        flag = argv[i]
        if i + 1 >= len(argv):
            fail("%s needs a value" % flag)
        value = argv[i + 1]
        if flag == "--class":
            args["class"] = value
        elif flag == "--option":
            key, eq, val = value.partition("=")
            if not eq or not key:
                fail("--option expects KEY=VALUE, got %r" % value)
            args["options"][key] = val
        elif flag in ("--region", "--to", "--from", "--parent"):
            args[flag[2:]] = int(value)
        elif flag == "--warm-batch":
            # 0: none (a preprocess pool's worker runs no predict).
            args["warm"] = sorted({1, int(value)}) if int(value) > 0 else []
        else:
            fail("unknown flag %r" % flag)
        i += 2
    return args


def main(argv):
    args = parse_args(argv)
    if args["mode"] == "describe":
        # What the handler prints while importing goes to standard error, so
        # standard output carries the JSON alone.
        out = os.fdopen(os.dup(1), "w")
        os.dup2(2, 1)
        try:
            module = load_module(args["file"])
            cls = find_class(module, args["file"], args["class"])
            meta = describe(cls, args["file"])
        except HandlerError as e:
            fail(str(e))
        import json
        out.write(json.dumps(meta) + "\n")
        out.close()
        return 0

    die_with_parent(args.get("parent", 0))
    # Ctrl-C in a terminal and a service manager's SIGTERM reach the whole
    # process group: Batchscope drains, then tells its workers to quit.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    for fd in (args["region"], args["to"], args["from"]):
        os.set_inheritable(fd, False)  # not into processes the handler starts
    import faulthandler
    faulthandler.enable()  # a crash in native code prints the Python stack it happened under
    region = Region(args["region"])
    if region.get(F_MAGIC) != MAGIC or region.get(F_VERSION) != PROTOCOL:
        fail("the region is not a Batchscope worker region of protocol %d" % PROTOCOL)
    region.put(F_PID, os.getpid())
    to_fd, from_fd = args["to"], args["from"]
    try:
        try:
            import numpy as np
        except ImportError:
            raise HandlerError("%s cannot import numpy: install it (Debian: python3-numpy) or"
                               " name another interpreter with --python" % sys.executable)
        module = load_module(args["file"])
        cls = find_class(module, args["file"], args["class"])
        meta = region.metadata()
        try:
            handler = cls(**args["options"])
        except BaseException:
            raise HandlerError("%s: %s.__init__ failed:\n%s" % (
                os.path.basename(args["file"]), cls.__name__, traceback.format_exc()))
        worker = Worker(np, region, to_fd, from_fd, cls, meta, handler)
        warm(np, handler, cls, meta, args["warm"], worker)
    except HandlerError as e:
        sys.stderr.write(str(e) + "\n")
        region.message(str(e))
        region.put(F_STATUS, ST_START_FAILED)
        os.eventfd_write(from_fd, 1)
        return 1
    region.put(F_STATUS, ST_READY)
    os.eventfd_write(from_fd, 1)
    worker.serve()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

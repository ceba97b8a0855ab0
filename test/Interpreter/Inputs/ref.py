#!/usr/bin/env python3
"""An oracle for the `kiln run` lit tests that shares no code with Kiln.

.npy files are written and read with the standard library only (struct),
and the ops are computed in double precision in plain Python, straight from
their definitions (softmax, layer norm, cross-entropy with label smoothing,
scaled dot-product attention, the tanh GELU).

  ref.py write FILE.npy DESCR SHAPE V1 V2 ... [--truncate N] [--version V]
      DESCR is a numpy type string ('<f4', '<f8', '<i4', '<i8', '|u1',
      '<u2', '|b1'); SHAPE is '2,3' ('' or 'scalar' for a scalar).
  ref.py check FILE.npy EXPR [--rtol R] [--atol A] [--descr D]
      Compares the array in FILE.npy with EXPR, a Python expression over the
      functions below; the shape of EXPR's nested lists must match.
  ref.py check-printed OUTPUT.txt NAME EXPR [--rtol R] [--atol A]
      Finds the line `NAME ... = VALUE` that `kiln run` prints for a scalar
      and compares VALUE with EXPR.
"""
import ast
import math
import struct
import sys

CODES = {"<f4": "f", "<f8": "d", "<i4": "i", "<i8": "q", "|u1": "B",
         "<u2": "H", "|b1": "?"}


def write_npy(path, descr, shape, values, truncate=0, version=1):
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %r, }" % (
        descr, tuple(shape))
    prefix = 10 if version == 1 else 12
    pad = (64 - (prefix + len(header) + 1) % 64) % 64
    header = (header + " " * pad + "\n").encode("latin1")
    size = struct.pack("<H", len(header)) if version == 1 else struct.pack(
        "<I", len(header))
    data = struct.pack("<%d%s" % (len(values), CODES[descr]), *values)
    blob = b"\x93NUMPY" + bytes([version, 0]) + size + header + data
    if truncate:
        blob = blob[:-truncate]
    with open(path, "wb") as f:
        f.write(blob)


def read_npy(path):
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:6] != b"\x93NUMPY":
        sys.exit("%s: not a .npy file" % path)
    if blob[6] == 1:
        (length,) = struct.unpack("<H", blob[8:10])
        start = 10
    else:
        (length,) = struct.unpack("<I", blob[8:12])
        start = 12
    header = ast.literal_eval(blob[start:start + length].decode("latin1"))
    if header["fortran_order"]:
        sys.exit("%s: fortran order" % path)
    shape = list(header["shape"])
    count = 1
    for dim in shape:
        count *= dim
    code = CODES[header["descr"]]
    data = blob[start + length:]
    values = list(struct.unpack("<%d%s" % (count, code),
                                data[:count * struct.calcsize(code)]))
    return header["descr"], shape, values


# ---------------------------------------------------------------------------
# Reference ops on nested lists, in double precision.
# ---------------------------------------------------------------------------
def shape_of(x):
    shape = []
    while isinstance(x, list):
        shape.append(len(x))
        x = x[0] if x else None
    return shape


def flatten(x):
    if isinstance(x, list):
        return [v for item in x for v in flatten(item)]
    return [x]


def rowwise(f, x):
    """Applies f to every innermost row of x."""
    if isinstance(x[0], list):
        return [rowwise(f, item) for item in x]
    return f(x)


def transpose(m):
    return [list(col) for col in zip(*m)]


def matmul(a, b):
    return [[sum(a[i][k] * b[k][j] for k in range(len(b)))
             for j in range(len(b[0]))] for i in range(len(a))]


def softmax(x):
    def row(r):
        top = max(r)
        e = [math.exp(v - top) for v in r]
        s = sum(e)
        return [v / s for v in e]
    return rowwise(row, x)


def log_softmax(r):
    top = max(r)
    lse = top + math.log(sum(math.exp(v - top) for v in r))
    return [v - lse for v in r]


def layer_norm(x, gamma, beta, eps=1e-5):
    def row(r):
        mu = sum(r) / len(r)
        var = sum((v - mu) ** 2 for v in r) / len(r)
        return [(v - mu) / math.sqrt(var + eps) * g + b
                for v, g, b in zip(r, gamma, beta)]
    return rowwise(row, x)


def cross_entropy(logits, targets, smoothing=0.0):
    """Mean over rows of -sum_c t_c log p_c, t = (1 - s) onehot + s / C."""
    rows = []
    def collect(l, t):
        if isinstance(t, list):
            for li, ti in zip(l, t):
                collect(li, ti)
        else:
            rows.append((l, t))
    collect(logits, targets)
    total = 0.0
    for row, target in rows:
        logp = log_softmax(row)
        classes = len(row)
        total -= sum(((1 - smoothing) * (c == target) + smoothing / classes)
                     * logp[c] for c in range(classes))
    return total / len(rows)


def attention(q, k, v, causal=False, scale=None):
    """softmax(q k^T * scale + mask) v for 2-D q, k, v; deeper lists map."""
    if isinstance(q[0][0], list):
        return [attention(qi, ki, vi, causal, scale)
                for qi, ki, vi in zip(q, k, v)]
    if scale is None:
        scale = 1.0 / math.sqrt(len(q[0]))
    scores = [[scale * sum(a * b for a, b in zip(qi, kj)) for kj in k]
              for qi in q]
    if causal:
        scores = [[s if j <= i else -math.inf for j, s in enumerate(row)]
                  for i, row in enumerate(scores)]
    weights = softmax(scores)
    return matmul(weights, v)


def relu(x):
    return rowwise(lambda r: [max(v, 0.0) for v in r], x)


def gelu(x):
    c = math.sqrt(2.0 / math.pi)
    return rowwise(lambda r: [0.5 * v * (1 + math.tanh(c * (v + 0.044715 * v ** 3)))
                              for v in r], x)


def add(a, b):
    """a + b with b broadcast along a's leading dims."""
    if shape_of(a) == shape_of(b):
        if isinstance(a, list):
            return [add(x, y) for x, y in zip(a, b)]
        return a + b
    return [add(x, b) for x in a]


def mean(x):
    values = flatten(x)
    return sum(values) / len(values)


# ---------------------------------------------------------------------------
def option(args, name, default):
    if name in args:
        i = args.index(name)
        value = args[i + 1]
        del args[i:i + 2]
        return value
    return default


def compare(what, got, expected, rtol, atol):
    bad = [(i, g, e) for i, (g, e) in enumerate(zip(got, expected))
           if not abs(g - e) <= atol + rtol * abs(e)]
    if len(got) != len(expected):
        sys.exit("%s: %d values, expected %d" % (what, len(got), len(expected)))
    if bad:
        for i, g, e in bad[:10]:
            print("%s[%d]: got %.9g, expected %.9g" % (what, i, g, e))
        sys.exit(1)
    print("%s: %d values match" % (what, len(got)))


def evaluate(expr):
    return eval(expr, {k: v for k, v in globals().items() if not k.startswith("_")})


def main(argv):
    args = list(argv)
    command = args.pop(0)
    if command == "write":
        truncate = int(option(args, "--truncate", "0"))
        version = int(option(args, "--version", "1"))
        path, descr, shape = args[:3]
        shape = [] if shape in ("", "scalar") else [int(d) for d in shape.split(",")]
        convert = float if descr[1] == "f" else (
            (lambda s: s == "1") if descr[1] == "b" else int)
        write_npy(path, descr, shape, [convert(v) for v in args[3:]],
                  truncate, version)
    elif command == "check":
        rtol = float(option(args, "--rtol", "1e-5"))
        atol = float(option(args, "--atol", "1e-6"))
        want_descr = option(args, "--descr", None)
        path, expr = args
        descr, shape, values = read_npy(path)
        expected = evaluate(expr)
        if want_descr and descr != want_descr:
            sys.exit("%s: dtype %s, expected %s" % (path, descr, want_descr))
        if shape != shape_of(expected):
            sys.exit("%s: shape %s, expected %s" % (path, shape, shape_of(expected)))
        compare(path, values, flatten(expected), rtol, atol)
    elif command == "check-printed":
        rtol = float(option(args, "--rtol", "1e-5"))
        atol = float(option(args, "--atol", "1e-6"))
        path, name, expr = args
        with open(path) as f:
            lines = [l for l in f if l.split() and l.split()[0] == name]
        if len(lines) != 1 or "=" not in lines[0]:
            sys.exit("%s: no single scalar line for %s" % (path, name))
        compare(name, [float(lines[0].split("=")[1])], [float(evaluate(expr))],
                rtol, atol)
    else:
        sys.exit("unknown command " + command)


if __name__ == "__main__":
    main(sys.argv[1:])

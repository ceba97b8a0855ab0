"""Reads the float tensors of a .safetensors file, for the CLI tests' checks
(no NumPy): read_floats(path, dtypes) -> {name: tuple of floats}."""
import json
import struct

_CODES = {'F32': 'f', 'F64': 'd'}


def read_floats(path, dtypes=('F32', 'F64')):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == '__metadata__' or info['dtype'] not in dtypes:
            continue
        code = _CODES[info['dtype']]
        begin, end = info['data_offsets']
        count = (end - begin) // struct.calcsize(code)
        out[name] = struct.unpack('<%d%s' % (count, code), data[begin:end])
    return out

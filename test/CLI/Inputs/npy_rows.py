"""Writes the first N rows of a .npy array (version 1, C order) to another
.npy file: `npy_rows.py IN.npy N OUT.npy`, or rows START to END (END
excluded) with `npy_rows.py IN.npy START:END OUT.npy`. No NumPy needed."""
import ast
import struct
import sys


def main():
    source, span, target = sys.argv[1], sys.argv[2], sys.argv[3]
    start, rows = 0, 0
    if ':' in span:
        first, last = span.split(':')
        start, rows = int(first), int(last) - int(first)
    else:
        rows = int(span)
    data = open(source, 'rb').read()
    assert data[:6] == b'\x93NUMPY' and data[6] == 1, 'a version-1 .npy'
    length = struct.unpack('<H', data[8:10])[0]
    header = ast.literal_eval(data[10:10 + length].decode('latin1'))
    assert not header['fortran_order']
    shape = header['shape']
    assert 0 <= start and 0 < rows and start + rows <= shape[0], (span, shape)
    width = 1
    for dim in shape[1:]:
        width *= dim
    size = int(header['descr'][2:])
    begin = 10 + length + start * width * size
    body = data[begin:begin + rows * width * size]
    new = dict(header, shape=(rows,) + tuple(shape[1:]))
    text = repr(new).encode('latin1')
    pad = 64 - (10 + len(text) + 1) % 64
    text += b' ' * pad + b'\n'
    with open(target, 'wb') as out:
        out.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(text)) + text)
        out.write(body)


main()

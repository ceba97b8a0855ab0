"""Checks a model's buffers (batch norm's running statistics). No NumPy.

  check_buffers.py INIT.safetensors TRAINED.safetensors
      every buffer (a tensor named *mean* or *var* here) of INIT holds its
      initializer (0 for means, 1 for variances) and has moved in TRAINED;
      prints one line per buffer and their count
  check_buffers.py --eval-loss METRICS.jsonl LOSS.npy TOL
      the last eval_loss of METRICS within TOL (relative) of the f32 scalar
      in LOSS.npy (kiln run --output-dir)
"""
import ast
import json
import struct
import sys

from safetensors_floats import read_floats


def f32_tensors(path):
    return read_floats(path, ('F32',))


def npy_scalar(path):
    data = open(path, 'rb').read()
    assert data[:6] == b'\x93NUMPY'
    length = struct.unpack('<H', data[8:10])[0]
    header = ast.literal_eval(data[10:10 + length].decode('latin1'))
    assert header['descr'] == '<f4' and header['shape'] == (), header
    return struct.unpack('<f', data[10 + length:10 + length + 4])[0]


def main():
    if sys.argv[1] == '--eval-loss':
        records = [json.loads(line) for line in open(sys.argv[2])]
        losses = [r['eval_loss'] for r in records if 'eval_loss' in r]
        assert losses, 'no eval_loss'
        reference = npy_scalar(sys.argv[3])
        relative = abs(losses[-1] - reference) / abs(reference)
        print('eval %.9g, interpreter %.9g, relative %.3g' %
              (losses[-1], reference, relative))
        assert relative <= float(sys.argv[4]), relative
        print('eval loss matches the interpreter')
        return
    initial, trained = f32_tensors(sys.argv[1]), f32_tensors(sys.argv[2])
    count = 0
    for name in sorted(initial, key=lambda n: (n.count('.'), n)):
        if 'mean' not in name and 'var' not in name or name.endswith(
                ('.adam_m', '.adam_v')):
            continue
        start = 0.0 if 'mean' in name else 1.0
        assert all(v == start for v in initial[name]), (name, initial[name])
        assert name in trained, name
        moved = any(a != b for a, b in zip(initial[name], trained[name]))
        assert moved, name
        print('%s: initial %g everywhere, trained moved' % (name, start))
        count += 1
    print('%d buffers' % count)


if __name__ == '__main__':
    main()

"""Checks fp16 loss-scaling runs from their metrics and checkpoints.

  metrics FILE KEY=VALUE,...  each step's record: `skipped` and `loss_scale`
                              per step, given as lists (`skipped=1,1,0`,
                              `scale=4,8,8`, rounded to f32)
  unchanged A B               every tensor but loss_scale.* equal, byte for
                              byte, in safetensors files A and B; prints the
                              loss_scale.* values of B
  close A B TOL               the final training loss of metrics A and B
                              within TOL (relative)
  tensors A B TOL             every f32 tensor of safetensors A within TOL of
                              B's: ||a - b|| / ||b|| per tensor
  sgd-gradients BASE STEPPED LR GRADS TOL
                              (BASE - STEPPED) / LR, the gradient one plain
                              SGD step applied, within TOL of GRADS per
                              tensor (||a - b|| / ||b||); prints each error
  common A B TOL              every f32 tensor of B within TOL of A's tensor
                              of that name (A may hold more: accumulators);
                              prints each name and error
  same-losses A B             every step's loss of metrics A equal to B's
  names A                     the tensor names of safetensors A
  updates BASE A B TOL        the same for the steps A - BASE and B - BASE
                              (each tensor's change from the checkpoint
                              BASE); prints each tensor's error
"""
import json
import struct
import sys


def steps(path):
    return [r for r in map(json.loads, open(path)) if 'loss' in r]


def tensors(path):
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    return {k: data[v['data_offsets'][0]:v['data_offsets'][1]]
            for k, v in header.items() if k != '__metadata__'}


def main():
    command = sys.argv[1]
    if command == 'metrics':
        records = steps(sys.argv[2])
        for field in sys.argv[3:]:
            key, values = field.split('=')
            # As the f32 scalars the step computes.
            want = [struct.unpack('<f', struct.pack('<f', float(v)))[0]
                    for v in values.split(',')]
            got = [float(r['skipped' if key == 'skipped' else 'loss_scale'])
                   for r in records]
            assert got == want, (key, got, want)
        print('steps', len(records), 'ok')
    elif command == 'unchanged':
        a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
        assert a.keys() == b.keys(), (a.keys(), b.keys())
        changed = [k for k in a if a[k] != b[k] and not k.startswith('loss_scale.')]
        assert not changed, changed
        for k in sorted(b):
            if k.startswith('loss_scale.'):
                print(k, struct.unpack('<f', b[k])[0])
    elif command == 'sgd-gradients':
        base, stepped = tensors(sys.argv[2]), tensors(sys.argv[3])
        lr, grads = float(sys.argv[4]), tensors(sys.argv[5])
        tol = float(sys.argv[6])
        assert grads, 'no gradients'
        for k in sorted(grads):
            n = len(grads[k]) // 4
            g = struct.unpack('<%df' % n, grads[k])
            p0 = struct.unpack('<%df' % n, base[k])
            p1 = struct.unpack('<%df' % n, stepped[k])
            applied = [(a - b) / lr for a, b in zip(p0, p1)]
            diff = sum((p - q) ** 2 for p, q in zip(applied, g)) ** 0.5
            norm = sum(q * q for q in g) ** 0.5
            error = diff / norm
            print(k, error)
            assert error <= tol, (k, error)
        print('gradients', len(grads), 'ok')
    elif command == 'same-losses':
        a = [r['loss'] for r in steps(sys.argv[2])]
        b = [r['loss'] for r in steps(sys.argv[3])]
        assert a and a == b, (a, b)
        print('same losses', len(a))
    elif command == 'names':
        for name in sorted(tensors(sys.argv[2])):
            print(name)
    elif command == 'common':
        a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
        tol = float(sys.argv[4])
        assert b and set(b) <= set(a), (sorted(b), sorted(a))
        for k in sorted(b):
            x = struct.unpack('<%df' % (len(a[k]) // 4), a[k])
            y = struct.unpack('<%df' % (len(b[k]) // 4), b[k])
            diff = sum((p - q) ** 2 for p, q in zip(x, y)) ** 0.5
            norm = sum(q * q for q in y) ** 0.5
            error = diff / norm if norm else diff
            print('%s %.3g' % (k, error))
            assert error <= tol, (k, error)
    elif command == 'close':
        a, b = steps(sys.argv[2])[-1]['loss'], steps(sys.argv[3])[-1]['loss']
        tol = float(sys.argv[4])
        print('final losses', a, b)
        assert abs(a - b) <= tol * abs(b), (a, b)
    elif command in ('tensors', 'updates'):
        base = tensors(sys.argv.pop(2)) if command == 'updates' else None
        a, b = tensors(sys.argv[2]), tensors(sys.argv[3])
        tol = float(sys.argv[4])
        assert a.keys() == b.keys(), (a.keys(), b.keys())
        worst = 0.0
        pairs = {}
        for k in sorted(b):
            x = struct.unpack('<%df' % (len(a[k]) // 4), a[k])
            y = struct.unpack('<%df' % (len(b[k]) // 4), b[k])
            if base is not None:
                if k not in base:
                    continue
                z = struct.unpack('<%df' % (len(base[k]) // 4), base[k])
                x = [p - r for p, r in zip(x, z)]
                y = [q - r for q, r in zip(y, z)]
            pairs[k] = (x, y)
        # An update that vanishes (below 1e-6 of the largest: a gradient
        # that is zero in exact arithmetic, as q's and k's with one key) is
        # rounding noise on both sides; it is held to the largest update's
        # norm instead of its own.
        largest = max([sum(q * q for q in y) ** 0.5
                       for x, y in pairs.values()] + [0.0])
        for k, (x, y) in pairs.items():
            diff = sum((p - q) ** 2 for p, q in zip(x, y)) ** 0.5
            norm = sum(q * q for q in y) ** 0.5
            if base is not None and norm < 1e-6 * largest:
                norm = largest
            error = diff / norm if norm else diff
            if base is not None:
                print(k, error)
            assert error <= tol, (k, error)
            worst = max(worst, error)
        print(command, len(b), 'worst', worst)
    else:
        raise SystemExit('unknown command ' + command)


main()

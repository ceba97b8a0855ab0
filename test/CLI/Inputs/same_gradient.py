"""Compares two tensors of one .safetensors file (f32 or f64).

same_gradient.py FILE A B TOL: prints ||A - B|| / ||B|| and fails unless it
is at most TOL and B is not all zeros.
"""
import sys

from safetensors_floats import read_floats


def main():
    path, a, b, tol = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
    tensors = read_floats(path)
    x, y = tensors[a], tensors[b]
    diff = sum((p - q) ** 2 for p, q in zip(x, y)) ** 0.5
    norm = sum(q * q for q in y) ** 0.5
    assert norm > 0, 'the reference gradient is all zeros'
    print('%s vs %s: %.3g' % (a, b, diff / norm))
    assert diff / norm <= tol, (a, b, diff / norm)


main()

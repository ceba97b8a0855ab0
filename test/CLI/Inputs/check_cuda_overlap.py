"""How many armed accumulate_step runs queued kernels while their gradient
sums (all-reduces, or ZeRO-1's reduces) were in flight on the GPU.

Reads one rank's driver and NCCL calls logged into the same file (the fake
driver's KILN_FAKE_CUDA_TRACE and the fake NCCL's KILN_FAKE_NCCL_TRACE, both
appended in call order). A run's sums start with its first ncclAllReduce
(or ncclReduce) and end with the host's wait for them (the first cuEventQuery after it);
a kernel launch or GEMM queued in between runs on the compute stream while
a bucket's sum may still be reducing: the overlap. Prints how many runs had
sums, and how many of those queued work in between.
"""
import re
import sys

runs = overlapped = 0
in_flight = False
queued = 0
for line in open(sys.argv[1]):
    if re.search(r"ncclAllReduce |ncclReduce ", line):
        if not in_flight:
            runs += 1
            in_flight = True
            queued = 0
    elif in_flight and line.startswith("cuLaunchKernel"):
        queued += 1
    elif in_flight and line.startswith("cuEventQuery"):
        overlapped += queued > 0
        in_flight = False
print(f"runs with sums: {runs}; kernels queued while their sums were in "
      f"flight: {overlapped} of {runs}")

# -*- Python -*-
# Kiln's lit configuration: MLIR files under test/ run through kiln-opt and
# FileCheck; .kiln files through the kiln CLI; the GoogleTest binary under
# unit/ runs as one lit test per case.
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(not lit_config.isWindows)
config.suffixes = [".mlir", ".kiln", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py",
                   "unit"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_obj_root, "test")

config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", "")])
config.substitutions.append(("%kiln_src", config.kiln_src_root))
config.substitutions.append(("%kiln_build", config.kiln_obj_root))
config.substitutions.append(("%fake_libcuda", getattr(config, "kiln_fake_libcuda", "")))
config.substitutions.append(("%fake_cublaslt", getattr(config, "kiln_fake_cublaslt", "")))
config.substitutions.append(("%examples", os.path.join(config.kiln_src_root, "examples")))
# The embedding examples (examples/embed) are built by the tests with the
# system C compiler against libkiln_runtime.so, as a user would build them.
config.substitutions.append(("%cc", getattr(config, "kiln_c_compiler", "cc")))
config.substitutions.append(("%kiln_lib", getattr(
    config, "kiln_lib_dir", os.path.join(config.kiln_obj_root, "lib"))))
config.substitutions.append(("%kiln_include",
                             os.path.join(config.kiln_src_root, "runtime", "include")))
if config.kiln_has_ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", config.kiln_ptxas))
elif os.environ.get("KILN_REQUIRE_PTXAS") == "1":
    # CI checks every PTX module with ptxas: a missing toolkit fails the run
    # instead of skipping those tests.
    lit_config.fatal("KILN_REQUIRE_PTXAS=1 but the CUDA toolkit's ptxas was "
                     "not found at configure time (/usr/local/cuda/bin)")
# The cpu GEMM libraries built into the runtime: gemm-onednn, gemm-openblas.
for library in getattr(config, "kiln_gemm_libraries", []):
    config.available_features.add("gemm-" + library)
# Data-parallel training: kiln built with MPI. %mpirun N runs N ranks on this
# machine (more ranks than cores allowed; root allowed, as in CI).
if getattr(config, "kiln_mpiexec", ""):
    config.available_features.add("mpi")
    config.substitutions.append(
        ("%mpirun", config.kiln_mpiexec + " --oversubscribe -np"))
    config.environment["OMPI_ALLOW_RUN_AS_ROOT"] = "1"
    config.environment["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
    # The fake NCCL (test/unit/fakes/FakeNccl.c) reduces over MPI.
    if getattr(config, "kiln_fake_nccl", ""):
        config.available_features.add("fake-nccl")
        config.substitutions.append(("%fake_nccl", config.kiln_fake_nccl))
# This CPU's vector extensions, for tests of which kernels a library picks.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
except OSError:
    flags = []
if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
    config.available_features.add("cpu-avx512")
# Full-disk tests mount a small tmpfs (root, and a kernel that allows it).
def can_mount_tmpfs():
    import subprocess
    import tempfile
    if os.geteuid() != 0:
        return False
    with tempfile.TemporaryDirectory() as directory:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", directory],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
        if mounted:
            subprocess.run(["umount", directory])
        return mounted
if can_mount_tmpfs():
    config.available_features.add("tmpfs-mount")
# Tests choose the GEMM library themselves; a KILN_GEMM or a capped oneDNN
# ISA in the caller's environment must not change what they see.
for variable in ("KILN_GEMM", "ONEDNN_MAX_CPU_ISA", "DNNL_MAX_CPU_ISA"):
    config.environment.pop(variable, None)

# Every compile in a test verifies its IR after every pass, not only at the
# end as users' compiles do (kiln/Support/PassVerification.h).
config.environment["KILN_VERIFY_EACH"] = "1"

# Compiled artifacts of kiln train/sample go to a cache inside the build tree,
# never to the user's ~/.cache.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root,
                                                    "kiln-cache")

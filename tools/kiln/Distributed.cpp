//===- Distributed.cpp - The ranks of a data-parallel kiln train ----------===//
//
// Part of Kiln.
//
//===----------------------------------------------------------------------===//

#include "Distributed.h"

#include "llvm/Support/Process.h"

#ifdef KILN_HAVE_MPI
// The C API only: not the deprecated C++ bindings' library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <cstdlib>
#include <string>

using namespace llvm;
using namespace kiln::cli;

/// The world size a launcher announced in the environment (Open MPI's
/// mpirun, a PMI or PMIx launcher such as srun), or 0.
static int getLaunchedWorld() {
  for (const char *name :
       {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE", "MPI_LOCALNRANKS"})
    if (std::optional<std::string> value = sys::Process::GetEnv(name))
      return std::atoi(value->c_str());
  // srun without --mpi sets SLURM_NTASKS but no PMI: MPI_Init still works
  // through Slurm's PMI there.
  if (sys::Process::GetEnv("SLURM_STEP_ID"))
    if (std::optional<std::string> tasks = sys::Process::GetEnv("SLURM_NTASKS"))
      return std::atoi(tasks->c_str());
  return 0;
}

#ifdef KILN_HAVE_MPI
static Error mpiError(const char *what, int code) {
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  return createStringError(std::string(what) +
                           " failed: " + std::string(message, length));
}
#endif

Expected<Communicator> Communicator::join() {
  int launched = getLaunchedWorld();
#ifdef KILN_HAVE_MPI
  if (launched < 1)
    return Communicator(0, 1, /*joined=*/false);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    if (int code = MPI_Init(nullptr, nullptr); code != MPI_SUCCESS)
      return mpiError("MPI_Init", code);
  // Errors come back as codes, not as an abort inside the library.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, world = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  return Communicator(rank, world, /*joined=*/true);
#else
  if (launched > 1)
    return createStringError(
        "this process was started as one of " + std::to_string(launched) +
        " ranks (mpirun or srun), but this kiln was built without MPI: "
        "install Open MPI (libopenmpi-dev) and rebuild");
  return Communicator(0, 1, /*joined=*/false);
#endif
}

Communicator::Communicator(Communicator &&other) noexcept
    : rank_(other.rank_), world_(other.world_), joined_(other.joined_) {
  other.joined_ = false;
}

Communicator::~Communicator() {
#ifdef KILN_HAVE_MPI
  if (joined_) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized)
      MPI_Finalize();
  }
#endif
}

Error Communicator::sumInPlace(float *values, size_t count) {
  if (world_ == 1 || count == 0)
    return Error::success();
#ifdef KILN_HAVE_MPI
  // MPI counts are ints: large buffers go in pieces.
  constexpr size_t kPiece = size_t(1) << 30;
  for (size_t done = 0; done < count; done += kPiece) {
    int n = static_cast<int>(std::min(kPiece, count - done));
    if (int code = MPI_Allreduce(MPI_IN_PLACE, values + done, n, MPI_FLOAT,
                                 MPI_SUM, MPI_COMM_WORLD);
        code != MPI_SUCCESS)
      return mpiError("MPI_Allreduce", code);
  }
#endif
  return Error::success();
}

Error Communicator::sumInPlace(double *values, size_t count) {
  if (world_ == 1 || count == 0)
    return Error::success();
#ifdef KILN_HAVE_MPI
  constexpr size_t kPiece = size_t(1) << 30;
  for (size_t done = 0; done < count; done += kPiece) {
    int n = static_cast<int>(std::min(kPiece, count - done));
    if (int code = MPI_Allreduce(MPI_IN_PLACE, values + done, n, MPI_DOUBLE,
                                 MPI_SUM, MPI_COMM_WORLD);
        code != MPI_SUCCESS)
      return mpiError("MPI_Allreduce", code);
  }
#endif
  return Error::success();
}

Error Communicator::barrier() {
  if (world_ == 1)
    return Error::success();
#ifdef KILN_HAVE_MPI
  if (int code = MPI_Barrier(MPI_COMM_WORLD); code != MPI_SUCCESS)
    return mpiError("MPI_Barrier", code);
#endif
  return Error::success();
}

void Communicator::abortAll(int code) {
  if (world_ == 1)
    return;
#ifdef KILN_HAVE_MPI
  MPI_Abort(MPI_COMM_WORLD, code);
#endif
}

const char *Communicator::describeTransport() {
#ifdef KILN_HAVE_MPI
  static char version[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  MPI_Get_library_version(version, &length);
  // The first line ("Open MPI v4.1.4, package: ...").
  for (int i = 0; i < length; ++i)
    if (version[i] == ',' || version[i] == '\n') {
      version[i] = '\0';
      break;
    }
  return version;
#else
  return "no MPI (built without it)";
#endif
}

# -*- Python -*-
# lit configuration of the amp-mlir regression tests.

import os

import lit.formats
import lit.util
from lit.llvm import llvm_config

config.name = "AMP"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "python", "lit.cfg.py", "lit.site.cfg.py",
                   "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.amp_obj_root, "test")
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.amp_tools_dir, append_path=True)
llvm_config.with_system_environment(
    ["HOME", "TMPDIR", "PYTHONPATH", "AMPRT_CPU_REFERENCE", "AMPRT_NUM_THREADS"]
)

# use_default_substitutions() defined %python as lit's own interpreter; the
# tests need the one with onnx and numpy.
config.substitutions = [s for s in config.substitutions if s[0] != "%python"]
config.substitutions.insert(0, ("%python", config.python_executable))
config.substitutions.append(("%amp_bin", config.amp_tools_dir))
config.substitutions.append(("%testdata", config.amp_testdata_dir))
config.substitutions.append(
    ("%inputs", os.path.join(config.amp_src_root, "test", "Inputs")))
config.substitutions.append(
    ("%pyutils", os.path.join(config.amp_src_root, "test", "python")))
llvm_config.add_tool_substitutions(["amp-opt", "amp-translate"],
                                   [config.amp_tools_dir])

# ONNX Runtime's training build, in its own virtualenv (utils/setup.sh).
if os.access(config.ort_training_python, os.X_OK):
    config.available_features.add("ort-training")
config.substitutions.append(("%ort_training_python", config.ort_training_python))

if os.path.isdir(config.amp_testdata_dir):
    config.available_features.add("testdata")

# The numerics tests run models in onnxruntime (utils/requirements-test.txt).
import subprocess
if subprocess.run([config.python_executable, "-c", "import onnxruntime"],
                  stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("onnxruntime")
# The accuracy tests train on scikit-learn's bundled digits data set.
if subprocess.run([config.python_executable, "-c", "import sklearn"],
                  stdout=subprocess.DEVNULL,
                  stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("sklearn")

# An ASan/UBSan build (utils/sanitize.sh): its libraries cannot go into an
# uninstrumented mlir-opt or a consumer built without the sanitizers.
if lit.util.pythonize_bool(config.amp_sanitizers):
    config.available_features.add("sanitizers")

# Debian's mlir-opt-22 with our plugin (test/Plugin); UNSUPPORTED without it.
import shutil
mlir_opt = shutil.which("mlir-opt", path=config.llvm_tools_dir) or \
    shutil.which("mlir-opt-22")
if mlir_opt:
    config.available_features.add("mlir-opt")
    config.substitutions.append(("%mlir_opt", mlir_opt))
config.substitutions.append(("%amp_obj_root", config.amp_obj_root))
config.substitutions.append(("%amp_src", config.amp_src_root))

# The format check (utils/check-format.sh): clang-format-22 and ruff, which
# utils/setup.sh installs; UNSUPPORTED without them.
if shutil.which("clang-format-22") and subprocess.run(
        [config.python_executable, "-m", "ruff", "--version"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0:
    config.available_features.add("format-tools")
# test/Embedding builds examples/embed: through ccache when there is one.
config.substitutions.append(
    ("%cmake_launcher", "CMAKE_CXX_COMPILER_LAUNCHER=ccache"
     if shutil.which("ccache") else ""))
config.substitutions.append(
    ("%amp_plugin", os.path.join(config.amp_obj_root, "lib",
                                 "AmpMLIRPlugin" + config.llvm_shlib_ext)))
# The runtime library (lib/Runtime) and the kernel list the harness reads.
config.substitutions.append(
    ("%amprt_lib", os.path.join(config.amp_obj_root, "lib",
                                "libAmpRuntime" + config.llvm_shlib_ext)))
config.substitutions.append(
    ("%amprt_ops_def", os.path.join(config.amp_src_root, "include", "amp",
                                    "Runtime", "Ops.def")))

# Questions to the runtime library itself, each in a child process (so a
# broken driver or MPI cannot take lit down): true when `code`, run with the
# library loaded as L, exits 0.
_amprt = os.path.join(config.amp_obj_root, "lib",
                      "libAmpRuntime" + config.llvm_shlib_ext)


def _runtime_says(code):
    return os.path.exists(_amprt) and subprocess.run(
        [config.python_executable, "-c",
         "import ctypes as C, sys; L = C.CDLL(sys.argv[1]); " + code, _amprt],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        timeout=120).returncode == 0


# cuda-device: the runtime library has the CUDA backend and a device answers
# (test/Runtime/cuda-vs-cpu.test).
if _runtime_says("c = C.c_void_p(); "
                 "sys.exit(L.amprt_context_create(b'cuda', C.byref(c)))"):
    config.available_features.add("cuda-device")

# onednn: the runtime library's CPU fast path has oneDNN (libdnnl-dev at
# build time; test/Runtime/cpu-paths.test).
# The fast path's description, whatever AMPRT_CPU_REFERENCE says.
if _runtime_says("L.amprt_cpu_describe.restype = C.c_char_p; "
                 "L.amprt_cpu_set_path(0); d = L.amprt_cpu_describe(); "
                 "sys.exit(0 if b'oneDNN' in d and b'no oneDNN' not in d "
                 "else 1)"):
    config.available_features.add("onednn")

# mpi: Open MPI's mpirun is on PATH and the runtime library was built with
# MPI (amprt_comm_available("mpi")): the multi-rank collective tests
# (test/Runtime/mpi-*.test) run their ranks under %mpirun; UNSUPPORTED
# otherwise. --oversubscribe starts 4 ranks on fewer cores;
# --allow-run-as-root lets CI containers (root) run them; no single-copy
# (CMA) transfers between ranks, which containers without ptrace refuse.
_mpirun = shutil.which("mpirun")
if _mpirun and _runtime_says(
        "sys.exit(0 if L.amprt_comm_available(b'mpi') == 1 else 1)"):
    config.available_features.add("mpi")
config.substitutions.append(
    ("%mpirun", "%s --oversubscribe --allow-run-as-root "
     "--mca btl_vader_single_copy_mechanism none" % (_mpirun or "mpirun")))

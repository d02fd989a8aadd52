import os
import shutil

import lit.formats

config.name = "tkc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".tk", ".tkir", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tkc_obj_root, "test")

tools_bin = os.path.join(config.tkc_obj_root, "tools")
config.environment["PATH"] = os.pathsep.join(
    [tools_bin, os.path.join(config.tkc_obj_root, "test"), config.llvm_tools_dir, os.path.join(config.tkc_src_root, "tools"), config.environment.get("PATH", os.environ.get("PATH", ""))])
# Diagnostics are plain text in tests, whatever the terminal.
config.environment["NO_COLOR"] = "1"

config.substitutions.append(("%tkc_src", config.tkc_src_root))
config.substitutions.append(("%tkc_obj", config.tkc_obj_root))
config.substitutions.append(("%cmake_generator", config.cmake_generator))
config.substitutions.append(("%cmake", config.cmake))
config.substitutions.append(("%runtime", os.path.join(config.tkc_src_root, "runtime")))
config.substitutions.append(("%examples", os.path.join(config.tkc_src_root, "examples")))

if os.path.exists(config.nvcc) and not os.environ.get("TKC_SKIP_NVCC"):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", config.nvcc))
if os.path.exists(os.path.join(config.tkc_obj_root, "test", "tkc-unittests")):
    config.available_features.add("unittests")

# tkc-emu (tools/emu) builds sm_80 output with the host's C++ compiler and
# runs it on the CPU against tkc-interp.
if shutil.which(os.environ.get("CXX", "g++")):
    config.available_features.add("emu")
    config.substitutions.append(("%emu_check", "python3 %s --build %s" % (
        os.path.join(config.tkc_src_root, "tools", "emu", "check.py"), config.tkc_obj_root)))

# A Python that can build and install the tkc package offline (pip, and
# setuptools with wheel, since it installs without build isolation).
import subprocess
for python in (shutil.which("python3"), "/usr/bin/python3"):
    if python and subprocess.run([python, "-c", "import pip, setuptools, wheel"], capture_output=True).returncode == 0:
        config.available_features.add("python-pip")
        config.substitutions.append(("%python_pip", python))
        break

# A Python with PyTorch (1.13 or later), for the CPU test of
# examples/nanogpt; Debian's python3-torch is in /usr/bin/python3's path only.
for python in (shutil.which("python3"), "/usr/bin/python3"):
    if python and subprocess.run([python, "-c", "import torch"], capture_output=True).returncode == 0:
        config.available_features.add("torch")
        config.substitutions.append(("%python_torch", python))
        break

# The tree-sitter grammar's check builds tree-sitter 0.13's parser generator
# and runtime from their npm packages, which tools/setup.sh fetches into
# build/npm (TKC_TREE_SITTER_NPM names another folder holding them), and
# evaluates the grammar with node.
import glob
tree_sitter_npm = os.environ.get("TKC_TREE_SITTER_NPM") or os.path.join(config.tkc_obj_root, "npm")
if shutil.which("node") and glob.glob(os.path.join(tree_sitter_npm, "tree-sitter-cli-[0-9]*.tgz")) and \
        glob.glob(os.path.join(tree_sitter_npm, "tree-sitter-[0-9]*.tgz")):
    config.available_features.add("tree-sitter")
    config.substitutions.append(("%tree_sitter_npm", tree_sitter_npm))
    config.substitutions.append(("%tree_sitter_cache", os.path.join(config.tkc_obj_root, "npm", "cache")))

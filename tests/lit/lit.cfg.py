# lit configuration of Kiln's FileCheck and diagnostic tests.
#
# Each test is a .kiln or .tir file with `// RUN:` lines. Substitutions:
#   %dslc      the compiler driver      %dslc-opt  the pass runner
#   FileCheck, not: from LLVM's tools
import os
import lit.formats

config.name = "Kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kiln", ".tir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_tools_dir, "..", "tests", "lit")
config.excludes = ["inputs", "lib"]

config.substitutions.append(("%dslc-opt", os.path.join(config.kiln_tools_dir, "dslc-opt")))
config.substitutions.append(("%dslc", os.path.join(config.kiln_tools_dir, "dslc")))
config.substitutions.append(("%kiln_src", config.kiln_source_root))
config.environment["PATH"] = os.pathsep.join([config.llvm_tools_dir, config.environment.get("PATH", "")])

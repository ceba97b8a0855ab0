# -*- Python -*-
# The GoogleTest binaries of test/unit run under lit, one test per case.
import os
import lit.formats

config.name = "Kiln-Unit"
config.test_format = lit.formats.GoogleTest(".", "Tests")
config.test_source_root = config.kiln_unit_obj_root
config.test_exec_root = config.kiln_unit_obj_root
config.environment["KILN_SRC_ROOT"] = config.kiln_src_root

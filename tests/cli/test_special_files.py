#!/usr/bin/python3
#===- test_special_files.py - Inputs and outputs that are not plain files ------===#
#
# What the tools do with a path that names something other than a regular file, or a
# file they may not touch: a FIFO (which would block a reader forever), a folder or a
# device as an import, a FIFO as a bundle or as a .npy argument, an unreadable source,
# a read-only output and another user's output in a sticky folder. Each must end within
# the time limit with a coded error, and leave every file as it was.
#
# The permission cases run the tools as the user nobody, so they need root (as CI has);
# elsewhere they are skipped with the reason.
#
# Usage: test_special_files.py --dslc build/tools/dslc [--kiln-run PATH] [unittest options]
#
#===---------------------------------------------------------------------------===#
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # keep the source folder clean
import clitest  # noqa: E402

NOBODY = 65534

ADD = """\
kernel add(x: *f32, n: i32) {
    let offs = arange(0, 4);
    store(x + offs, load(x + offs, mask = offs < n) + 1.0, mask = offs < n);
}
"""

# Two outputs, written back together or not at all.
TWO = """\
kernel two(a: *f32, b: *f32) {
    let offs = arange(0, 4);
    store(a + offs, load(a + offs) + 1.0);
    store(b + offs, load(b + offs) * 2.0);
}
"""


class SpecialFiles(clitest.CliTestCase):

    def setUp(self):
        super().setUp()
        self.write("add.kiln", ADD)
        self.npy("x.npy", np.arange(4, dtype=np.float32))

    def fifo(self, name):
        os.mkfifo(self.path(name))
        return name

    def refused(self, tool, code, *args, message=None):
        """`tool` with JSON diagnostics: a coded error within the time limit, nothing changed."""
        before = clitest.snapshot(self.tmp)
        r = clitest.run_tool(tool, list(args) + ["--diagnostics=json"], self.tmp)
        self.assertUserError(r, code, message)
        self.assertEqual(clitest.snapshot(self.tmp), before, "files changed on an error")
        return r

    def test_fifo_as_source_tir_or_bundle(self):
        self.fifo("fifo.kiln")
        self.fifo("fifo.tir")
        self.fifo("fifo.kbin")
        fifo = "not a regular file \\(a FIFO\\)"
        for tool, args in (("dslc", ["fifo.kiln"]), ("dslc", ["fifo.kiln", "--emit=ast"]), ("dslc", ["fifo.tir"]),
                           ("dslc", ["run", "fifo.kiln", "--grid", "1", "--device", "interp"])):
            with self.subTest(tool=tool, args=args):
                self.refused(tool, "E0001", *args, message=fifo)
        r = self.dslc_opt("fifo.tir")  # dslc-opt reports in text only
        self.assertExit(r, 1)
        self.assertLess(r.seconds, clitest.TIME_LIMIT_S, r.describe())
        self.assertIn("error[E0001]", r.stderr)
        self.assertIn("not a regular file (a FIFO)", r.stderr)
        for args in (["--describe", "fifo.kbin"], ["fifo.kbin", "--grid", "1"]):
            with self.subTest(args=args):
                self.refused("kiln-run", "E0001", *args, message=fifo)

    def test_devices_are_refused_before_reading(self):
        for device in ("/dev/zero", "/dev/null"):
            with self.subTest(device=device):
                self.refused("dslc", "E0001", device, message="not a regular file \\(a character device\\)")

    def test_import_of_a_fifo_a_folder_or_a_device(self):
        self.fifo("fifo.kiln")
        os.mkdir(self.path("folder.kiln"))
        cases = (("fifo.kiln", "not a regular file \\(a FIFO\\)"), ("folder.kiln", "Is a directory"),
                 ("/dev/zero", "not a regular file \\(a character device\\)"))
        for target, why in cases:
            with self.subTest(target=target):
                self.write("main.kiln", 'import "%s";\n' % target + ADD)
                errors = self.json_diags(self.refused("dslc", "E0001", "main.kiln", message=why))
                self.assertEqual((errors[0]["file"], errors[0]["line"], errors[0]["col"]), ("main.kiln", 1, 8))

    def test_fifo_as_an_npy_argument(self):
        self.fifo("in.npy")
        self.refused("dslc", "E0601", "run", "add.kiln", "--grid", "1", "--device", "interp",
                     "--arg", "x=in.npy", "--arg", "n=4", message="not a regular file \\(a FIFO\\)")
        r = self.dslc("add.kiln", "--emit=bundle", "-o", "add.kbin")
        self.assertOk(r)
        self.refused("kiln-run", "E0601", "add.kbin", "--grid", "1", "--arg", "x=in.npy", "--arg", "n=4",
                     message="not a regular file \\(a FIFO\\)")

    # ---- permissions, as an unprivileged user -----------------------------------

    def as_nobody(self):
        """Prepares the folder for runs as nobody; skips when that is impossible here."""
        if os.geteuid() != 0:
            self.skipTest("needs root, to run the tools as another user")
        probe = clitest.run_tool("dslc", ["--version"], "/", user=NOBODY)
        if probe.rc != 0:
            self.skipTest("the user nobody cannot run %s here: %s" % (clitest.TOOLS["dslc"], probe.stderr[:200]))
        os.chmod(self.tmp, 0o755)

    def run_as_nobody(self, code, *args, message=None):
        before = clitest.snapshot(self.tmp)
        r = clitest.run_tool("dslc", list(args) + ["--diagnostics=json"], self.tmp, user=NOBODY)
        self.assertUserError(r, code, message)
        after = clitest.snapshot(self.tmp)
        self.assertEqual(sorted(after), sorted(before), "files were created or removed")
        for name in before:
            self.assertEqual(after[name], before[name], "%s changed" % name)

    def test_unreadable_source(self):
        self.as_nobody()
        os.chmod(self.path("add.kiln"), 0o600)
        self.run_as_nobody("E0001", "add.kiln", message="Permission denied")

    def test_read_only_output_changes_nothing(self):
        self.as_nobody()
        self.write("two.kiln", TWO)
        self.npy("a.npy", np.ones(4, np.float32))
        self.npy("b.npy", np.ones(4, np.float32))
        for name in ("", "two.kiln", "a.npy", "b.npy"):
            os.chown(self.path(name), NOBODY, NOBODY)
        os.chmod(self.path("b.npy"), 0o444)
        self.run_as_nobody("E0008", "run", "two.kiln", "--grid", "1", "--device", "interp",
                           "--arg", "a=a.npy", "--arg", "b=b.npy", message="b.npy.*not writable")

    def test_another_users_output_in_a_sticky_folder_changes_nothing(self):
        # a.npy is nobody's own; b.npy is root's and writable by all, but the sticky
        # folder forbids nobody to replace it. The run fails before a.npy is replaced.
        self.as_nobody()
        os.chmod(self.tmp, 0o1777)
        self.write("two.kiln", TWO)
        self.npy("a.npy", np.ones(4, np.float32))
        self.npy("b.npy", np.ones(4, np.float32))
        os.chown(self.path("a.npy"), NOBODY, NOBODY)
        os.chmod(self.path("b.npy"), 0o666)
        self.run_as_nobody("E0008", "run", "two.kiln", "--grid", "1", "--device", "interp",
                           "--arg", "a=a.npy", "--arg", "b=b.npy", message="b.npy.*sticky folder")
        np.testing.assert_array_equal(self.load("a.npy"), np.ones(4, np.float32))


if __name__ == "__main__":
    clitest.main()

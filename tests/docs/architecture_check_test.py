#!/usr/bin/python3
"""The architecture check can fail: on a copy of the tree with a folder added to src/ without a
row, a link added against the arrows, a command using a daemon service, and a write_op alternative added, it names each."""
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import architecture_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


class ArchitectureCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        (self.tmp / "docs").mkdir()
        shutil.copy(ROOT / "docs" / "architecture.md", self.tmp / "docs")
        for cm in (ROOT / "src").glob("*/CMakeLists.txt"):
            (self.tmp / "src" / cm.parent.name).mkdir(parents=True)
            shutil.copy(cm, self.tmp / "src" / cm.parent.name)
        shutil.copy(ROOT / "src" / "mapping" / "write_op.h", self.tmp / "src" / "mapping")
        shutil.copytree(ROOT / "src" / "ops" / "commands", self.tmp / "src" / "ops" / "commands")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_the_tree_as_it_is_passes(self):
        self.assertEqual(architecture_check.check(self.tmp), [])

    def test_a_folder_without_a_row_fails(self):
        (self.tmp / "src" / "cache").mkdir()
        (self.tmp / "src" / "cache" / "CMakeLists.txt").write_text(
            "denormd_library(cache SOURCES cache.cc DEPS denormd::common)\n")
        self.assertIn("src/cache has no row in the Layers table of docs/architecture.md",
                      architecture_check.check(self.tmp))

    def test_a_link_against_the_arrows_fails(self):
        cm = self.tmp / "src" / "mapping" / "CMakeLists.txt"
        cm.write_text(cm.read_text().replace("DEPS denormd::query", "DEPS denormd::query denormd::mongo"))
        problems = architecture_check.check(self.tmp)
        self.assertIn("`mapping` links denormd::mongo, which is not above it in the Layers table", problems)

    def test_a_command_that_uses_a_daemon_service_fails(self):
        cc = self.tmp / "src" / "ops" / "commands" / "backfiller.cc"
        cc.write_text('#include "ops/services/streamed_sets.h"\n' + cc.read_text())
        self.assertIn("src/ops/commands/backfiller.cc includes ops/services/streamed_sets.h: "
                      "a command never uses a daemon service", architecture_check.check(self.tmp))

    def test_a_new_write_op_alternative_fails(self):
        h = self.tmp / "src" / "mapping" / "write_op.h"
        h.write_text(h.read_text().replace("dead_letter_write> what;", "dead_letter_write, noop_write> what;"))
        problems = architecture_check.check(self.tmp)
        self.assertTrue(any("write_op alternatives" in p for p in problems), problems)


if __name__ == "__main__":
    unittest.main()

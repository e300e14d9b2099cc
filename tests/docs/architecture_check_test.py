#!/usr/bin/python3
"""The architecture check can fail: on a copy of the tree with a folder added to src/ without a
row, a link added against the arrows, a command using a daemon service, a write_op alternative
added, and each break of the kind contract, it names each."""
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
        shutil.copytree(ROOT / "src", self.tmp / "src")

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

    def test_a_downcast_to_a_kind_outside_its_files_fails(self):
        cc = self.tmp / "src" / "sink" / "writer.cc"
        cc.write_text(cc.read_text() + "\n// m.as<mapping::copy_kind>()\n")
        problems = architecture_check.check(self.tmp)
        self.assertIn("src/sink/writer.cc downcasts to copy_kind (as<copy_kind>): reach a kind "
                      "through its contract or one arm per kind", problems)
        self.assertIn("src/sink/writer.cc names copy_kind: the coalescer and the writer hold no "
                      "per-kind code", problems)

    def test_a_kind_without_its_static_assert_fails(self):
        cc = self.tmp / "src" / "mapping" / "recent_kind.cc"
        cc.write_text(cc.read_text().replace("static_assert(mapping_kind<recent_kind>);", ""))
        self.assertIn("src/mapping/recent_kind.cc does not check static_assert(mapping_kind<recent_kind>)",
                      architecture_check.check(self.tmp))

    def test_an_assert_false_arm_and_a_requires_probe_fail(self):
        cc = self.tmp / "src" / "mapping" / "planner.cc"
        cc.write_text(cc.read_text() + "\n// assert(false && \"x\");\n// if constexpr (requires { k.x(); })\n")
        problems = architecture_check.check(self.tmp)
        self.assertIn("src/mapping/planner.cc has an assert(false ...) arm", problems)
        self.assertTrue(any("probes a member" in p for p in problems), problems)

    def test_a_member_the_doc_names_but_the_concept_lacks_fails(self):
        h = self.tmp / "src" / "mapping" / "kind_contract.h"
        h.write_text(h.read_text().replace("ck.explain(cm, std::as_const(op), plan_line);", ""))
        problems = architecture_check.check(self.tmp)
        self.assertIn("docs/architecture.md names kind member `explain`; the concept mapping_kind "
                      "in src/mapping/kind_contract.h does not", problems)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/python3
"""The function-length check can fail: on a copy of src/ with a function grown past 80 lines it
names the function, its file and line and its length; types, data and short functions pass."""
import shutil
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import function_length_check  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def function(signature, body_lines):
    return signature + " {\n" + "".join(f"  x += {k};\n" for k in range(body_lines)) + "}\n"


class FunctionLengthCheckTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        shutil.copytree(ROOT / "src", self.tmp / "src")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def test_the_tree_as_it_is_passes(self):
        self.assertEqual(function_length_check.check(self.tmp), [])

    def test_a_function_over_80_lines_fails_with_its_place_name_and_length(self):
        (self.tmp / "src" / "common" / "extra.cc").write_text(
            "namespace denormd {\n\n" + function("int too_long(int x,\n             int y)", 78) +
            "\n}  // namespace denormd\n")
        self.assertIn("src/common/extra.cc:3 too_long 81", function_length_check.check(self.tmp))

    def test_eighty_lines_pass_and_types_data_and_templates_are_read_right(self):
        text = (function("int x::fits(int x)", 78) +
                "template <class T>\n" + function("T x::templated(T x)", 60) +
                "struct big {\n" + "  int a;\n" * 90 + "};\n" +
                "const int table[] = {\n" + "    1,\n" * 90 + "};\n" +
                "const char* text = R\"(\n" + "}\n" * 90 + ")\";\n" +
                "template <class T>\nbool x::op::operator()(const T& a) const {\n" +
                "  return a;\n" * 85 + "}\n")
        self.assertEqual(function_length_check.long_functions(text),
                         [(len(text.splitlines()) - 88 + 1, "x::op::operator()", 88)])


if __name__ == "__main__":
    unittest.main()

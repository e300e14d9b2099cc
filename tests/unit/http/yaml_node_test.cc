#include "http/yaml_node.h"

#include <gtest/gtest.h>

#include <string>

namespace denormd::http {
namespace {

TEST(yaml_node, reads_mappings_sequences_and_scalars_with_their_lines) {
  auto doc = parse_yaml(
      "# a comment\n"
      "a: one\n"
      "b:\n"
      "  c: \"two\"\n"
      "  d: [x, 'y']\n");
  ASSERT_TRUE(doc) << doc.error().message;
  ASSERT_EQ(doc->type, yaml_node::kind::mapping);
  ASSERT_EQ(doc->entries.size(), 2u);
  EXPECT_EQ(doc->entries[0].first, "a");
  const yaml_node* a = doc->find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->type, yaml_node::kind::scalar);
  EXPECT_EQ(a->text, "one");
  EXPECT_TRUE(a->plain);
  EXPECT_EQ(a->line, 2);
  const yaml_node* c = doc->find("b")->find("c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->text, "two");
  EXPECT_FALSE(c->plain);
  EXPECT_EQ(c->line, 4);
  const yaml_node* d = doc->find("b")->find("d");
  ASSERT_EQ(d->type, yaml_node::kind::sequence);
  ASSERT_EQ(d->items.size(), 2u);
  EXPECT_EQ(d->items[1].text, "y");
  EXPECT_EQ(doc->find("nothing"), nullptr);
}

TEST(yaml_node, null_is_an_empty_value_or_a_null_word_unquoted) {
  auto doc = parse_yaml("a:\nb: ~\nc: null\nd: 'null'\ne: \"\"\n");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->find("a")->type, yaml_node::kind::null);
  EXPECT_EQ(doc->find("b")->type, yaml_node::kind::null);
  EXPECT_EQ(doc->find("c")->type, yaml_node::kind::null);
  EXPECT_EQ(doc->find("d")->type, yaml_node::kind::scalar);
  EXPECT_EQ(doc->find("e")->type, yaml_node::kind::scalar);
}

TEST(yaml_node, an_empty_text_or_only_comments_is_a_null_document) {
  for (const char* text : {"", "# nothing here\n", "\n\n"}) {
    auto doc = parse_yaml(text);
    ASSERT_TRUE(doc) << text << ": " << doc.error().message;
    EXPECT_EQ(doc->type, yaml_node::kind::null) << text;
  }
}

TEST(yaml_node, a_syntax_error_names_its_line) {
  auto doc = parse_yaml("a: 1\nb: [\n");
  ASSERT_FALSE(doc);
  EXPECT_NE(doc.error().message.find("line 3"), std::string::npos) << doc.error().message;
  auto tab = parse_yaml("a:\n\tb: 1\n");
  ASSERT_FALSE(tab);
  EXPECT_NE(tab.error().message.find("line 2"), std::string::npos) << tab.error().message;
}

TEST(yaml_node, a_key_twice_is_refused_with_its_name) {
  auto doc = parse_yaml("a: 1\nb:\n  c: 1\n  c: 2\n");
  ASSERT_FALSE(doc);
  EXPECT_EQ(doc.error().message, "line 4: key \"c\" appears twice");
}

TEST(yaml_node, a_key_that_is_not_a_scalar_is_refused) {
  auto doc = parse_yaml("? [a, b]\n: 1\n");
  ASSERT_FALSE(doc);
  EXPECT_NE(doc.error().message.find("a key must be a plain string"), std::string::npos);
}

TEST(yaml_node, a_second_document_is_refused) {
  auto doc = parse_yaml("a: 1\n---\nb: 2\n");
  ASSERT_FALSE(doc);
  EXPECT_NE(doc.error().message.find("a second document"), std::string::npos)
      << doc.error().message;
  EXPECT_TRUE(parse_yaml("---\na: 1\n...\n"));  // one document with its markers is fine
}

TEST(yaml_node, aliases_expand_and_a_billion_laughs_is_refused) {
  auto doc = parse_yaml("base: &b {x: 1}\ncopy: *b\n");
  ASSERT_TRUE(doc) << doc.error().message;
  EXPECT_EQ(doc->find("copy")->find("x")->text, "1");

  // Ten times ten times ... (eight levels): 10^8 nodes once expanded.
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  const std::string names = "abcdefgh";
  for (std::size_t level = 1; level < names.size(); ++level) {
    bomb.append(1, names[level]).append(": &").append(1, names[level]).append(" [");
    for (int i = 0; i < 10; ++i)
      bomb.append(i == 0 ? "*" : ", *").append(1, names[level - 1]);
    bomb.append("]\n");
  }
  auto exploded = parse_yaml(bomb);
  ASSERT_FALSE(exploded);
  EXPECT_NE(exploded.error().message.find("too many nodes"), std::string::npos)
      << exploded.error().message;
}

TEST(yaml_node, nesting_is_bounded) {
  std::string deep;
  for (int i = 0; i < 100; ++i)
    deep += "[";
  for (int i = 0; i < 100; ++i)
    deep += "]";
  auto doc = parse_yaml(deep);
  ASSERT_FALSE(doc);
  EXPECT_NE(doc.error().message.find("nested too deep"), std::string::npos) << doc.error().message;
}

}  // namespace
}  // namespace denormd::http

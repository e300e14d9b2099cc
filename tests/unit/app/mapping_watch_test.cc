// --watch-mappings: a change to the mapping files asks for one reload once the files stay put
// for one more look; an unchanged folder asks for none; a file put back as it was, after a
// reload of its removal, is a change again.
#include "app/mapping_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace denormd::app {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class mapping_watch_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("denormd-watch-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("a.json", "{}");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
  }
  // Waits until `calls` reaches `n` (bounded), then a little more to see it stays there.
  bool settles_at(const std::atomic<int>& calls, int n) {
    for (int i = 0; i < 400 && calls.load() < n; ++i)
      std::this_thread::sleep_for(10ms);
    std::this_thread::sleep_for(150ms);
    return calls.load() == n;
  }

  fs::path dir_;
};

TEST_F(mapping_watch_test, a_change_asks_for_one_reload_and_nothing_else_asks) {
  std::atomic<int> calls{0};
  mapping_watch w(
      dir_, [&] { ++calls; }, 20ms);
  EXPECT_TRUE(settles_at(calls, 0));  // unchanged: nothing
  write("a.json", R"({"x":1})");
  EXPECT_TRUE(settles_at(calls, 1));
  write("b.json", "{}");  // a new file
  EXPECT_TRUE(settles_at(calls, 2));
  write("notes.txt", "not a mapping");  // the loader does not read it
  EXPECT_TRUE(settles_at(calls, 2));
  fs::rename(dir_ / "b.json", dir_ / "b.json.aside");  // removed
  EXPECT_TRUE(settles_at(calls, 3));
  fs::rename(dir_ / "b.json.aside", dir_ / "b.json");  // put back as it was
  EXPECT_TRUE(settles_at(calls, 4));
}

TEST(mapping_files_state_test, names_and_contents_decide_and_a_single_file_works_too) {
  const fs::path dir = fs::temp_directory_path() / ("denormd-state-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  std::ofstream(dir / "a.json") << "{}";
  const std::string first = mapping_files_state(dir);
  EXPECT_EQ(mapping_files_state(dir), first);
  std::ofstream(dir / "a.json") << "{ }";
  EXPECT_NE(mapping_files_state(dir), first);
  EXPECT_EQ(mapping_files_state(dir / "a.json"), mapping_files_state(dir));
  EXPECT_NE(mapping_files_state(dir / "missing.json"), mapping_files_state(dir));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace denormd::app

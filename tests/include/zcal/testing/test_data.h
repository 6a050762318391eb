// Where the source tree's test data is, for tests that read files of it.
#pragma once

#include <filesystem>

namespace zcal::testing {

/// The directory tests/data of the source tree, from the test's environment
/// (ZCAL_TEST_DATA, which meson.build sets for every test that needs it).
/// Not a path compiled in: that would differ from clone to clone, and every
/// object of the executable (its precompiled header takes the same
/// defines) would miss the compiler cache in another clone. Unset, the
/// calling test fails, saying so, and the path returned is empty.
std::filesystem::path TestData();

}  // namespace zcal::testing

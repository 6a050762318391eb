#include "zcal/testing/test_data.h"

#include <cstdlib>

#include <gtest/gtest.h>

namespace zcal::testing {

std::filesystem::path TestData() {
  const char* dir = std::getenv("ZCAL_TEST_DATA");
  if (dir == nullptr || *dir == '\0') {
    ADD_FAILURE() << "ZCAL_TEST_DATA is not set: run the tests with meson test, "
                     "or set it to the source tree's tests/data";
    return {};
  }
  return dir;
}

}  // namespace zcal::testing

// The precompiled header of the test executables (meson's cpp_pch, forced
// into every C++ test source of a target with -include). It holds only
// headers of the standard library and of Debian's packages, never one of
// zcal's own: an edit of a zcal header must rebuild the tests that include
// it, not every test of the directory. Parsing these headers was the
// larger part of compiling a test file; docs/architecture.md ("Build")
// says how the test targets use it.
//
// Being included first everywhere, it can hide a missing #include in a
// test file; `meson setup -Db_pch=false` builds the tests without it.
// No include guard: the compiler reads this file once, as a precompiled
// header (an include guard or #pragma once in it is an error there).

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <tl/expected.hpp>

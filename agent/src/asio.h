// Boost.Asio, included the one way that compiles on Debian 12: Boost 1.74
// with GCC 12 in C++20 uses std::exchange without including <utility>.
#pragma once

#include <utility>

#include <boost/asio.hpp>

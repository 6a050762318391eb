// Boost.Asio, included the one way that compiles on Debian 12 in every
// build of scripts/test.
#pragma once

// Boost 1.74 with GCC 12 in C++20 uses std::exchange without <utility>.
#include <utility>

#if defined(__SANITIZE_THREAD__)
// GCC 12 refuses std::atomic_thread_fence under ThreadSanitizer (-Wtsan), and
// Asio's std::atomic fenced block uses it. Without std::atomic, Asio takes
// its x86 fenced block (a compiler barrier) instead; the scheduler's queue
// is guarded by mutexes either way.
#define BOOST_ASIO_DISABLE_STD_ATOMIC 1
#endif

#include <boost/asio.hpp>

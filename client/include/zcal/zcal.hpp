// zcal.hpp - a thin C++ wrapper over the C reader in zcal.h.
//
// Segment owns a zcal_handle (RAII, movable, not copyable). Failing calls
// return an Outcome carrying the -errno code of the C function and the
// thread's zcal_error_detail() sentence. Same thread-safety rule as the C
// API: one Segment per thread, or serialize calls.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "zcal/zcal.h"

namespace zcal::client {

/// Send methods, with the codes of the ABI.
enum class Method : std::uint8_t {
  kCopy = ZCAL_METHOD_COPY,
  kMsgZerocopy = ZCAL_METHOD_MSG_ZEROCOPY,
  kUringSend = ZCAL_METHOD_URING_SEND,
  kUringSendZc = ZCAL_METHOD_URING_SEND_ZC,
  kUringSendZcFixed = ZCAL_METHOD_URING_SEND_ZC_FIXED,
};

/// A value, or the negative errno code (and detail) of why there is none.
template <typename T>
class Outcome {
 public:
  Outcome(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  static Outcome Failure(int error) {
    Outcome o;
    o.error_ = error;
    o.detail_ = zcal_error_detail();
    return o;
  }
  bool ok() const { return value_.has_value(); }
  explicit operator bool() const { return ok(); }
  T& operator*() { return *value_; }
  const T& operator*() const { return *value_; }
  T* operator->() { return &*value_; }
  const T* operator->() const { return &*value_; }
  /// -ENOENT, -EPROTO, -EAGAIN, ... (see zcal.h); 0 when ok().
  int error() const { return error_; }
  /// zcal_error_detail() at the time of the failure; may be empty.
  const std::string& detail() const { return detail_; }

 private:
  Outcome() = default;
  std::optional<T> value_;
  int error_ = 0;
  std::string detail_;
};

/// A mapped zcal segment.
class Segment {
 public:
  /// Opens `name` ("/zcal"); nullptr: $ZCAL_SEGMENT or "/zcal".
  static Outcome<Segment> Open(const char* name = nullptr) {
    zcal_handle* handle = nullptr;
    const int rc = zcal_open(name, &handle);
    if (rc != 0) return Outcome<Segment>::Failure(rc);
    return Segment(handle);
  }

  Segment(Segment&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  Segment& operator=(Segment&& other) noexcept {
    if (this != &other) {
      zcal_close(handle_);
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  Segment(const Segment&) = delete;
  Segment& operator=(const Segment&) = delete;
  ~Segment() { zcal_close(handle_); }

  /// One load; compare with Result::generation to keep a cached result.
  std::uint64_t Generation() const noexcept { return zcal_generation(handle_); }

  Outcome<zcal_result> Lookup(const zcal_key& key, Method method) {
    zcal_result result;
    const int rc = zcal_lookup(handle_, &key, static_cast<std::uint8_t>(method),
                               &result);
    if (rc != 0) return Outcome<zcal_result>::Failure(rc);
    return result;
  }

  /// The answer for a connection with `depth` zerocopy sends in flight,
  /// counting this one (zcal_lookup_depth): the class's entry, or the
  /// scope's stream entry with depth_fallback set.
  Outcome<zcal_result> LookupDepth(const zcal_key& key, Method method, std::uint32_t depth) {
    zcal_result result;
    const int rc = zcal_lookup_depth(handle_, &key, static_cast<std::uint8_t>(method), depth,
                                     &result);
    if (rc != 0) return Outcome<zcal_result>::Failure(rc);
    return result;
  }
  Outcome<zcal_result> LookupFd(int fd, Method method) {
    zcal_result result;
    const int rc = zcal_lookup_fd(handle_, fd,
                                  static_cast<std::uint8_t>(method), &result);
    if (rc != 0) return Outcome<zcal_result>::Failure(rc);
    return result;
  }

  /// See zcal_should_zerocopy; max_age zero means no bound.
  bool ShouldZerocopy(const zcal_key& key, Method method,
                      std::uint64_t size_bytes,
                      std::chrono::nanoseconds max_age, bool fallback) {
    return zcal_should_zerocopy(handle_, &key,
                                static_cast<std::uint8_t>(method), size_bytes,
                                static_cast<std::uint64_t>(max_age.count()),
                                fallback ? 1 : 0) != 0;
  }

  /// See zcal_should_zerocopy_depth.
  bool ShouldZerocopyDepth(const zcal_key& key, Method method, std::uint32_t depth,
                           std::uint64_t size_bytes, std::chrono::nanoseconds max_age,
                           bool fallback) {
    return zcal_should_zerocopy_depth(handle_, &key, static_cast<std::uint8_t>(method), depth,
                                      size_bytes, static_cast<std::uint64_t>(max_age.count()),
                                      fallback ? 1 : 0) != 0;
  }
  Outcome<zcal_info> Info() {
    zcal_info info;
    const int rc = zcal_read_info(handle_, &info);
    if (rc != 0) return Outcome<zcal_info>::Failure(rc);
    return info;
  }

  /// Entry `index` of the copy the last Info() described.
  std::optional<zcal_shm_entry> Entry(std::uint32_t index) const {
    zcal_shm_entry entry;
    if (zcal_read_entry(handle_, index, &entry) != 0) return std::nullopt;
    return entry;
  }

  zcal_handle* get() const noexcept { return handle_; }

 private:
  explicit Segment(zcal_handle* handle) : handle_(handle) {}
  zcal_handle* handle_ = nullptr;
};

/// Builds a key from address text and/or an interface name; nullopt when
/// the address does not parse or the name is too long.
inline std::optional<zcal_key> MakeKey(const char* address,
                                       const char* interface = nullptr) {
  zcal_key key;
  if (zcal_key_from_string(address, interface, &key) != 0) return std::nullopt;
  return key;
}

/// The depth class of a connection with `depth` sends in flight
/// (zcal_depth_class): ZCAL_DEPTH_1, _4, _16 or ZCAL_DEPTH_STREAM.
inline std::uint16_t DepthClassOf(std::uint32_t depth) { return zcal_depth_class(depth); }

/// Per-connection cache: looks up again only after a publish. Uses the
/// fallback while there is no answer.
class CachedDecision {
 public:
  CachedDecision(zcal_key key, Method method, bool fallback)
      : key_(key), method_(method), fallback_(fallback) {}

  bool ShouldZerocopy(Segment* segment, std::uint64_t size_bytes) {
    if (segment == nullptr) return fallback_;
    const std::uint64_t generation = segment->Generation();
    if (generation != generation_) {
      // A failed lookup (no entry, writer busy) is also kept until the
      // next publish, so that the hot path never repeats it per send.
      auto result = segment->Lookup(key_, method_);
      valid_ = result.ok();
      if (valid_) result_ = *result;
      generation_ = valid_ ? result_.generation : generation;
    }
    if (!valid_) return fallback_;
    return zcal_result_should_zerocopy(&result_, size_bytes, fallback_) != 0;
  }

  /// Whether the answer in use is an estimate rather than a measurement of
  /// this connection's scope (ZCAL_ENTRY_ESTIMATED: a host default taken
  /// from the discard path). False while there is no answer.
  bool estimated() const { return valid_ && result_.estimated != 0; }
  /// Whether the applications' reports contradict the answer in use
  /// (ZCAL_ENTRY_CONTRADICTED): it then answers copy at every size. False
  /// while there is no answer.
  bool contradicted() const { return valid_ && result_.contradicted != 0; }
  /// The answer in use, if any (scope, verdict, confidence, ages...).
  std::optional<zcal_result> answer() const {
    return valid_ ? std::optional<zcal_result>(result_) : std::nullopt;
  }

 private:
  zcal_key key_;
  Method method_;
  bool fallback_;
  bool valid_ = false;
  std::uint64_t generation_ = 0;
  zcal_result result_{};
};

/// The per-connection guard of zcal.h (zcal_guard_*): the threshold's
/// answer, turned off after completions the kernel reports as copied and
/// retried after ZCAL_GUARD_RETRY_SENDS sends. A value (copyable); the
/// Segment it reads must outlive it.
class Guard {
 public:
  /// For a connected socket, keyed by its peer; segment nullptr: no agent.
  static Outcome<Guard> ForSocket(Segment* segment, int fd, Method method, bool fallback,
                                  std::chrono::nanoseconds max_age = {}) {
    Guard guard;
    const int rc = zcal_guard_init(&guard.guard_, sizeof guard.guard_,
                                   segment ? segment->get() : nullptr, fd,
                                   static_cast<std::uint8_t>(method), fallback ? 1 : 0,
                                   static_cast<std::uint64_t>(max_age.count()));
    if (rc != 0) return Outcome<Guard>::Failure(rc);
    return guard;
  }
  static Outcome<Guard> ForKey(Segment* segment, const zcal_key& key, Method method,
                               bool fallback, std::chrono::nanoseconds max_age = {}) {
    Guard guard;
    const int rc = zcal_guard_init_key(&guard.guard_, sizeof guard.guard_,
                                       segment ? segment->get() : nullptr, &key,
                                       static_cast<std::uint8_t>(method), fallback ? 1 : 0,
                                       static_cast<std::uint64_t>(max_age.count()));
    if (rc != 0) return Outcome<Guard>::Failure(rc);
    return guard;
  }

  /// Per send; no system call, no allocation.
  bool ShouldZerocopy(std::uint64_t size_bytes) {
    return zcal_guard_should_zerocopy(&guard_, size_bytes) != 0;
  }
  /// Completions of this connection, `copied` of them reported as copied;
  /// false when copied > completions.
  bool Completed(std::uint64_t completions, std::uint64_t copied) {
    return zcal_guard_completed(&guard_, completions, copied) == 0;
  }
  /// ZCAL_GUARD_ON, ZCAL_GUARD_OFF or ZCAL_GUARD_PROBING.
  std::uint8_t state() const { return guard_.state; }
  /// ZCAL_DEPTH_* of the class the last answer came from.
  std::uint16_t depth_class() const { return guard_.depth_class; }
  /// Sends answered true, not yet reported complete.
  std::uint64_t in_flight() const { return guard_.in_flight; }
  /// Counters and the cached answer.
  const zcal_guard& get() const { return guard_; }

 private:
  Guard() = default;
  zcal_guard guard_{};
};

}  // namespace zcal::client

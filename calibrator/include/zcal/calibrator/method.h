// The send methods zcal compares, and which copying send each is judged
// against.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace zcal::calibrator {

/// A way of sending bytes on a TCP socket.
enum class Method : std::uint8_t {
  kCopy = 0,              ///< send(2)
  kMsgZerocopy = 1,       ///< send(MSG_ZEROCOPY) with SO_ZEROCOPY
  kUringSend = 2,         ///< io_uring IORING_OP_SEND
  kUringSendZc = 3,       ///< io_uring IORING_OP_SEND_ZC
  kUringSendZcFixed = 4,  ///< IORING_OP_SEND_ZC from registered buffers
};

inline constexpr std::array<Method, 5> kAllMethods = {
    Method::kCopy, Method::kMsgZerocopy, Method::kUringSend,
    Method::kUringSendZc, Method::kUringSendZcFixed};

/// The three zerocopy methods, in kAllMethods order.
inline constexpr std::array<Method, 3> kZerocopyMethods = {
    Method::kMsgZerocopy, Method::kUringSendZc, Method::kUringSendZcFixed};

/// The CLI/CSV/JSON name: "copy", "msg_zerocopy", "uring_send",
/// "uring_send_zc", "uring_send_zc_fixed".
std::string_view MethodName(Method method);

/// The names of `methods` joined by ", " (for messages and help texts):
/// "copy, msg_zerocopy, uring_send, uring_send_zc, uring_send_zc_fixed".
std::string MethodNames(std::span<const Method> methods = kAllMethods);

/// Inverse of MethodName; nullopt for an unknown name.
std::optional<Method> ParseMethod(std::string_view name);

/// True for the three zerocopy methods.
bool IsZerocopy(Method method);

/// The copying send of the same transport: copy for msg_zerocopy (and for
/// copy itself), uring_send for the io_uring methods.
Method NativeBaseline(Method method);

}  // namespace zcal::calibrator

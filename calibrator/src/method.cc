#include "zcal/calibrator/method.h"

#include "zcal/zcal_codes.h"

namespace zcal::calibrator {

// A method's code is its code in the segment, and its name the one libzcal
// gives that code: one table of names for the calibrator, the agent and
// every reader of the segment.
static_assert(static_cast<int>(Method::kCopy) == ZCAL_METHOD_COPY);
static_assert(static_cast<int>(Method::kMsgZerocopy) == ZCAL_METHOD_MSG_ZEROCOPY);
static_assert(static_cast<int>(Method::kUringSend) == ZCAL_METHOD_URING_SEND);
static_assert(static_cast<int>(Method::kUringSendZc) == ZCAL_METHOD_URING_SEND_ZC);
static_assert(static_cast<int>(Method::kUringSendZcFixed) == ZCAL_METHOD_URING_SEND_ZC_FIXED);

std::string_view MethodName(Method method) {
  return zcal_method_name(static_cast<std::uint8_t>(method));
}

std::string MethodNames(std::span<const Method> methods) {
  std::string names;
  for (const Method method : methods) {
    if (!names.empty()) names += ", ";
    names += MethodName(method);
  }
  return names;
}

std::optional<Method> ParseMethod(std::string_view name) {
  for (Method method : kAllMethods) {
    if (MethodName(method) == name) return method;
  }
  return std::nullopt;
}

bool IsZerocopy(Method method) {
  return method == Method::kMsgZerocopy || method == Method::kUringSendZc ||
         method == Method::kUringSendZcFixed;
}

Method NativeBaseline(Method method) {
  switch (method) {
    case Method::kUringSend:
    case Method::kUringSendZc:
    case Method::kUringSendZcFixed:
      return Method::kUringSend;
    case Method::kCopy:
    case Method::kMsgZerocopy:
      break;
  }
  return Method::kCopy;
}

}  // namespace zcal::calibrator

#include "zcal/calibrator/method.h"

namespace zcal::calibrator {

std::string_view MethodName(Method method) {
  switch (method) {
    case Method::kCopy: return "copy";
    case Method::kMsgZerocopy: return "msg_zerocopy";
    case Method::kUringSend: return "uring_send";
    case Method::kUringSendZc: return "uring_send_zc";
    case Method::kUringSendZcFixed: return "uring_send_zc_fixed";
  }
  return "unknown";
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

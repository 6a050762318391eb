/* Names of codes, and the per-thread error detail. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>

#include "handle.h"

static _Thread_local char detail[640];

void zcal_internal_set_detail(const char *format, ...) {
  va_list args;
  va_start(args, format);
  vsnprintf(detail, sizeof detail, format, args);
  va_end(args);
}

const char *zcal_error_detail(void) { return detail; }

const char *zcal_method_name(uint8_t method) {
  switch (method) {
    case ZCAL_METHOD_COPY: return "copy";
    case ZCAL_METHOD_MSG_ZEROCOPY: return "msg_zerocopy";
    case ZCAL_METHOD_URING_SEND: return "uring_send";
    case ZCAL_METHOD_URING_SEND_ZC: return "uring_send_zc";
    case ZCAL_METHOD_URING_SEND_ZC_FIXED: return "uring_send_zc_fixed";
    default: return "unknown";
  }
}

const char *zcal_verdict_name(uint8_t verdict) {
  switch (verdict) {
    case ZCAL_VERDICT_THRESHOLD: return "threshold";
    case ZCAL_VERDICT_ALWAYS: return "always";
    case ZCAL_VERDICT_NEVER: return "never";
    case ZCAL_VERDICT_INCONCLUSIVE: return "inconclusive";
    default: return "unknown";
  }
}

const char *zcal_reason_name(uint8_t reason) {
  switch (reason) {
    case ZCAL_REASON_NONE: return "";
    case ZCAL_REASON_SLOWER: return "slower";
    case ZCAL_REASON_KERNEL_COPIED: return "kernel_copied";
    case ZCAL_REASON_UNSUPPORTED: return "unsupported";
    case ZCAL_REASON_FAILED: return "failed";
    case ZCAL_REASON_NOISY: return "noisy";
    case ZCAL_REASON_NO_BASELINE: return "no_baseline";
    default: return "unknown";
  }
}

const char *zcal_scope_name(uint8_t scope) {
  switch (scope) {
    case ZCAL_SCOPE_HOST_DEFAULT: return "host_default";
    case ZCAL_SCOPE_LOOPBACK: return "loopback";
    case ZCAL_SCOPE_PEER: return "peer";
    case ZCAL_SCOPE_INTERFACE: return "interface";
    case ZCAL_SCOPE_DISCARD: return "discard";
    default: return "unknown";
  }
}
